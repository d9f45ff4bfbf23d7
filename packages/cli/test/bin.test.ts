import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const BIN = resolve(import.meta.dirname, '../dist/bin.js');
const built = existsSync(BIN);

/** Run the built binary; resolves with its exit code and output. `onStderr` may act on progress lines. */
function ferrum(args: string[], onStderr?: (text: string, kill: (signal: NodeJS.Signals) => void) => void) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => {
      stderr += d;
      onStderr?.(stderr, (signal) => child.kill(signal));
    });
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

describe.skipIf(!built)(
  `the built ferrum binary${built ? '' : ' (skipped: packages/cli/dist absent, run the build)'}`,
  () => {
    it('exits 2 with one line and no stack on bad flags', async () => {
      const { code, stderr } = await ferrum(['run', '--max-tokens', 'x']);
      expect(code).toBe(2);
      expect(stderr).toBe('ferrum: --max-tokens must be an integer, got "x"\n');
    });

    it('serves until SIGINT, then exits 0', async () => {
      let url = '';
      const { code, stderr } = await ferrum(
        ['serve', '--port', '0', '--max-kv-tokens', '2048'],
        (text, kill) => {
          const match = / at (http:\S+)/.exec(text);
          if (!match || url) return;
          url = match[1];
          fetch(`${url}/health`).then((res) => {
            expect(res.status).toBe(200);
            kill('SIGINT');
          });
        },
      );
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(stderr).toContain('shutting down');
      expect(code).toBe(0);
    });
  },
);
