import type { RopeConfig } from '@ferrum/types';

/**
 * RoPE inverse frequencies as transformers computes them in float32: `1 / theta^(2i / headDim)`, then for
 * `llama3` the wavelength-dependent scaling (low frequencies divided by `factor`, a smooth blend between).
 */
export function ropeInverseFrequencies(rope: RopeConfig, headDim: number): Float32Array {
  const half = headDim / 2;
  const out = new Float32Array(half);
  for (let i = 0; i < half; i++) {
    const exponent = Math.fround(Math.fround(2 * i) / headDim);
    out[i] = Math.fround(1 / Math.fround(rope.theta ** exponent));
  }
  if (rope.type !== 'llama3') return out;
  const { factor, lowFreqFactor, highFreqFactor, originalMaxPositionEmbeddings: original } = rope;
  const lowFreqWavelength = original / lowFreqFactor;
  const highFreqWavelength = original / highFreqFactor;
  for (let i = 0; i < half; i++) {
    const inv = out[i];
    const wavelength = (2 * Math.PI) / inv;
    if (wavelength < highFreqWavelength) continue;
    if (wavelength > lowFreqWavelength) {
      out[i] = inv / factor;
      continue;
    }
    const smooth = (original / wavelength - lowFreqFactor) / (highFreqFactor - lowFreqFactor);
    out[i] = (1 - smooth) * (inv / factor) + smooth * inv;
  }
  return out;
}
