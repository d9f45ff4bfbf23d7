#include "aligned-buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "native-error.h"

namespace ferrum {

AlignedBuffer::AlignedBuffer(size_t bytes, const char* what) : bytes_(bytes) {
  if (bytes == 0) return;
  void* mapped = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) {
    bytes_ = 0;
    throw NativeError("out_of_memory", std::string("cannot allocate ") + std::to_string(bytes) + " bytes for " +
                                           what + ": " + std::strerror(errno));
  }
#if defined(MADV_HUGEPAGE)
  // Fewer TLB misses when streaming weights; advisory, so failure is fine.
  if (bytes >= (size_t{2} << 20)) madvise(mapped, bytes, MADV_HUGEPAGE);
#endif
  data_ = mapped;
}

AlignedBuffer::~AlignedBuffer() { release(); }

AlignedBuffer::AlignedBuffer(AlignedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void AlignedBuffer::release() {
  if (data_ != nullptr) munmap(data_, bytes_);
  data_ = nullptr;
  bytes_ = 0;
}

}  // namespace ferrum
