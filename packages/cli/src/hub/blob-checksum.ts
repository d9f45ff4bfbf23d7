import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';

/** How an etag checks a file: sha256 of the content (LFS files) or git's blob sha1 (regular files). */
export type ChecksumKind = 'sha256' | 'git-sha1';

/** The checksum an etag stands for, or null for an etag of another form (then there is nothing to verify). */
export function checksumKindOf(etag: string): ChecksumKind | null {
  if (/^[0-9a-f]{64}$/.test(etag)) return 'sha256';
  if (/^[0-9a-f]{40}$/.test(etag)) return 'git-sha1';
  return null;
}

/** The file's checksum of `kind`, hex: git's blob sha1 hashes `blob <size>\0` before the content. */
export async function fileChecksum(path: string, kind: ChecksumKind): Promise<string> {
  const hash = createHash(kind === 'sha256' ? 'sha256' : 'sha1');
  if (kind === 'git-sha1') hash.update(`blob ${(await stat(path)).size}\0`);
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
