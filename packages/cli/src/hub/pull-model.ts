import { existsSync } from 'node:fs';
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import type { Writable } from 'node:stream';
import { FerrumError } from '@ferrum/types';
import picomatch from 'picomatch';
import { downloadBlob } from './download-blob.js';
import { isCommitSha, repoCachePaths } from './hf-cache.js';
import { fetchFileMetadata, fetchRepoRevision, type HubConnection, hubHeaders } from './hub-api.js';
import { ProgressBar } from './progress-bar.js';

/** Files a model needs to load and serve: configs, tokenizer files, chat templates and safetensors weights. */
export const DEFAULT_INCLUDE: readonly string[] = [
  '*.json',
  '*.safetensors',
  'tokenizer.model',
  '*.tiktoken',
  'merges.txt',
  'vocab.txt',
  '*.jinja',
];

/** Options of {@link pullModel}. */
export interface PullOptions {
  readonly repo: string;
  /** Branch, tag or commit. Default `main`. */
  readonly revision?: string;
  readonly hub: HubConnection;
  /** The hub cache (`hubCacheDir(env)`). */
  readonly cacheDir: string;
  /** Globs of the files to fetch, matched against repository paths. Default {@link DEFAULT_INCLUDE}. */
  readonly include?: readonly string[];
  /** Where progress bars go (stderr). */
  readonly progress?: Writable & { readonly isTTY?: boolean };
  /** Attempts after a dropped connection, each resuming (default 5), and the base delay between them. */
  readonly retries?: number;
  readonly retryDelayMs?: number;
}

/** What {@link pullModel} did. */
export interface PullResult {
  readonly commit: string;
  /** `snapshots/<commit>`: a model directory ready for `--model`. */
  readonly snapshotDir: string;
  readonly files: readonly string[];
  /** Files already in the cache, not downloaded again. */
  readonly cachedFiles: readonly string[];
}

/**
 * Download a model repository into the Hugging Face cache layout that huggingface_hub and vLLM share:
 * `blobs/<etag>` holds each file once, `snapshots/<commit>/<path>` links to it, `refs/<revision>` names
 * the commit.
 */
export async function pullModel(options: PullOptions): Promise<PullResult> {
  const revision = options.revision ?? 'main';
  const { repo, hub } = options;
  const info = await fetchRepoRevision(hub, repo, revision);
  const isIncluded = picomatch([...(options.include ?? DEFAULT_INCLUDE)], { dot: true });
  const files = info.files.filter((file) => isIncluded(file));
  if (files.length === 0) {
    throw new FerrumError(
      'not_found',
      `no file of ${repo}@${revision} matches ${(options.include ?? DEFAULT_INCLUDE).join(', ')}`,
    );
  }
  const paths = repoCachePaths(options.cacheDir, repo);
  const snapshotDir = join(paths.snapshots, info.commit);
  await mkdir(paths.blobs, { recursive: true });
  const cachedFiles: string[] = [];
  for (const file of files) {
    const meta = await fetchFileMetadata(hub, repo, info.commit, file);
    const blobPath = join(paths.blobs, meta.etag);
    if (existsSync(blobPath)) cachedFiles.push(file);
    else await fetchBlob(options, file, blobPath, meta);
    await linkSnapshotFile(join(snapshotDir, file), blobPath);
  }
  if (!isCommitSha(revision)) {
    const refFile = join(paths.refs, revision);
    await mkdir(dirname(refFile), { recursive: true });
    await writeFile(refFile, info.commit);
  }
  return { commit: info.commit, snapshotDir, files, cachedFiles };
}

async function fetchBlob(
  options: PullOptions,
  file: string,
  blobPath: string,
  meta: Awaited<ReturnType<typeof fetchFileMetadata>>,
): Promise<void> {
  let bar: ProgressBar | null = null;
  const resumedFrom = await downloadBlob({
    url: meta.downloadUrl,
    headers: hubHeaders(options.hub, meta.downloadUrl),
    path: blobPath,
    etag: meta.etag,
    sizeBytes: meta.sizeBytes,
    label: file,
    retries: options.retries,
    retryDelayMs: options.retryDelayMs,
    onProgress: (done, resumed) => {
      if (!options.progress) return;
      bar ??= new ProgressBar(options.progress, file, meta.sizeBytes, resumed);
      bar.update(done);
    },
  });
  (bar as ProgressBar | null)?.finish(resumedFrom > 0 ? `resumed at ${resumedFrom} bytes` : '');
}

/** Point `snapshots/<commit>/<file>` at its blob with a relative symlink (as huggingface_hub does). */
async function linkSnapshotFile(linkPath: string, blobPath: string): Promise<void> {
  await mkdir(dirname(linkPath), { recursive: true });
  await rm(linkPath, { force: true });
  await symlink(relative(dirname(linkPath), blobPath), linkPath);
}
