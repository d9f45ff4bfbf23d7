// Parses the TS side's native load spec (see src/native-addon.ts, NativeLoadSpec) into a RunnerConfig.
#pragma once

#include <napi.h>

#include "model-runner.h"

namespace ferrum {

RunnerConfig parseLoadSpec(const Napi::Object& spec);

}  // namespace ferrum
