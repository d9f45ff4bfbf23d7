// Owning handles for device and pinned host allocations; freed on destruction, never reallocated per step.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "cuda-check.h"

namespace ferrum {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes > 0) FERRUM_CUDA(cudaMalloc(&ptr_, bytes));
  }
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept { swap(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    swap(other);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  template <typename T = void>
  T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  void swap(DeviceBuffer& other) noexcept {
    std::swap(ptr_, other.ptr_);
    std::swap(bytes_, other.bytes_);
  }
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

/** Page-locked host memory; `mapped` also makes it addressable from kernels (the swap tier). */
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(size_t bytes, bool mapped) : bytes_(bytes) {
    if (bytes > 0) FERRUM_CUDA(cudaHostAlloc(&ptr_, bytes, mapped ? cudaHostAllocMapped : cudaHostAllocDefault));
    if (mapped && ptr_ != nullptr) FERRUM_CUDA(cudaHostGetDevicePointer(&device_, ptr_, 0));
  }
  ~PinnedBuffer() {
    if (ptr_ != nullptr) cudaFreeHost(ptr_);
  }
  PinnedBuffer(PinnedBuffer&& other) noexcept { swap(other); }
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    swap(other);
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  template <typename T = void>
  T* as() const { return static_cast<T*>(ptr_); }
  /** Device alias of mapped memory (null unless mapped). */
  template <typename T = void>
  T* device() const { return static_cast<T*>(device_); }
  size_t bytes() const { return bytes_; }

 private:
  void swap(PinnedBuffer& other) noexcept {
    std::swap(ptr_, other.ptr_);
    std::swap(device_, other.device_);
    std::swap(bytes_, other.bytes_);
  }
  void* ptr_ = nullptr;
  void* device_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace ferrum
