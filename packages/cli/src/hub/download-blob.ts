import { createWriteStream } from 'node:fs';
import { rename, stat, unlink } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { FerrumError, isFerrumError } from '@ferrum/types';
import { checksumKindOf, fileChecksum } from './blob-checksum.js';

/** One blob to fetch into the cache. */
export interface BlobDownload {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /** Final path (`blobs/<etag>`); the download goes to `<path>.incomplete` first. */
  readonly path: string;
  readonly etag: string;
  readonly sizeBytes: number | null;
  /** Name shown in messages. */
  readonly label: string;
  /** Attempts after the first on a dropped connection or 5xx, each resuming where the last stopped. */
  readonly retries?: number;
  readonly retryDelayMs?: number;
  /** Called with the bytes on disk when a transfer starts and as data arrives. */
  readonly onProgress?: (doneBytes: number, resumedFromBytes: number) => void;
}

/** Bytes in `path`, or 0 when it does not exist. */
async function sizeOf(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch {
    return 0;
  }
}

/**
 * Download one blob with resume: bytes already in `<path>.incomplete` (from an interrupted run or a
 * dropped connection) are kept and the rest is asked for with `Range`. The finished file is checked
 * against its etag (sha256 or git sha1) before it is renamed into place; a mismatch deletes it.
 *
 * @returns the bytes that were already on disk when the download started (0 for a fresh one).
 * @throws FerrumError `invalid_checkpoint` on a checksum mismatch; `internal` when retries run out.
 */
export async function downloadBlob(download: BlobDownload): Promise<number> {
  const partial = `${download.path}.incomplete`;
  const resumedFrom = await sizeOf(partial);
  const retries = download.retries ?? 5;
  for (let attempt = 0; ; attempt++) {
    try {
      await transfer(download, partial, resumedFrom);
      break;
    } catch (error) {
      if (isFerrumError(error) || attempt >= retries) {
        if (isFerrumError(error)) throw error;
        throw new FerrumError(
          'internal',
          `download of ${download.label} failed: ${(error as Error).message}`,
          {
            cause: error,
          },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, (download.retryDelayMs ?? 1000) * (attempt + 1)));
    }
  }
  await verify(download, partial);
  await rename(partial, download.path);
  return resumedFrom;
}

/** One HTTP transfer into `partial`, from its current size on. Throws plain errors for retryable failures. */
async function transfer(download: BlobDownload, partial: string, resumedFrom: number): Promise<void> {
  const start = await sizeOf(partial);
  if (download.sizeBytes !== null && start === download.sizeBytes) return;
  if (download.sizeBytes !== null && start > download.sizeBytes) await unlink(partial);
  const from = download.sizeBytes !== null && start > download.sizeBytes ? 0 : start;
  const headers = from > 0 ? { ...download.headers, range: `bytes=${from}-` } : download.headers;
  const res = await fetch(download.url, { headers });
  if (res.status >= 500) throw new Error(`HTTP ${res.status}`);
  if (!res.ok || !res.body) {
    throw new FerrumError('internal', `download of ${download.label} failed: HTTP ${res.status}`);
  }
  // 206 continues the partial file; a 200 means the server ignored the range, so start over.
  const append = res.status === 206;
  let done = append ? from : 0;
  download.onProgress?.(done, resumedFrom);
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      done += chunk.length;
      download.onProgress?.(done, resumedFrom);
      callback(null, chunk);
    },
  });
  const body = Readable.fromWeb(res.body as WebReadableStream<Uint8Array>);
  await pipeline(body, counter, createWriteStream(partial, { flags: append ? 'a' : 'w' }));
  if (download.sizeBytes !== null && done !== download.sizeBytes) {
    throw new Error(`connection ended after ${done} of ${download.sizeBytes} bytes`);
  }
}

async function verify(download: BlobDownload, partial: string): Promise<void> {
  const kind = checksumKindOf(download.etag);
  if (kind === null) return;
  const actual = await fileChecksum(partial, kind);
  if (actual === download.etag) return;
  await unlink(partial);
  throw new FerrumError(
    'invalid_checkpoint',
    `checksum mismatch for ${download.label}: expected ${kind} ${download.etag}, got ${actual}; the download was deleted`,
    { details: { file: download.label, expected: download.etag, actual } },
  );
}
