#include "cpu-features.h"

#include <thread>

#if defined(__linux__)
#include <sched.h>
#endif

namespace ferrum {
namespace {

#if defined(__x86_64__) || defined(__i386__)
// __builtin_cpu_supports also checks that the OS saves the wide registers (XCR0), not just CPUID.
bool hasAvx2() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}
bool hasAvx512() {
  return hasAvx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}
#endif

}  // namespace

std::vector<std::string> cpuFeatures() {
  std::vector<std::string> out;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) out.emplace_back("avx2");
  if (__builtin_cpu_supports("fma")) out.emplace_back("fma");
  if (__builtin_cpu_supports("f16c")) out.emplace_back("f16c");
  if (__builtin_cpu_supports("avx512f")) out.emplace_back("avx512f");
  if (__builtin_cpu_supports("avx512bw")) out.emplace_back("avx512bw");
  if (__builtin_cpu_supports("avx512vl")) out.emplace_back("avx512vl");
  if (__builtin_cpu_supports("avx512dq")) out.emplace_back("avx512dq");
  if (__builtin_cpu_supports("avx512bf16")) out.emplace_back("avx512_bf16");
  if (__builtin_cpu_supports("amx-tile")) out.emplace_back("amx_tile");
#elif defined(__aarch64__)
  out.emplace_back("neon");
#endif
  return out;
}

std::vector<std::string> usableKernelNames() {
  std::vector<std::string> out;
#if defined(FERRUM_HAVE_AVX512)
  if (hasAvx512()) out.emplace_back("avx512");
#endif
#if defined(FERRUM_HAVE_AVX2)
  if (hasAvx2()) out.emplace_back("avx2");
#endif
#if defined(FERRUM_HAVE_NEON)
  out.emplace_back("neon");
#endif
  out.emplace_back("scalar");
  return out;
}

const KernelTable* kernelsByName(const std::string& name) {
  for (const std::string& usable : usableKernelNames()) {
    if (usable != name) continue;
#if defined(FERRUM_HAVE_AVX512)
    if (name == "avx512") return avx512Kernels();
#endif
#if defined(FERRUM_HAVE_AVX2)
    if (name == "avx2") return avx2Kernels();
#endif
#if defined(FERRUM_HAVE_NEON)
    if (name == "neon") return neonKernels();
#endif
    if (name == "scalar") return scalarKernels();
  }
  return nullptr;
}

int usableCpuCount() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int count = CPU_COUNT(&set);
    if (count > 0) return count;
  }
#endif
  unsigned count = std::thread::hardware_concurrency();
  return count > 0 ? static_cast<int>(count) : 1;
}

}  // namespace ferrum
