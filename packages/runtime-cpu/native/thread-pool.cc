#include "thread-pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace ferrum {
namespace {

// About 50-200 µs of spinning depending on the CPU's pause latency: long enough to bridge the gaps
// between the loops of one step, short enough not to steal cores from the JS thread between steps.
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
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::runTask(const Task& task) {
  if (numThreads_ == 1) {
    task.call(task.context, 0);
    return;
  }
  task_ = task;
  pending_.store(numThreads_ - 1, std::memory_order_relaxed);
  bool anyAsleep;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
    anyAsleep = sleepers_ > 0;
  }
  if (anyAsleep) wake_.notify_all();
  task.call(task.context, 0);
  for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins < kSpinIterations) {
      cpuRelax();
    } else {
      std::this_thread::yield();
    }
  }
}

void ThreadPool::workerLoop(int index) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t current = generation_.load(std::memory_order_acquire);
    for (int spins = 0; current == seen && spins < kSpinIterations; ++spins) {
      cpuRelax();
      current = generation_.load(std::memory_order_acquire);
    }
    if (current == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      ++sleepers_;
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      --sleepers_;
      current = generation_.load(std::memory_order_acquire);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = current;
    task_.call(task_.context, index);
    pending_.fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace ferrum
