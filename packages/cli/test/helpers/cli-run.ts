import { PassThrough, Readable } from 'node:stream';
import { runCli } from '../../src/index.js';

/** Result of one in-process `ferrum` invocation. */
export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Run the CLI in this process with captured output, the given env and stdin text. */
export async function runFerrum(
  args: readonly string[],
  options: { env?: Record<string, string | undefined>; stdin?: string; signal?: AbortSignal } = {},
): Promise<CliRun> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (d) => (out += d));
  stderr.on('data', (d) => (err += d));
  const code = await runCli(args, {
    stdout,
    stderr,
    stdin: Readable.from([options.stdin ?? '']),
    env: options.env ?? {},
    signal: options.signal ?? new AbortController().signal,
  });
  return { code, stdout: out, stderr: err };
}
