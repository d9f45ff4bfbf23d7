import type { KvStorage } from '@ferrum/interfaces';
import type { NativeExecutor } from './native-addon.js';
import { native } from './native-error.js';

/**
 * The CUDA pool's copy and swap primitives. The host tier is mapped pinned memory, so swaps are one kernel
 * each. Work runs on the executor's worker thread in call order with forward steps; the index arrays are
 * copied at the call. Pairs must not overlap (a slot is never both a source and a destination of one call).
 */
export class CudaKvStorage implements KvStorage {
  readonly numSlots: number;
  readonly numHostSlots: number;
  readonly #native: NativeExecutor;

  constructor(executor: NativeExecutor, numSlots: number, numHostSlots: number) {
    this.#native = executor;
    this.numSlots = numSlots;
    this.numHostSlots = numHostSlots;
  }

  copySlots(src: Int32Array, dst: Int32Array): Promise<void> {
    return native(() => this.#native.copySlots(src, dst));
  }

  swapOut(deviceSlots: Int32Array, hostSlots: Int32Array): Promise<void> {
    return native(() => this.#native.swapOut(deviceSlots, hostSlots));
  }

  swapIn(hostSlots: Int32Array, deviceSlots: Int32Array): Promise<void> {
    return native(() => this.#native.swapIn(hostSlots, deviceSlots));
  }
}
