import type { Readable, Writable } from 'node:stream';

/**
 * Everything a command touches outside itself, so commands run the same from the binary and in tests:
 * output streams, input, environment, and a signal that fires on Ctrl-C / SIGTERM.
 */
export interface CliContext {
  readonly stdout: Writable;
  /** Progress, logs and error messages. */
  readonly stderr: Writable & { readonly isTTY?: boolean; readonly columns?: number };
  readonly stdin: Readable & { readonly isTTY?: boolean };
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Aborted when the user interrupts (SIGINT) or the process is asked to stop (SIGTERM). */
  readonly signal: AbortSignal;
}
