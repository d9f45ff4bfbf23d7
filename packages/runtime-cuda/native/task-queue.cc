#include "task-queue.h"

#include <utility>

#include "host-spin.h"

namespace ferrum {

TaskQueue::TaskQueue(std::chrono::microseconds spinAfterTask)
    : spinAfterTask_(spinAfterTask), thread_([this] { run(); }) {}

TaskQueue::~TaskQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void TaskQueue::push(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  queued_.fetch_add(1, std::memory_order_release);
  wake_.notify_one();
}

void TaskQueue::run() {
  for (;;) {
    std::function<void()> task;
    if (spinAfterTask_.count() > 0) {
      const auto until = std::chrono::steady_clock::now() + spinAfterTask_;
      while (queued_.load(std::memory_order_acquire) == 0 && !stopping_.load(std::memory_order_relaxed) &&
             std::chrono::steady_clock::now() < until) {
        cpuRelax();
      }
    }
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
      queued_.fetch_sub(1, std::memory_order_relaxed);
    }
    task();  // tasks catch their own exceptions
  }
}

}  // namespace ferrum
