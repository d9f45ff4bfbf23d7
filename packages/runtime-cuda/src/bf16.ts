// bf16 rounding on the host, as the device rounds an f32 value (__float2bfloat16: to nearest, ties to even).

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** The bf16 bits of `value`, taken to f32 first and then rounded to nearest even. */
export function bf16Bits(value: number): number {
  f32[0] = value;
  const word = u32[0]!;
  return ((word + 0x7fff + ((word >>> 16) & 1)) >>> 16) & 0xffff;
}

/** The value of bf16 bits (exact in f32). */
export function bf16Value(bits: number): number {
  u32[0] = bits << 16;
  return f32[0]!;
}

/** `value` rounded to bf16 precision, kept as a number. */
export function roundToBf16(value: number): number {
  return bf16Value(bf16Bits(value));
}
