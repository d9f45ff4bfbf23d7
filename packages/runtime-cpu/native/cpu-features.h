// Run-time CPU feature detection and the choice of kernel table.
#pragma once

#include <string>
#include <vector>

#include "kernels.h"

namespace ferrum {

/** Instruction-set features this CPU has that matter to us ("avx2", "avx512f", "avx512_bf16", "neon", ...). */
std::vector<std::string> cpuFeatures();

/**
 * Names of the kernel tables this build can run on this CPU, best first: those with bf16 products ("amx",
 * "avx512bf16"), then the f32 ones; always ends with "scalar".
 */
std::vector<std::string> usableKernelNames();

/**
 * The table a model gets when none is named: the best usable one with bf16 products if `bf16Products` and this CPU
 * has one, else the best f32 one; only tables whose kMultiple divides `kGranule` (every k of the model a multiple of
 * it; 0: any shape).
 */
const KernelTable* defaultKernels(bool bf16Products, int kGranule);

/** The kernel table called `name`, or nullptr when this build or this CPU cannot run it. */
const KernelTable* kernelsByName(const std::string& name);

/** Number of CPUs this process may run on (affinity mask), at least 1. */
int usableCpuCount();

}  // namespace ferrum
