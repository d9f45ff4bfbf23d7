import { existsSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cachedSnapshotDir, pullModel } from '../src/index.js';
import { runFerrum } from './helpers/cli-run.js';
import { type FakeFile, FakeHub, gitBlobSha1, sha256 } from './helpers/fake-hub.js';

const TINY = resolve(import.meta.dirname, '../../../fixtures/tiny-models/qwen3-qknorm');
const REPO = 'ferrum-test/tiny-qwen3';
const COMMIT = 'c0ffee'.padEnd(40, '0');

const files: Record<string, FakeFile> = {
  'config.json': { content: readFileSync(join(TINY, 'config.json')) },
  'generation_config.json': { content: readFileSync(join(TINY, 'generation_config.json')) },
  'tokenizer.json': { content: readFileSync(join(TINY, 'tokenizer.json')) },
  'tokenizer_config.json': { content: readFileSync(join(TINY, 'tokenizer_config.json')) },
  'model.safetensors': { content: readFileSync(join(TINY, 'model.safetensors')), lfs: true },
  'README.md': { content: Buffer.from('# tiny\n') },
  'original/consolidated.pth': { content: Buffer.alloc(1000, 7), lfs: true },
};

describe('pull against a fake hub on loopback', () => {
  let cacheDir: string;
  let hub: FakeHub;
  let endpoint: string;
  const start = async (options: Partial<ConstructorParameters<typeof FakeHub>[0]> = {}) => {
    hub = new FakeHub({ repo: REPO, commit: COMMIT, files, ...options });
    endpoint = await hub.start();
  };
  beforeEach(async () => {
    cacheDir = await mkdtemp(join(tmpdir(), 'ferrum-pull-'));
  });
  afterEach(async () => {
    await hub.stop();
    await rm(cacheDir, { recursive: true, force: true });
  });

  it('writes the Hugging Face cache layout: blobs by etag, snapshot links, refs/main', async () => {
    await start();
    const result = await pullModel({ repo: REPO, hub: { endpoint }, cacheDir });
    const root = join(cacheDir, 'models--ferrum-test--tiny-qwen3');
    expect(result.commit).toBe(COMMIT);
    expect(result.snapshotDir).toBe(join(root, 'snapshots', COMMIT));
    expect([...result.files].sort()).toEqual([
      'config.json',
      'generation_config.json',
      'model.safetensors',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    expect(readFileSync(join(root, 'refs', 'main'), 'utf8')).toBe(COMMIT);
    const weights = files['model.safetensors'].content;
    expect(readlinkSync(join(result.snapshotDir, 'model.safetensors'))).toBe(
      `../../blobs/${sha256(weights)}`,
    );
    expect(readFileSync(join(result.snapshotDir, 'model.safetensors')).equals(weights)).toBe(true);
    const config = files['config.json'].content;
    expect(readFileSync(join(root, 'blobs', gitBlobSha1(config))).equals(config)).toBe(true);
    expect(existsSync(join(result.snapshotDir, 'README.md'))).toBe(false);
    expect(cachedSnapshotDir(cacheDir, REPO)).toBe(result.snapshotDir);
    // A second pull only asks for metadata.
    const again = await pullModel({ repo: REPO, hub: { endpoint }, cacheDir });
    expect(again.cachedFiles).toHaveLength(5);
    expect(hub.seen.filter((r) => r.method === 'GET' && r.url.startsWith('/cdn/'))).toHaveLength(1);
  });

  it('resumes a download whose connection dropped', async () => {
    const cut = 200_000;
    await start({ interrupt: { 'model.safetensors': cut } });
    const result = await pullModel({ repo: REPO, hub: { endpoint }, cacheDir, retryDelayMs: 10 });
    const gets = hub.seen.filter((r) => r.method === 'GET' && r.url.startsWith('/cdn/'));
    expect(gets).toHaveLength(2);
    expect(gets[0].range).toBeUndefined();
    const resumedAt = Number(/^bytes=(\d+)-$/.exec(gets[1].range ?? '')?.[1]);
    expect(resumedAt).toBeGreaterThanOrEqual(cut);
    expect(resumedAt).toBeLessThan(files['model.safetensors'].content.length);
    expect(
      readFileSync(join(result.snapshotDir, 'model.safetensors')).equals(files['model.safetensors'].content),
    ).toBe(true);
  });

  it('resumes the partial file an interrupted run left behind', async () => {
    await start();
    const weights = files['model.safetensors'].content;
    const blobs = join(cacheDir, 'models--ferrum-test--tiny-qwen3', 'blobs');
    await mkdir(blobs, { recursive: true });
    writeFileSync(join(blobs, `${sha256(weights)}.incomplete`), weights.subarray(0, 12345));
    const { code, stdout, stderr } = await runFerrum(['pull', REPO], {
      env: { HF_ENDPOINT: endpoint, HF_HUB_CACHE: cacheDir },
    });
    expect(code).toBe(0);
    expect(stdout.trim()).toBe(join(cacheDir, 'models--ferrum-test--tiny-qwen3', 'snapshots', COMMIT));
    expect(stderr).toContain('model.safetensors');
    expect(stderr).toContain('resumed at 12345 bytes');
    expect(hub.seen.find((r) => r.url.startsWith('/cdn/'))?.range).toBe('bytes=12345-');
    expect(readFileSync(join(stdout.trim(), 'model.safetensors')).equals(weights)).toBe(true);
  });

  it('reports a checksum mismatch and keeps no corrupt blob', async () => {
    const wrong = 'f'.repeat(64);
    await start({ files: { ...files, 'model.safetensors': { ...files['model.safetensors'], etag: wrong } } });
    const { code, stdout, stderr } = await runFerrum(['pull', REPO], {
      env: { HF_ENDPOINT: endpoint, HF_HUB_CACHE: cacheDir },
    });
    expect(code).toBe(1);
    expect(stdout).toBe('');
    const message = stderr.trim().split('\n').at(-1);
    expect(message).toBe(
      `ferrum: checksum mismatch for model.safetensors: expected sha256 ${wrong}, got ${sha256(files['model.safetensors'].content)}; the download was deleted`,
    );
    const blobs = join(cacheDir, 'models--ferrum-test--tiny-qwen3', 'blobs');
    expect(existsSync(join(blobs, wrong))).toBe(false);
    expect(existsSync(join(blobs, `${wrong}.incomplete`))).toBe(false);
  });

  it('sends HF_TOKEN to the hub but not to the CDN, and explains a 401', async () => {
    await start({ token: 'hf_secret' });
    const denied = await runFerrum(['pull', REPO], {
      env: { HF_ENDPOINT: endpoint, HF_HUB_CACHE: cacheDir },
    });
    expect(denied.code).toBe(1);
    expect(denied.stderr).toContain('HTTP 401');
    expect(denied.stderr).toContain('set HF_TOKEN');
    const ok = await runFerrum(
      ['pull', `${REPO}@v1`, '--include', 'config.json', '--include', '*.safetensors'],
      {
        env: { HF_ENDPOINT: endpoint, HF_HUB_CACHE: cacheDir, HF_TOKEN: 'hf_secret' },
      },
    );
    expect(ok.code).toBe(0);
    expect(readFileSync(join(cacheDir, 'models--ferrum-test--tiny-qwen3', 'refs', 'v1'), 'utf8')).toBe(
      COMMIT,
    );
    const fetched = hub.seen.filter((r) => r.authorization === 'Bearer hf_secret').map((r) => r.url);
    expect(fetched).toContain(`/${REPO}/resolve/${COMMIT}/config.json`);
    expect(
      hub.seen.filter((r) => r.url.startsWith('/cdn/')).every((r) => r.authorization === undefined),
    ).toBe(true);
    expect(existsSync(join(ok.stdout.trim(), 'tokenizer.json'))).toBe(false);
  });

  it('refuses a malformed repository id with a usage error', async () => {
    await start();
    const { code, stderr } = await runFerrum(['pull', 'not-a-repo']);
    expect(code).toBe(2);
    expect(stderr).toBe('ferrum: pull: give one repository as org/name[@revision]\n');
  });
});

describe('pull with the hub out of reach', () => {
  it('says so in one line instead of a stack', async () => {
    const cacheDir = await mkdtemp(join(tmpdir(), 'ferrum-pull-'));
    // Port 1 on loopback: nothing listens, the connection is refused at once.
    const endpoint = 'http://127.0.0.1:1';
    try {
      const { code, stderr } = await runFerrum(['pull', REPO], {
        env: { HF_ENDPOINT: endpoint, HF_HUB_CACHE: cacheDir },
      });
      expect(code).toBe(1);
      expect(stderr).toMatch(new RegExp(`^ferrum: cannot reach the hub at ${endpoint}: .+\\n$`));
      expect(stderr).not.toContain('    at ');
    } finally {
      await rm(cacheDir, { recursive: true, force: true });
    }
  });
});
