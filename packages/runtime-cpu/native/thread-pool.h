// A fixed pool of worker threads for data-parallel loops inside one forward step. The thread that calls
// run() works too (as index 0), so a pool of N runs N - 1 threads of its own. Between tasks, workers spin
// briefly (steps dispatch dozens of loops back to back) and then sleep on a condition variable.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace ferrum {

class ThreadPool {
 public:
  explicit ThreadPool(int numThreads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return numThreads_; }

  /** Runs task(threadIndex) once on each of the size() threads and returns when all have finished.
   * Not reentrant: one caller at a time (the model's mutex guarantees it). */
  template <class F>
  void run(F&& task) {
    Task erased{&task, [](void* context, int index) { (*static_cast<F*>(context))(index); }};
    runTask(erased);
  }

  /** Splits [0, count) into contiguous near-equal ranges, one per thread: body(begin, end, threadIndex). */
  template <class F>
  void parallelFor(int64_t count, F&& body) {
    if (count <= 0) return;
    const int64_t parts = count < numThreads_ ? count : numThreads_;
    if (parts == 1) {
      body(int64_t{0}, count, 0);
      return;
    }
    run([&](int index) {
      if (index >= parts) return;
      const int64_t begin = count * index / parts;
      const int64_t end = count * (index + 1) / parts;
      body(begin, end, index);
    });
  }

  /** Hands out items [0, count) one at a time to whichever thread is free: body(item, threadIndex).
   * For items of very different cost (attention rows of different lengths). */
  template <class F>
  void forEachDynamic(int64_t count, F&& body) {
    if (count <= 0) return;
    std::atomic<int64_t> next{0};
    run([&](int index) {
      for (int64_t item = next.fetch_add(1, std::memory_order_relaxed); item < count;
           item = next.fetch_add(1, std::memory_order_relaxed)) {
        body(item, index);
      }
    });
  }

 private:
  struct Task {
    void* context;
    void (*call)(void* context, int index);
  };

  void runTask(const Task& task);
  void workerLoop(int index);

  const int numThreads_;
  std::vector<std::thread> workers_;
  // Published by the release increment of generation_, read after an acquire load of it.
  Task task_{nullptr, nullptr};
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
  int sleepers_ = 0;  // guarded by mutex_
};

}  // namespace ferrum
