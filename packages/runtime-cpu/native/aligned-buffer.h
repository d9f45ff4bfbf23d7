// Large, 64-byte aligned, zero-initialized memory from mmap: pages are committed on first touch (a KV pool
// sized for the worst case costs nothing until used) and may be backed by transparent huge pages.
#pragma once

#include <cstddef>

namespace ferrum {

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  /** Maps `bytes` bytes; throws NativeError("out_of_memory") when the system refuses. */
  explicit AlignedBuffer(size_t bytes, const char* what);
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer&& other) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  void release();
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace ferrum
