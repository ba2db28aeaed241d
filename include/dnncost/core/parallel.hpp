#pragma once
/// @file parallel.hpp
/// A small fixed-size thread pool and a blocking parallel_for over an index range.
/// Work is split into contiguous chunks in a fixed way, so results that are written per index
/// never depend on the number of threads.
#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

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
    explicit ThreadPool(std::size_t threads = 0) {
        threads = size_for(threads);
        m_size = threads;
        std::size_t i = 1;
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
        try {
            for (; i < threads; ++i) m_workers.emplace_back([this] { worker_loop(); });
        } catch (const std::exception& e) {
            // running workers must be stopped first: the members' destructors would otherwise
            // block in ~condition_variable or call std::terminate
            stop_and_join();
            raise<error>("ThreadPool: cannot start thread ", i + 1, " of ", threads, ": ", e.what());
        }
#else
        for (; i < threads; ++i) m_workers.emplace_back([this] { worker_loop(); });  // a refused thread aborts
#endif
    }
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;
    ~ThreadPool() { stop_and_join(); }

    std::size_t size() const { return m_size; }

    /// Run body(i) for i in [begin, end). Blocks until done.
    void parallel_for(std::size_t begin, std::size_t end, const std::function<void(std::size_t)>& body) {
        if (end <= begin) return;
        if (m_size == 1 || end - begin == 1) {
            for (std::size_t i = begin; i < end; ++i) body(i);
            return;
        }
        std::unique_lock lock(m_mutex);
        m_body = &body;
        m_next = begin;
        m_end = end;
        m_active = 0;
        m_error = nullptr;
        ++m_generation;
        lock.unlock();
        m_cv.notify_all();
        run_items();
        lock.lock();
        m_done_cv.wait(lock, [this] { return m_active == 0 && m_next >= m_end; });
        m_body = nullptr;
        if (m_error) std::rethrow_exception(std::exchange(m_error, nullptr));
    }

private:
    void stop_and_join() {
        {
            std::lock_guard lock(m_mutex);
            m_stop = true;
        }
        m_cv.notify_all();
        for (auto& w : m_workers)
            if (w.joinable()) w.join();
        m_workers.clear();
    }
    void run_items() {
        std::unique_lock lock(m_mutex);
        while (m_body && m_next < m_end) {
            const std::size_t i = m_next++;
            ++m_active;
            const auto* body = m_body;
            lock.unlock();
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
            try {
                (*body)(i);
            } catch (...) {
                std::lock_guard g(m_mutex);
                if (!m_error) m_error = std::current_exception();
            }
#else
            (*body)(i);                                                              // without exceptions an error aborts where it happens
#endif
            lock.lock();
            --m_active;
        }
        if (m_active == 0) m_done_cv.notify_all();
    }
    void worker_loop() {
        std::size_t seen = 0;
        for (;;) {
            {
                std::unique_lock lock(m_mutex);
                m_cv.wait(lock, [&] { return m_stop || (m_generation != seen && m_body); });
                if (m_stop) return;
                seen = m_generation;
            }
            run_items();
        }
    }

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
