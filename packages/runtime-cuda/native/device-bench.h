// Roofline ceilings measured on the device, for the speed benchmarks (scripts/gpu/bench-speed.ts), hooks that
// run Gemm's paths (verified and timed) and the add + RMSNorm kernel (verified) on host data (test/gpu-gemm.test.ts,
// test/gpu-rms-norm.test.ts), and a profiler range for Nsight Compute.
#pragma once

#include <napi.h>

namespace ferrum {

/** measureBandwidth(bytes, iterations, device?): device-to-device copy rate, bytes read + written per second. */
Napi::Value MeasureBandwidth(const Napi::CallbackInfo& info);
/** measureGemmRate(m, n, k, iterations, device?): bf16 cuBLASLt product rate (f32 accumulate), FLOP/s. */
Napi::Value MeasureGemmRate(const Napi::CallbackInfo& info);
/**
 * runGemm(path, x, w, m, n, k, outF32, iterations, device?): y = x · wᵀ through one Gemm path ('auto', 'tuned',
 * 'cublas', or the GEMV at a block size: 'gemv4', ... 'gemv32') on bf16 bits (Uint16Array); or, for 'swiglu'
 * (tuned) and 'swiglu<rows>', y = silu(x · gateᵀ) × (x · upᵀ) with w the gate|up rows [n = 2 · inter][k] and y
 * [m][inter] (bf16); { output: Float32Array, medianSeconds }.
 */
Napi::Value RunGemm(const Napi::CallbackInfo& info);
/**
 * runAddRmsNorm(residual, delta, weight, rows, hidden, eps, device?): the fused residual add + RMSNorm
 * (launchAddRmsNorm) on bf16 bits (Uint16Array, residual and delta [rows][hidden], weight [hidden]);
 * { residual: the sum written back, output }, each a Float32Array of the bf16 values.
 */
Napi::Value RunAddRmsNorm(const Napi::CallbackInfo& info);
/**
 * profilerRange(on): starts (true) or stops (false) the profiler's collection on the current device, after the
 * device's work so far has completed; for `ncu --profile-from-start off` (scripts/gpu/profile.sh), so that a
 * model's load and GEMM tuning stay out of the profile.
 */
Napi::Value ProfilerRange(const Napi::CallbackInfo& info);

}  // namespace ferrum
