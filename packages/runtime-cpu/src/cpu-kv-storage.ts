import type { KvStorage } from '@ferrum/interfaces';
import type { NativeModel } from './native-addon.js';
import { native } from './native-error.js';
import type { SerialQueue } from './serial-queue.js';

/**
 * The CPU pool's copy and swap primitives. Work goes through the executor's queue, so it is ordered with
 * respect to forward() calls. The index arrays must stay untouched until the Promise settles.
 */
export class CpuKvStorage implements KvStorage {
  readonly numSlots: number;
  readonly numHostSlots: number;
  readonly #model: () => NativeModel;
  readonly #queue: SerialQueue;

  /** `model` returns the live native model or throws once the executor is disposed. */
  constructor(model: () => NativeModel, queue: SerialQueue, numSlots: number, numHostSlots: number) {
    this.#model = model;
    this.#queue = queue;
    this.numSlots = numSlots;
    this.numHostSlots = numHostSlots;
  }

  copySlots(src: Int32Array, dst: Int32Array): Promise<void> {
    return this.#queue.run(() => native(() => this.#model().copySlots(src, dst)));
  }

  swapOut(deviceSlots: Int32Array, hostSlots: Int32Array): Promise<void> {
    return this.#queue.run(() => native(() => this.#model().swapOut(deviceSlots, hostSlots)));
  }

  swapIn(hostSlots: Int32Array, deviceSlots: Int32Array): Promise<void> {
    return this.#queue.run(() => native(() => this.#model().swapIn(hostSlots, deviceSlots)));
  }
}
