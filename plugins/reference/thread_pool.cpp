#include "thread_pool.hpp"

namespace hb_reference {

ThreadPool::ThreadPool(int threads) {
    for (int w = 1; w < threads; ++w) workers_.emplace_back([this, w] { serve(w); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
}

void ThreadPool::run(int64_t count, const std::function<void(int64_t, int)>& task) {
    if (count <= 0) return;
    if (count == 1 || workers_.empty()) {
        for (int64_t i = 0; i < count; ++i) task(i, 0);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mutex_);
        task_ = &task;
        count_ = count;
        next_ = 0;
        busy_workers_ = static_cast<int>(workers_.size());
        error_ = nullptr;
        ++generation_;
    }
    wake_.notify_all();
    take_tasks(0);
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [this] { return busy_workers_ == 0; });
    task_ = nullptr;
    if (error_) std::rethrow_exception(error_);
}

void ThreadPool::serve(int worker) {
    uint64_t seen = 0;
    for (;;) {
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
            if (stopping_) return;
            seen = generation_;
        }
        take_tasks(worker);
        std::lock_guard<std::mutex> lock(mutex_);
        if (--busy_workers_ == 0) finished_.notify_one();
    }
}

void ThreadPool::take_tasks(int worker) {
    for (int64_t i = next_++; i < count_; i = next_++) {
        try {
            (*task_)(i, worker);
        } catch (...) {
            std::lock_guard<std::mutex> lock(mutex_);
            if (!error_) error_ = std::current_exception();
        }
    }
}

}  // namespace hb_reference
