// A small fixed-size thread pool. Work is split into numbered tasks whose boundaries never depend
// on the number of threads, so every kernel built on it gives bit-identical results for any
// `threads`.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hb_reference {

class ThreadPool {
public:
    // `threads` >= 1 counts the calling thread, which takes part in every run().
    explicit ThreadPool(int threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return static_cast<int>(workers_.size()) + 1; }

    // Calls task(index, worker) once for every index in [0, count), on any thread; `worker` in
    // [0, size()) identifies the thread, for per-thread scratch memory. Returns when all are done
    // and rethrows the first exception a task threw.
    void run(int64_t count, const std::function<void(int64_t index, int worker)>& task);

private:
    void serve(int worker);
    void take_tasks(int worker);

    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable wake_, finished_;
    const std::function<void(int64_t, int)>* task_ = nullptr;
    int64_t count_ = 0;
    std::atomic<int64_t> next_{0};
    int busy_workers_ = 0;
    uint64_t generation_ = 0;
    bool stopping_ = false;
    std::exception_ptr error_;
};

// Calls body(begin, end) over consecutive chunks of [0, n) of at least `grain` indices each.
template <class Body>
void parallel_for(ThreadPool& pool, int64_t n, int64_t grain, Body&& body) {
    if (n <= 0) return;
    constexpr int64_t max_chunks = 256;
    const int64_t chunk = std::max(grain, (n + max_chunks - 1) / max_chunks);
    const int64_t chunks = (n + chunk - 1) / chunk;
    pool.run(chunks, [&](int64_t i, int) { body(i * chunk, std::min(n, (i + 1) * chunk)); });
}

}  // namespace hb_reference
