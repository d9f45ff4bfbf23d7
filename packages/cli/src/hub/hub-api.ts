import { FerrumError } from '@ferrum/types';
import { fetchFailureReason } from '../fetch-failure-reason.js';

/** Where and as whom to talk to the hub. */
export interface HubConnection {
  /** `HF_ENDPOINT`, default `https://huggingface.co`. */
  readonly endpoint: string;
  readonly token?: string;
}

/** A repository at one commit, with the files it holds. */
export interface RepoRevision {
  readonly commit: string;
  readonly files: readonly string[];
}

/** What the hub says about one file: its etag (sha256 for LFS files, git sha1 otherwise), size and URL. */
export interface FileMetadata {
  readonly etag: string;
  readonly sizeBytes: number | null;
  /** Where the content is (the CDN for LFS files). */
  readonly downloadUrl: string;
}

/** Path segments encoded one by one, so `/` separates folders and nothing else is special. */
function encodePath(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/');
}

/** The bearer token for hub URLs only: a redirect to a CDN must not carry it. */
export function hubHeaders(hub: HubConnection, url: string): Record<string, string> {
  const sameOrigin = new URL(url).origin === new URL(hub.endpoint).origin;
  return hub.token && sameOrigin ? { authorization: `Bearer ${hub.token}` } : {};
}

/** A failed hub answer as a one-line FerrumError (404, or 401 which the hub sends for unknown repos too). */
export function hubHttpError(status: number, what: string, hub: HubConnection): FerrumError {
  if (status === 401 || status === 403 || status === 404) {
    const hint = hub.token ? '' : ' (for a gated or private repository, set HF_TOKEN)';
    return new FerrumError(
      'not_found',
      `the hub has no ${what}, or it is not accessible: HTTP ${status}${hint}`,
      {
        details: { status },
      },
    );
  }
  return new FerrumError('internal', `the hub failed on ${what}: HTTP ${status}`, { details: { status } });
}

/** `fetch` against the hub; a network failure (refused, DNS, TLS) is a one-line FerrumError, not a stack. */
async function hubFetch(hub: HubConnection, url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (error) {
    throw new FerrumError(
      'internal',
      `cannot reach the hub at ${hub.endpoint}: ${fetchFailureReason(error)}`,
      {
        cause: error,
      },
    );
  }
}

/** `GET /api/models/{repo}/revision/{revision}`: the commit a branch or tag points to and its files. */
export async function fetchRepoRevision(
  hub: HubConnection,
  repo: string,
  revision: string,
): Promise<RepoRevision> {
  const url = `${hub.endpoint}/api/models/${repo}/revision/${encodeURIComponent(revision)}`;
  const res = await hubFetch(hub, url, { headers: hubHeaders(hub, url) });
  if (!res.ok) throw hubHttpError(res.status, `repository ${repo} at revision ${revision}`, hub);
  const body = (await res.json()) as { sha?: unknown; siblings?: { rfilename?: unknown }[] };
  if (typeof body.sha !== 'string' || !Array.isArray(body.siblings)) {
    throw new FerrumError('internal', `the hub's answer for ${repo}@${revision} has no sha or file list`);
  }
  const files = body.siblings.map((s) => s.rfilename).filter((f): f is string => typeof f === 'string');
  return { commit: body.sha, files };
}

/** An etag without its weak marker and quotes. */
function normalizeEtag(value: string | null): string | null {
  return value === null ? null : value.replace(/^W\//, '').replace(/^"|"$/g, '');
}

/**
 * `HEAD /{repo}/resolve/{commit}/{file}` without following redirects, as huggingface_hub does: an LFS file
 * answers with a redirect to its CDN URL and `X-Linked-Etag` / `X-Linked-Size`; a regular file with
 * `ETag` and `Content-Length`. A relative redirect (a renamed repository) is followed.
 */
export async function fetchFileMetadata(
  hub: HubConnection,
  repo: string,
  commit: string,
  file: string,
): Promise<FileMetadata> {
  let url = `${hub.endpoint}/${repo}/resolve/${commit}/${encodePath(file)}`;
  for (let hops = 0; hops < 5; hops++) {
    const res = await hubFetch(hub, url, {
      method: 'HEAD',
      redirect: 'manual',
      headers: hubHeaders(hub, url),
    });
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location?.startsWith('/')) {
      url = new URL(location, url).toString();
      continue;
    }
    if (res.status >= 400) throw hubHttpError(res.status, `file ${file} in ${repo}`, hub);
    const etag = normalizeEtag(res.headers.get('x-linked-etag') ?? res.headers.get('etag'));
    if (!etag) throw new FerrumError('internal', `the hub sent no etag for ${file} in ${repo}`);
    const size = res.headers.get('x-linked-size') ?? res.headers.get('content-length');
    return {
      etag,
      sizeBytes: size === null ? null : Number(size),
      downloadUrl: location ? new URL(location, url).toString() : url,
    };
  }
  throw new FerrumError('internal', `too many redirects resolving ${file} in ${repo}`);
}
