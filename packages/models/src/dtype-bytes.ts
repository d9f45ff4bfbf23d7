import type { DType } from '@ferrum/types';

const BYTES: Readonly<Record<DType, number>> = { f32: 4, f16: 2, bf16: 2 };

/** Size in bytes of one element of `dtype`. */
export function dtypeBytes(dtype: DType): number {
  return BYTES[dtype];
}
