// A thread that runs tasks one at a time in submission order: the executor's worker (KV transfers and step
// launches stay ordered as the KvStorage contract requires) and its completion thread; the JS thread never
// waits on the GPU.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace ferrum {

class TaskQueue {
 public:
  /**
   * `spinAfterTask`: how long the thread polls for the next task after running one before it sleeps on the
   * condition variable (0: sleeps at once).
   */
  explicit TaskQueue(std::chrono::microseconds spinAfterTask = std::chrono::microseconds(0));
  /** Runs what is queued, then joins. */
  ~TaskQueue();
  TaskQueue(const TaskQueue&) = delete;
  TaskQueue& operator=(const TaskQueue&) = delete;

  void push(std::function<void()> task);

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  std::atomic<int> queued_{0};
  std::atomic<bool> stopping_{false};
  const std::chrono::microseconds spinAfterTask_;
  std::thread thread_;
};

}  // namespace ferrum
