/**
 * Runs async tasks one after another in call order: the KV transfers and steps of one executor must reach
 * the addon in the order the engine issued them, even when it does not await each one.
 */
export class SerialQueue {
  #tail: Promise<unknown> = Promise.resolve();

  /** Starts `task` once every earlier task settled; a failed task does not stop later ones. */
  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(task);
    this.#tail = result.catch(() => undefined);
    return result;
  }
}
