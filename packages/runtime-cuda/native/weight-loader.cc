#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "cuda-check.h"
#include "device-memory.h"
#include "weight-plan.h"

namespace ferrum {
namespace {

constexpr size_t kChunkBytes = 32u << 20;

class FileSet {
 public:
  explicit FileSet(const std::vector<std::string>& paths) : paths_(paths), fds_(paths.size(), -1) {}
  ~FileSet() {
    for (int fd : fds_) {
      if (fd >= 0) close(fd);
    }
  }
  int fd(int index) {
    if (fds_[index] < 0) {
      fds_[index] = open(paths_[index].c_str(), O_RDONLY | O_CLOEXEC);
      if (fds_[index] < 0) throw NativeError("invalid_checkpoint", "cannot open " + paths_[index] + ": " + strerror(errno));
    }
    return fds_[index];
  }
  void readFully(int index, void* dst, size_t bytes, uint64_t offset) {
    char* out = static_cast<char*>(dst);
    while (bytes > 0) {
      const ssize_t got = pread(fd(index), out, bytes, static_cast<off_t>(offset));
      if (got <= 0) {
        throw NativeError("invalid_checkpoint", "short read in " + paths_[index] + " at byte " + std::to_string(offset) +
                                                    (got < 0 ? std::string(": ") + strerror(errno) : std::string()));
      }
      out += got;
      offset += static_cast<uint64_t>(got);
      bytes -= static_cast<size_t>(got);
    }
  }

 private:
  const std::vector<std::string>& paths_;
  std::vector<int> fds_;
};

size_t elementBytes(SourceDtype dtype) { return dtype == SourceDtype::kF32 ? 4 : 2; }

}  // namespace

void loadWeights(const WeightPlan& plan, char* arena, cudaStream_t stream) {
  if (!plan.loads.empty()) {
    FileSet files(plan.files);
    PinnedBuffer staging[2] = {PinnedBuffer(kChunkBytes, false), PinnedBuffer(kChunkBytes, false)};
    DeviceBuffer scratch[2] = {DeviceBuffer(kChunkBytes), DeviceBuffer(kChunkBytes)};
    cudaEvent_t done[2];
    FERRUM_CUDA(cudaEventCreateWithFlags(&done[0], cudaEventDisableTiming));
    FERRUM_CUDA(cudaEventCreateWithFlags(&done[1], cudaEventDisableTiming));
    try {
      int turn = 0;
      for (const TensorLoad& load : plan.loads) {
        const size_t srcBytes = elementBytes(load.dtype);
        for (uint64_t offset = 0; offset < load.byteLength; offset += kChunkBytes) {
          const size_t bytes = static_cast<size_t>(std::min<uint64_t>(kChunkBytes, load.byteLength - offset));
          // The copy that last read this staging buffer must be done before the next pread overwrites it.
          FERRUM_CUDA(cudaEventSynchronize(done[turn]));
          files.readFully(load.fileIndex, staging[turn].as(), bytes, load.fileOffset + offset);
          char* dst = arena + load.dstOffset + offset / srcBytes * 2;
          if (load.dtype == SourceDtype::kBf16) {
            FERRUM_CUDA(cudaMemcpyAsync(dst, staging[turn].as(), bytes, cudaMemcpyHostToDevice, stream));
          } else {
            FERRUM_CUDA(cudaMemcpyAsync(scratch[turn].as(), staging[turn].as(), bytes, cudaMemcpyHostToDevice, stream));
            launchConvertToBf16(scratch[turn].as(), load.dtype, reinterpret_cast<bf16*>(dst), bytes / srcBytes, stream);
          }
          FERRUM_CUDA(cudaEventRecord(done[turn], stream));
          turn ^= 1;
        }
      }
      FERRUM_CUDA(cudaStreamSynchronize(stream));
    } catch (...) {
      cudaStreamSynchronize(stream);
      cudaEventDestroy(done[0]);
      cudaEventDestroy(done[1]);
      throw;
    }
    cudaEventDestroy(done[0]);
    cudaEventDestroy(done[1]);
  }
  for (size_t i = 0; i < plan.fills.size(); i++) {
    const TensorFill& fill = plan.fills[i];
    bf16* dst = reinterpret_cast<bf16*>(arena + fill.dstOffset);
    if (fill.scale > 0.f) {
      launchFillUniform(dst, fill.count, plan.seed * 0x100000001B3ull + i, fill.scale, stream);
    } else {
      launchFillConstant(dst, fill.count, fill.value, stream);
    }
  }
  FERRUM_CUDA(cudaStreamSynchronize(stream));
}

}  // namespace ferrum
