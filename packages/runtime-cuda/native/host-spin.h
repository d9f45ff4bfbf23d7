// Host threads that poll instead of sleeping while steps run: the worker between its tasks, the completion thread
// on each step's event, the JS thread between turns of its event loop (src/cuda-model-executor.ts). On the H100
// machine (a KVM guest) a thread woken from sleep, and the JS engine work right after it, run slower than on a
// thread kept busy: an agent turn's median TTFT read 5.24-5.33 ms polling against 5.53-5.55 ms sleeping, a
// 512-token prompt's 8.12-8.28 against 8.50-8.53 (bench/results/cuda-speed-2026-11-22-pass13.md).
// A model loaded with `spinWait` false (FERRUM_CUDA_SPIN_WAIT=0) blocks instead, which frees the cores at that
// price.
#pragma once

#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace ferrum {

/** How long the worker polls for its next task after running one: the gap between two steps of a session. */
constexpr std::chrono::microseconds kWorkerSpinAfterTask{10000};

/** A hint to the core inside a polling loop: it saves power and leaves the sibling hyperthread its share. */
inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace ferrum
