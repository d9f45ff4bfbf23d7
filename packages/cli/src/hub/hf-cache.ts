import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

type Env = Readonly<Record<string, string | undefined>>;

/** `HF_HOME`, else `$XDG_CACHE_HOME/huggingface`, else `~/.cache/huggingface` (huggingface_hub's rule). */
export function hfHome(env: Env): string {
  return env.HF_HOME ?? join(env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'huggingface');
}

/** The hub cache: `HF_HUB_CACHE` (or the older `HUGGINGFACE_HUB_CACHE`), else `<HF_HOME>/hub`. */
export function hubCacheDir(env: Env): string {
  return env.HF_HUB_CACHE ?? env.HUGGINGFACE_HUB_CACHE ?? join(hfHome(env), 'hub');
}

/** `org/name` → `models--org--name`, the cache folder of a model repository. */
export function repoFolderName(repo: string): string {
  return `models--${repo.split('/').join('--')}`;
}

/** Paths of one repository inside the cache. */
export interface RepoCachePaths {
  readonly root: string;
  readonly blobs: string;
  readonly refs: string;
  readonly snapshots: string;
}

export function repoCachePaths(cacheDir: string, repo: string): RepoCachePaths {
  const root = join(cacheDir, repoFolderName(repo));
  return { root, blobs: join(root, 'blobs'), refs: join(root, 'refs'), snapshots: join(root, 'snapshots') };
}

/** A commit sha as the hub writes it (40 hex digits). */
export function isCommitSha(revision: string): boolean {
  return /^[0-9a-f]{40}$/.test(revision);
}

/**
 * The snapshot folder of `repo` at `revision` (a branch, tag or commit) when it is in the cache, else null.
 * A branch or tag is resolved through `refs/<revision>`, as huggingface_hub writes it.
 */
export function cachedSnapshotDir(cacheDir: string, repo: string, revision = 'main'): string | null {
  const paths = repoCachePaths(cacheDir, repo);
  const refFile = join(paths.refs, revision);
  const commit = isCommitSha(revision)
    ? revision
    : existsSync(refFile)
      ? readFileSync(refFile, 'utf8').trim()
      : null;
  if (commit === null) return null;
  const dir = join(paths.snapshots, commit);
  return existsSync(dir) ? dir : null;
}

/** `HF_TOKEN` (or the older `HUGGING_FACE_HUB_TOKEN`), else the token file `huggingface-cli login` writes. */
export function hubToken(env: Env): string | undefined {
  const fromEnv = env.HF_TOKEN ?? env.HUGGING_FACE_HUB_TOKEN;
  if (fromEnv) return fromEnv;
  const file = env.HF_TOKEN_PATH ?? join(hfHome(env), 'token');
  return existsSync(file) ? readFileSync(file, 'utf8').trim() || undefined : undefined;
}
