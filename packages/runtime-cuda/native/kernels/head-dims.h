// The head dims the decode attention and RoPE kernels are instantiated for, and the step from a model's run-time
// head dim to an instantiation. The model runner refuses other head dims at load (attentionSupportsHeadDim).
#pragma once

#include <string>
#include <type_traits>

#include "../native-error.h"

namespace ferrum {

/** Whether the decode attention and RoPE kernels are built for `headDim`. */
constexpr bool headDimBuilt(int headDim) {
  return headDim == 16 || headDim == 32 || headDim == 64 || headDim == 128 || headDim == 256;
}

/** Calls visit(std::integral_constant<int, headDim>{}) for a built head dim; throws, naming `kernel`, for others. */
template <typename Visit>
void withHeadDim(int headDim, const char* kernel, Visit&& visit) {
  switch (headDim) {
    case 16: return visit(std::integral_constant<int, 16>{});
    case 32: return visit(std::integral_constant<int, 32>{});
    case 64: return visit(std::integral_constant<int, 64>{});
    case 128: return visit(std::integral_constant<int, 128>{});
    case 256: return visit(std::integral_constant<int, 256>{});
    default:
      throw NativeError("unsupported_architecture",
                        std::string(kernel) + ": unsupported head dim " + std::to_string(headDim));
  }
}

}  // namespace ferrum
