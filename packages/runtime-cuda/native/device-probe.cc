#include "device-probe.h"

#include <cuda_runtime.h>

namespace ferrum {

DeviceProbe probeDevice(int device) {
  DeviceProbe p;
  cudaDriverGetVersion(&p.driverVersion);
  cudaRuntimeGetVersion(&p.runtimeVersion);
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    p.reason = std::string("no usable CUDA driver or device (") + cudaGetErrorString(status) + ")";
    return p;
  }
  if (count <= device) {
    p.reason = "no CUDA device " + std::to_string(device) + " (found " + std::to_string(count) + ")";
    return p;
  }
  cudaDeviceProp props{};
  status = cudaGetDeviceProperties(&props, device);
  if (status != cudaSuccess) {
    p.reason = std::string("cannot read device properties: ") + cudaGetErrorString(status);
    return p;
  }
  p.name = props.name;
  p.major = props.major;
  p.minor = props.minor;
  p.multiProcessors = props.multiProcessorCount;
  p.totalBytes = props.totalGlobalMem;
  if (props.major < 8) {
    p.reason = p.name + " has compute capability " + std::to_string(p.major) + "." + std::to_string(p.minor) +
               "; runtime-cuda needs 8.0 or newer (bf16)";
    return p;
  }
  if (!kernelsRunOn(device, &p.reason)) return p;
  status = cudaSetDevice(device);
  if (status == cudaSuccess) status = cudaMemGetInfo(&p.freeBytes, &p.totalBytes);
  if (status != cudaSuccess) {
    p.reason = std::string("cannot create a CUDA context: ") + cudaGetErrorString(status);
    return p;
  }
  p.available = true;
  return p;
}

}  // namespace ferrum
