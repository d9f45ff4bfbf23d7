// What probe() reports; never throws (failures become available = false with a reason).
#pragma once

#include <cstddef>
#include <string>

namespace ferrum {

struct DeviceProbe {
  bool available = false;
  std::string reason;
  std::string name;
  int major = 0, minor = 0, multiProcessors = 0, driverVersion = 0, runtimeVersion = 0;
  size_t totalBytes = 0, freeBytes = 0;
};

DeviceProbe probeDevice(int device);

/** True when this build holds machine code (or PTX) the device can run; `why` says what is missing. */
bool kernelsRunOn(int device, std::string* why);

}  // namespace ferrum
