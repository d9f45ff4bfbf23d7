// FERRUM_CUDA_* switches that turn a path off for measurement or to rule it out: set to "0", the path is off.
#pragma once

#include <cstdlib>
#include <cstring>

namespace ferrum {

/** False when the environment variable `name` is "0"; true when it is unset or anything else. */
inline bool switchedOn(const char* name) {
  const char* setting = std::getenv(name);
  return setting == nullptr || std::strcmp(setting, "0") != 0;
}

}  // namespace ferrum
