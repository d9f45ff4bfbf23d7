#include "thread-pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace ferrum {
namespace {

// About 50-200 µs of spinning depending on the CPU's pause latency: long enough to bridge the gaps
// between the loops of one step, short enough not to hold cores between steps.
constexpr int kSpinIterations = 4000;

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace

ThreadPool::ThreadPool(int numThreads) : numThreads_(numThreads < 1 ? 1 : numThreads) {
  workers_.reserve(static_cast<size_t>(numThreads_ - 1));
  for (int index = 1; index < numThreads_; ++index) workers_.emplace_back([this, index] { workerLoop(index); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true, std::memory_order_release);
  }
  wake_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::runItems(int64_t count, Task task) {
  task_ = task;
  // The item counter has 32 bits: larger loops run as several.
  constexpr int64_t kMaxSegment = int64_t{1} << 31;
  for (int64_t offset = 0; offset < count; offset += kMaxSegment) {
    runSegment(offset, static_cast<uint32_t>(count - offset < kMaxSegment ? count - offset : kMaxSegment));
  }
}

void ThreadPool::runSegment(int64_t offset, uint32_t count) {
  offset_ = offset;
  done_.store(0, std::memory_order_relaxed);
  const uint32_t generation = ++generation_;
  bool anyAsleep;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    state_.store((static_cast<uint64_t>(generation) << 32) | count, std::memory_order_release);
    anyAsleep = sleepers_ > 0;
  }
  if (anyAsleep) wake_.notify_all();
  workOn(generation, 0);
  for (int spins = 0; done_.load(std::memory_order_acquire) != count; ++spins) {
    if (spins < kSpinIterations) {
      cpuRelax();
    } else {
      std::this_thread::yield();
    }
  }
}

void ThreadPool::workOn(uint32_t generation, int thread) {
  uint64_t state = state_.load(std::memory_order_acquire);
  for (;;) {
    if (static_cast<uint32_t>(state >> 32) != generation) return;
    const uint32_t remaining = static_cast<uint32_t>(state);
    if (remaining == 0) return;
    if (!state_.compare_exchange_weak(state, state - 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
      continue;  // `state` now holds the fresh value
    }
    // The claim succeeded while `generation` was current, so the caller is still waiting for this item
    // and task_ / offset_ are this loop's.
    task_.run(task_.context, offset_ + remaining - 1, thread);
    done_.fetch_add(1, std::memory_order_release);
    state = state_.load(std::memory_order_acquire);
  }
}

void ThreadPool::workerLoop(int index) {
  uint32_t seen = 0;
  for (;;) {
    uint32_t current = currentGeneration();
    for (int spins = 0; current == seen && spins < kSpinIterations; ++spins) {
      if (stop_.load(std::memory_order_acquire)) return;
      cpuRelax();
      current = currentGeneration();
    }
    if (current == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      ++sleepers_;
      wake_.wait(lock, [&] { return stop_.load(std::memory_order_acquire) || currentGeneration() != seen; });
      --sleepers_;
      current = currentGeneration();
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = current;
    workOn(current, index);
  }
}

}  // namespace ferrum
