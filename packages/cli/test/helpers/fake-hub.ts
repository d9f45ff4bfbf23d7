import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One file of a fake repository; `lfs` files are served from a CDN path after a redirect, as the hub does. */
export interface FakeFile {
  readonly content: Buffer;
  readonly lfs?: boolean;
  /** Advertise this etag instead of the true checksum (to test verification). */
  readonly etag?: string;
}

/** A request the fake hub saw. */
export interface SeenRequest {
  readonly method: string;
  readonly url: string;
  readonly range?: string;
  readonly authorization?: string;
}

export interface FakeHubOptions {
  readonly repo: string;
  readonly commit: string;
  readonly files: Readonly<Record<string, FakeFile>>;
  /** Required bearer token; requests without it get 401, as the hub answers for private repos. */
  readonly token?: string;
  /** Drop the connection after this many bytes of the first GET of each of these CDN files. */
  readonly interrupt?: Readonly<Record<string, number>>;
}

export function sha256(content: Buffer): string {
  return createHash('sha256').update(content).digest('hex');
}

export function gitBlobSha1(content: Buffer): string {
  return createHash('sha1').update(`blob ${content.length}\0`).update(content).digest('hex');
}

/**
 * A loopback imitation of the Hugging Face hub's HTTP API: `/api/models/{repo}/revision/{rev}`, `HEAD` and
 * `GET /{repo}/resolve/{commit}/{file}` (regular files answer with their git-sha1 ETag; LFS files redirect
 * to an absolute CDN URL `/cdn/<sha256>` with `X-Linked-Etag` and `X-Linked-Size`), and a CDN honouring
 * `Range`.
 */
export class FakeHub {
  readonly seen: SeenRequest[] = [];
  private server: Server | null = null;
  /** The CDN is `localhost` while the hub is `127.0.0.1`: another origin, as the real CDN is. */
  private cdnOrigin = '';
  private readonly interrupted = new Set<string>();

  constructor(private readonly options: FakeHubOptions) {}

  async start(): Promise<string> {
    this.server = createServer((req, res) => this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const port = (this.server.address() as AddressInfo).port;
    this.cdnOrigin = `http://localhost:${port}`;
    return `http://127.0.0.1:${port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  private etagOf(file: FakeFile): string {
    return file.etag ?? (file.lfs ? sha256(file.content) : gitBlobSha1(file.content));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = decodeURIComponent(req.url ?? '');
    this.seen.push({
      method: req.method ?? '',
      url,
      range: req.headers.range,
      authorization: req.headers.authorization,
    });
    const { repo, commit, files, token } = this.options;
    if (url.startsWith('/cdn/')) return void this.serveCdn(url.slice(5), req, res);
    if (token && req.headers.authorization !== `Bearer ${token}`) return void res.writeHead(401).end('{}');
    const revisionPrefix = `/api/models/${repo}/revision/`;
    if (url.startsWith(revisionPrefix)) {
      const revision = url.slice(revisionPrefix.length);
      if (revision !== 'main' && revision !== 'v1' && revision !== commit)
        return void res.writeHead(404).end('{}');
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(
        JSON.stringify({
          id: repo,
          sha: commit,
          siblings: Object.keys(files).map((rfilename) => ({ rfilename })),
        }),
      );
    }
    const resolvePrefix = `/${repo}/resolve/${commit}/`;
    const file = url.startsWith(resolvePrefix) ? files[url.slice(resolvePrefix.length)] : undefined;
    if (!file) return void res.writeHead(404).end();
    const common = { 'x-repo-commit': commit };
    if (file.lfs) {
      res.writeHead(302, {
        ...common,
        location: `${this.cdnOrigin}/cdn/${sha256(file.content)}`,
        'x-linked-etag': `"${this.etagOf(file)}"`,
        'x-linked-size': String(file.content.length),
      });
      return void res.end();
    }
    res.writeHead(200, {
      ...common,
      etag: `"${this.etagOf(file)}"`,
      'content-length': String(file.content.length),
    });
    res.end(req.method === 'HEAD' ? undefined : file.content);
  }

  /** The CDN: content by sha256, with `Range: bytes=N-`, and a dropped connection when asked. */
  private serveCdn(hash: string, req: IncomingMessage, res: ServerResponse): void {
    const entry = Object.entries(this.options.files).find(([, f]) => sha256(f.content) === hash);
    if (!entry) return void res.writeHead(404).end();
    const [name, file] = entry;
    const start = Number(/^bytes=(\d+)-$/.exec(req.headers.range ?? '')?.[1] ?? 0);
    const body = file.content.subarray(start);
    const headers = { 'content-length': String(body.length), 'accept-ranges': 'bytes' };
    if (start > 0) {
      res.writeHead(206, {
        ...headers,
        'content-range': `bytes ${start}-${file.content.length - 1}/${file.content.length}`,
      });
    } else res.writeHead(200, headers);
    const cut = this.options.interrupt?.[name];
    if (req.method === 'GET' && cut !== undefined && !this.interrupted.has(name)) {
      this.interrupted.add(name);
      // Send part of the body, then drop the connection mid-transfer.
      res.write(body.subarray(0, cut), () => setTimeout(() => res.socket?.destroy(), 20));
      return;
    }
    res.end(body);
  }
}
