#include "rope.h"

#include <cmath>

#include "dtype.h"

namespace ferrum {
namespace {

// transformers' `_compute_llama3_parameters`: long wavelengths are divided by `factor`, short ones kept,
// and the band between is interpolated. Evaluated in f32 like the torch code.
float llama3Frequency(float inverse, const RopeShape& rope) {
  const float factor = static_cast<float>(rope.factor);
  const float low = static_cast<float>(rope.lowFreqFactor);
  const float oldContext = static_cast<float>(rope.originalMaxPositionEmbeddings);
  const float lowFreqWavelen = static_cast<float>(rope.originalMaxPositionEmbeddings / rope.lowFreqFactor);
  const float highFreqWavelen = static_cast<float>(rope.originalMaxPositionEmbeddings / rope.highFreqFactor);
  const float wavelen = static_cast<float>(2.0 * M_PI) / inverse;
  const float scaled = wavelen > lowFreqWavelen ? inverse / factor : inverse;
  const bool medium = !(wavelen < highFreqWavelen) && !(wavelen > lowFreqWavelen);
  if (!medium) return scaled;
  const float smooth = (oldContext / wavelen - low) / static_cast<float>(rope.highFreqFactor - rope.lowFreqFactor);
  return (1.0f - smooth) * scaled / factor + smooth * scaled;
}

}  // namespace

Rope::Rope(const RopeShape& rope, int headDim) {
  const int half = headDim / 2;
  inverseFrequencies_.resize(static_cast<size_t>(half));
  const float theta = static_cast<float>(rope.theta);
  for (int i = 0; i < half; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(headDim);
    float inverse = 1.0f / std::pow(theta, exponent);
    if (rope.llama3) inverse = llama3Frequency(inverse, rope);
    if (rope.bf16Frequencies) inverse = bf16ToF32(f32ToBf16(inverse));
    inverseFrequencies_[static_cast<size_t>(i)] = inverse;
  }
}

void Rope::fillTables(const int32_t* positions, int count, float* cos, float* sin) const {
  const int h = half();
  for (int t = 0; t < count; ++t) {
    const float position = static_cast<float>(positions[t]);
    for (int i = 0; i < h; ++i) {
      // The angle is an f32 product as in torch; cos/sin of it evaluated accurately.
      const double angle = static_cast<double>(position * inverseFrequencies_[static_cast<size_t>(i)]);
      cos[static_cast<size_t>(t) * h + i] = static_cast<float>(std::cos(angle));
      sin[static_cast<size_t>(t) * h + i] = static_cast<float>(std::sin(angle));
    }
  }
}

}  // namespace ferrum
