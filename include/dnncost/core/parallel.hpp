#pragma once
/// @file parallel.hpp
/// A small fixed-size thread pool and a blocking parallel_for over an index range.
/// Work is split into contiguous chunks in a fixed way, so results that are written per index
/// never depend on the number of threads.
///
/// The pool's larger members are defined in parallel_impl.hpp: compiled into dnncost::compiled in
/// compiled mode (core/config.hpp), included at the end of this header otherwise.
#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>

namespace dnncost {

/// Fixed-size pool; `parallel_for` blocks until every index ran. Exceptions thrown by the body
/// are captured and the first one is rethrown in the calling thread.
class ThreadPool {
public:
    /// Most workers a pool starts: a huge request (e.g. a -1 wrapped to SIZE_MAX) would exhaust
    /// the system's thread limit. Fixed, not tied to the core count, because training shards
    /// batches by pool size: a given request must give the same numbers on every machine.
    static constexpr std::size_t max_threads = 1024;
    /// The pool size a request gives: 0 -> hardware concurrency, capped at max_threads.
    static std::size_t size_for(std::size_t threads) {
        if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
        return std::min(threads, max_threads);
    }
    /// @param threads number of workers including the caller (see size_for)
    /// @throws error when the system refuses a thread (the workers already started are joined)
    explicit ThreadPool(std::size_t threads = 0);
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;
    ~ThreadPool() { stop_and_join(); }

    std::size_t size() const { return m_size; }

    /// Run body(i) for i in [begin, end). Blocks until done.
    void parallel_for(std::size_t begin, std::size_t end, const std::function<void(std::size_t)>& body);

private:
    void stop_and_join();
    void run_items();
    void worker_loop();

    std::size_t m_size = 1;
    std::vector<std::thread> m_workers;
    std::mutex m_mutex;
    std::condition_variable m_cv, m_done_cv;
    const std::function<void(std::size_t)>* m_body = nullptr;
    std::size_t m_next = 0, m_end = 0, m_active = 0, m_generation = 0;
    std::exception_ptr m_error;
    bool m_stop = false;
};

}  // namespace dnncost

#if !defined(DNNCOST_COMPILED)
#include <dnncost/core/parallel_impl.hpp>
#endif
