// The head dims the decode attention and RoPE kernels are instantiated for, and the step from a model's run-time
// head dim to an instantiation. The model runner refuses other head dims at load (BuiltHeadDims::contains).
#pragma once

#include <string>
#include <type_traits>

#include "../native-error.h"

namespace ferrum {

/** A list of head dims: membership, and dispatch to a compile-time instantiation, from the one list. */
template <int... Dims>
struct HeadDimList {
  static constexpr bool contains(int headDim) { return ((headDim == Dims) || ...); }
  /** The list for messages: "16, 32, ...". */
  static std::string names() {
    std::string out;
    ((out += (out.empty() ? "" : ", ") + std::to_string(Dims)), ...);
    return out;
  }
  /** Calls f(std::integral_constant<int, headDim>{}) when headDim is listed; returns whether it was. */
  template <typename F>
  static bool visit(int headDim, F&& f) {
    return ((headDim == Dims ? (f(std::integral_constant<int, Dims>{}), true) : false) || ...);
  }
};

/** The head dims the decode attention and RoPE kernels are built for. */
using BuiltHeadDims = HeadDimList<16, 32, 64, 128, 256>;

/** The refusal of a head dim no kernel is built for: "<who> supports head dims 16, 32, ..., not <headDim>". */
inline NativeError unsupportedHeadDim(const std::string& who, int headDim) {
  return NativeError("unsupported_architecture",
                     who + " supports head dims " + BuiltHeadDims::names() + ", not " + std::to_string(headDim));
}

/** Calls visit(std::integral_constant<int, headDim>{}) for a built head dim; throws, naming `kernel`, for others. */
template <typename Visit>
void withHeadDim(int headDim, const char* kernel, Visit&& visit) {
  if (!BuiltHeadDims::visit(headDim, visit)) throw unsupportedHeadDim(kernel, headDim);
}

}  // namespace ferrum
