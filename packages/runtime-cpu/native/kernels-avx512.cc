// AVX-512 (F, BW, VL, DQ) kernels. Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c;
// only called after cpu-features.cc saw those features at run time.
#include "simd-avx512.h"

namespace ferrum {

const KernelTable* avx512Kernels() {
  static const KernelTable table = kernels::makeTable<V512>("avx512");
  return &table;
}

}  // namespace ferrum
