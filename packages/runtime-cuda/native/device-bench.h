// Roofline ceilings measured on the device, for the speed benchmarks (scripts/gpu/bench-speed.ts).
#pragma once

#include <napi.h>

namespace ferrum {

/** measureBandwidth(bytes, iterations, device?): device-to-device copy rate, bytes read + written per second. */
Napi::Value MeasureBandwidth(const Napi::CallbackInfo& info);
/** measureGemmRate(m, n, k, iterations, device?): bf16 cuBLASLt product rate (f32 accumulate), FLOP/s. */
Napi::Value MeasureGemmRate(const Napi::CallbackInfo& info);

}  // namespace ferrum
