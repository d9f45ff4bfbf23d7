// A thread that runs tasks one at a time in submission order: the executor's worker (KV transfers and step
// launches stay ordered as the KvStorage contract requires) and its completion thread; the JS thread never
// waits on the GPU.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace ferrum {

class TaskQueue {
 public:
  TaskQueue();
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
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ferrum
