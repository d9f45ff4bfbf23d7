/**
 * A single-consumer queue exposed as an AsyncIterable: the step loop pushes, one `for await` pulls.
 * Closing lets buffered items drain; `fail` rejects the pending pull.
 */
export class AsyncChannel<T> implements AsyncIterable<T> {
  private readonly buffer: T[] = [];
  private waiter: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void } | null = null;
  private closed = false;
  private error: unknown = null;

  constructor(private readonly onReturn: () => void = () => {}) {}

  push(item: T): void {
    if (this.closed) return;
    if (this.waiter) {
      const { resolve } = this.waiter;
      this.waiter = null;
      resolve({ value: item, done: false });
    } else this.buffer.push(item);
  }

  close(): void {
    this.closed = true;
    if (this.waiter && this.buffer.length === 0) {
      const { resolve } = this.waiter;
      this.waiter = null;
      resolve({ value: undefined, done: true });
    }
  }

  fail(error: unknown): void {
    this.error = error;
    this.closed = true;
    if (this.waiter) {
      const { reject } = this.waiter;
      this.waiter = null;
      reject(error);
    }
  }

  get isClosed(): boolean {
    return this.closed;
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => {
        const item = this.buffer.shift();
        if (item !== undefined) return Promise.resolve({ value: item, done: false });
        if (this.error !== null) return Promise.reject(this.error);
        if (this.closed) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve, reject) => {
          this.waiter = { resolve, reject };
        });
      },
      // Called when the consumer stops early (break, throw): the request is no longer wanted.
      return: () => {
        if (!this.closed) this.onReturn();
        this.closed = true;
        this.buffer.length = 0;
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
