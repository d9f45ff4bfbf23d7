import type { DType } from '@ferrum/types';

/**
 * Where one tensor's bytes lie on disk, read from a safetensors header. Runtimes read (or mmap)
 * `byteLength` bytes at `byteOffset` of `file` straight into their own memory; JS never touches the data.
 */
export interface TensorEntry {
  /** Hugging Face tensor name, e.g. `model.layers.0.self_attn.q_proj.weight`. */
  readonly name: string;
  readonly dtype: DType;
  /** Row-major shape (safetensors order: `[out, in]` for linear weights). */
  readonly shape: readonly number[];
  /** Absolute path of the `.safetensors` file. */
  readonly file: string;
  /** Absolute offset of the first data byte in `file` (header included). */
  readonly byteOffset: number;
  readonly byteLength: number;
}

/** A tensor a model needs: its Hugging Face name and shape. */
export interface TensorSpec {
  readonly name: string;
  readonly shape: readonly number[];
}
