#include "cpu-features.h"

#include <thread>

#include "amx-tiles.h"

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
bool hasAvx512Bf16() { return hasAvx512() && __builtin_cpu_supports("avx512bf16"); }
// Asks Linux for the tile state: called once (usableTables), before any model's threads run AMX.
bool hasAmx() {
  return hasAvx512() && __builtin_cpu_supports("amx-tile") && __builtin_cpu_supports("amx-bf16") &&
         requestAmxTileState();
}
#endif

// The tables this build can run on this CPU, best first; detected once (the CPU does not change under a process).
const std::vector<const KernelTable*>& usableTables() {
  static const std::vector<const KernelTable*> tables = [] {
    std::vector<const KernelTable*> out;
#if defined(FERRUM_HAVE_AMX)
    if (hasAmx()) out.push_back(amxKernels());
#endif
#if defined(FERRUM_HAVE_AVX512BF16)
    if (hasAvx512Bf16()) out.push_back(avx512Bf16Kernels());
#endif
#if defined(FERRUM_HAVE_AVX512)
    if (hasAvx512()) out.push_back(avx512Kernels());
#endif
#if defined(FERRUM_HAVE_AVX2)
    if (hasAvx2()) out.push_back(avx2Kernels());
#endif
#if defined(FERRUM_HAVE_NEON)
    out.push_back(neonKernels());
#endif
    out.push_back(scalarKernels());
    return out;
  }();
  return tables;
}

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
  if (__builtin_cpu_supports("amx-bf16")) out.emplace_back("amx_bf16");
#elif defined(__aarch64__)
  out.emplace_back("neon");
#endif
  return out;
}

std::vector<std::string> usableKernelNames() {
  std::vector<std::string> out;
  for (const KernelTable* table : usableTables()) out.emplace_back(table->name);
  return out;
}

const KernelTable* defaultKernels(bool bf16Products, int kGranule) {
  const KernelTable* f32 = nullptr;
  for (const KernelTable* table : usableTables()) {
    if (kGranule % table->kMultiple != 0) continue;
    if (table->bf16Products == bf16Products) return table;
    if (f32 == nullptr && !table->bf16Products) f32 = table;
  }
  return f32;  // bf16 products asked for, and no table here has them
}

const KernelTable* kernelsByName(const std::string& name) {
  for (const KernelTable* table : usableTables()) {
    if (name == table->name) return table;
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
