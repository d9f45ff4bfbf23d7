// Run-time CPU feature detection and the choice of kernel table.
#pragma once

#include <string>
#include <vector>

#include "kernels.h"

namespace ferrum {

/** Instruction-set features this CPU has that matter to us ("avx2", "avx512f", "avx512_bf16", "neon", ...). */
std::vector<std::string> cpuFeatures();

/** Names of the kernel tables this build can run on this CPU, best first; always ends with "scalar". */
std::vector<std::string> usableKernelNames();

/** The kernel table called `name`, or nullptr when this build or this CPU cannot run it. */
const KernelTable* kernelsByName(const std::string& name);

/** Number of CPUs this process may run on (affinity mask), at least 1. */
int usableCpuCount();

}  // namespace ferrum
