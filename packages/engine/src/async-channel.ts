/**
 * A single-consumer queue exposed as an AsyncIterable: the step loop pushes, one `for await` pulls.
 * Closing lets buffered items drain; `fail` rejects the pending pull.
 */
export class AsyncChannel<T> implements AsyncIterable<T> {
  private readonly buffer: T[] = [];
  /** Settle the consumer's pending pull; both null while it is not waiting. */
  private resolveNext: ((result: IteratorResult<T>) => void) | null = null;
  private rejectNext: ((error: unknown) => void) | null = null;
  private closed = false;
  private error: unknown = null;
  /**
   * The executor of a waiting pull's Promise, made once: the step loop pushes to every stream each step,
   * and a chunk then costs only the Promise and the result the protocol needs, no closure or record.
   */
  private readonly wait = (
    resolve: (result: IteratorResult<T>) => void,
    reject: (error: unknown) => void,
  ): void => {
    this.resolveNext = resolve;
    this.rejectNext = reject;
  };

  constructor(private readonly onReturn: () => void = () => {}) {}

  push(item: T): void {
    if (this.closed) return;
    const resolve = this.resolveNext;
    if (resolve === null) {
      this.buffer.push(item);
      return;
    }
    this.release();
    resolve({ value: item, done: false });
  }

  close(): void {
    this.closed = true;
    const resolve = this.resolveNext;
    if (resolve !== null && this.buffer.length === 0) {
      this.release();
      resolve({ value: undefined, done: true });
    }
  }

  fail(error: unknown): void {
    this.error = error;
    this.closed = true;
    const reject = this.rejectNext;
    if (reject !== null) {
      this.release();
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
        return new Promise(this.wait);
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

  private release(): void {
    this.resolveNext = null;
    this.rejectNext = null;
  }
}
