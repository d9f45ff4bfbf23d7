import type {
  BackendCapabilities,
  ForwardBatch,
  ForwardResult,
  ModelInfo,
  ModelLoadSpec,
} from '@ferrum/types';
import { defineToken, type SpecificationVersion } from './injection-token.js';

/**
 * The runtime's KV token pool and its host tier. Slot accounting is not here (that is the
 * {@link KvCacheManager}'s job): these are the data-movement primitives the KV policy plans.
 *
 * Every method enqueues work ordered with respect to `forward()` calls on the same executor.
 */
export interface KvStorage {
  /** Device slots in the pool. */
  readonly numSlots: number;
  /** Host (swap) slots; 0 when the runtime has no host tier. */
  readonly numHostSlots: number;
  /** Copy K and V of every layer from device slot `src[i]` to device slot `dst[i]`. */
  copySlots(src: Int32Array, dst: Int32Array): Promise<void>;
  /** Copy device slots `deviceSlots[i]` to host slots `hostSlots[i]`. */
  swapOut(deviceSlots: Int32Array, hostSlots: Int32Array): Promise<void>;
  /** Copy host slots `hostSlots[i]` back to device slots `deviceSlots[i]`. */
  swapIn(hostSlots: Int32Array, deviceSlots: Int32Array): Promise<void>;
}

/** A model loaded on a backend. Owns all device memory it uses, allocated once at load. */
export interface ModelExecutor {
  readonly info: ModelInfo;
  readonly kv: KvStorage;
  /**
   * Run one step. Never blocks the JS thread: the work runs natively and the Promise settles from a
   * completion thread. Calls are serialized by the caller (at most one in flight per executor, unless the
   * backend's capabilities say otherwise). The batch's arrays may be reused by the caller once the returned
   * Promise settles.
   */
  forward(batch: ForwardBatch): Promise<ForwardResult>;
  /** Free every resource; the executor is unusable afterwards. Idempotent. */
  dispose(): Promise<void>;
}

/** A hardware backend (cpu, cuda, metal, or a third party's). */
export interface ComputeBackend {
  readonly specificationVersion: SpecificationVersion;
  /** Short stable name: "cpu", "cuda", "metal". */
  readonly name: string;
  /** Cheap discovery. Never throws: reports `available: false` with a reason instead. */
  probe(): Promise<BackendCapabilities>;
  /** Load weights and allocate the KV pool and workspaces. Throws FerrumError with a clear code. */
  loadModel(spec: ModelLoadSpec): Promise<ModelExecutor>;
}

/** All registered backends (resolveAll); the engine picks the best available by probe score. */
export const COMPUTE_BACKENDS = defineToken<ComputeBackend>('ComputeBackendV1');
