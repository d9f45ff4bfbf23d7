// A fixed pool of worker threads for the data-parallel loops of one forward step. Loops are split into
// items that threads claim one at a time from a shared counter, and the caller works too (as thread 0).
// The caller waits only for items to finish, never for every worker to show up, so a worker the OS has
// descheduled (an oversubscribed machine, the JS thread needing a core) costs at most the item it holds.
// Between loops workers spin briefly (a step runs dozens back to back), then sleep.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace ferrum {

class ThreadPool {
 public:
  explicit ThreadPool(int numThreads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /** Threads including the caller; thread indexes passed to bodies are in [0, size()). */
  int size() const { return numThreads_; }

  /** Covers [0, count) with contiguous ranges, a few per thread: body(begin, end, threadIndex).
   * Not reentrant: one caller at a time (the model's mutex guarantees it). */
  template <class F>
  void parallelFor(int64_t count, F&& body) {
    if (count <= 0) return;
    const int64_t parts = static_cast<int64_t>(numThreads_) * kRangesPerThread;
    const int64_t chunk = (count + parts - 1) / parts;
    const int64_t items = (count + chunk - 1) / chunk;
    if (numThreads_ == 1 || items == 1) {
      body(int64_t{0}, count, 0);
      return;
    }
    auto range = [&](int64_t item, int thread) {
      const int64_t begin = item * chunk;
      body(begin, begin + chunk < count ? begin + chunk : count, thread);
    };
    runItems(items, Task{&range, &call<decltype(range)>});
  }

  /** Runs body(item, threadIndex) for every item in [0, count), one item per claim (items of very
   * different cost, like attention rows of different lengths). */
  template <class F>
  void forEachDynamic(int64_t count, F&& body) {
    if (count <= 0) return;
    if (numThreads_ == 1 || count == 1) {
      for (int64_t item = 0; item < count; ++item) body(item, 0);
      return;
    }
    runItems(count, Task{&body, &call<F>});
  }

 private:
  // Enough ranges per thread to even out a slow thread, few enough that claiming stays cheap.
  static constexpr int64_t kRangesPerThread = 4;

  struct Task {
    void* context;
    void (*run)(void* context, int64_t item, int thread);
  };
  template <class F>
  static void call(void* context, int64_t item, int thread) {
    (*static_cast<std::remove_reference_t<F>*>(context))(item, thread);
  }

  void runItems(int64_t count, Task task);
  void runSegment(int64_t offset, uint32_t count);
  /** Claims and runs items of loop `generation` until none are left or a newer loop started. */
  void workOn(uint32_t generation, int thread);
  void workerLoop(int index);
  uint32_t currentGeneration() const { return static_cast<uint32_t>(state_.load(std::memory_order_acquire) >> 32); }

  const int numThreads_;
  std::vector<std::thread> workers_;
  // The current loop: generation (high 32 bits) and number of unclaimed items (low 32 bits). A claim
  // decrements it with a compare-and-swap, so it is tied to its loop and needs nothing else to decide
  // (items go from last to first). task_ and offset_ are written before the loop is published and read
  // only after a successful claim, while the caller still waits for that item.
  std::atomic<uint64_t> state_{0};
  std::atomic<int64_t> done_{0};
  Task task_{nullptr, nullptr};
  int64_t offset_ = 0;
  uint32_t generation_ = 0;  // caller only
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
  int sleepers_ = 0;  // guarded by mutex_
};

}  // namespace ferrum
