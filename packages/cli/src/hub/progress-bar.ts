import type { Writable } from 'node:stream';

const WIDTH = 24;
const REDRAW_MS = 100;

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

/**
 * A one-line progress bar for one download on stderr. On a terminal it redraws in place (at most every
 * 100 ms); elsewhere (logs, CI) it prints only the final line.
 */
export class ProgressBar {
  private done = 0;
  private lastDrawMs = 0;
  private readonly startMs = performance.now();

  constructor(
    private readonly stream: Writable & { readonly isTTY?: boolean },
    private readonly label: string,
    private readonly totalBytes: number | null,
    /** Bytes already on disk before this run (a resumed download); not counted in the speed. */
    private readonly resumedBytes = 0,
  ) {
    this.done = resumedBytes;
  }

  /** Record progress: `done` bytes of the file are on disk. */
  update(done: number): void {
    this.done = done;
    const now = performance.now();
    if (!this.stream.isTTY || now - this.lastDrawMs < REDRAW_MS) return;
    this.lastDrawMs = now;
    this.stream.write(`\r${this.line(now)}\x1b[K`);
  }

  /** Print the final line (with `note`, e.g. "resumed" or "cached"). */
  finish(note = ''): void {
    const line = this.line(performance.now()) + (note ? `  (${note})` : '');
    this.stream.write(this.stream.isTTY ? `\r${line}\x1b[K\n` : `${line}\n`);
  }

  private line(nowMs: number): string {
    const seconds = Math.max((nowMs - this.startMs) / 1000, 1e-3);
    const speed = `${formatBytes(Math.round((this.done - this.resumedBytes) / seconds))}/s`;
    if (this.totalBytes === null || this.totalBytes === 0)
      return `${this.label}  ${formatBytes(this.done)}  ${speed}`;
    const fraction = Math.min(this.done / this.totalBytes, 1);
    const filled = Math.round(fraction * WIDTH);
    const bar = `[${'#'.repeat(filled)}${'-'.repeat(WIDTH - filled)}]`;
    const percent = `${Math.floor(fraction * 100)}%`.padStart(4);
    return `${this.label}  ${bar} ${percent}  ${formatBytes(this.done)}/${formatBytes(this.totalBytes)}  ${speed}`;
  }
}
