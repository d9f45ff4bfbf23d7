import type { ComputeBackend } from '@ferrum/interfaces';
import { createCpuBackend } from '@ferrum/runtime-cpu';
import { createCudaBackend } from '@ferrum/runtime-cuda';
import { createMetalBackend } from '@ferrum/runtime-metal';

/** The built-in backends in order of preference; each probe says whether it can run here. */
export function defaultBackends(): ComputeBackend[] {
  return [createCudaBackend(), createMetalBackend(), createCpuBackend()];
}
