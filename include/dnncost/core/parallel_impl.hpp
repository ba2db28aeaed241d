#pragma once
/// @file parallel_impl.hpp
/// The definitions of parallel.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by parallel.hpp in header-only mode.
#include <dnncost/core/parallel.hpp>

namespace dnncost {

DNNCOST_FUNC ThreadPool::ThreadPool(std::size_t threads) {
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

DNNCOST_FUNC void ThreadPool::parallel_for(std::size_t begin, std::size_t end,
                                           const std::function<void(std::size_t)>& body) {
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

DNNCOST_FUNC void ThreadPool::stop_and_join() {
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_cv.notify_all();
    for (auto& w : m_workers)
        if (w.joinable()) w.join();
    m_workers.clear();
}

DNNCOST_FUNC void ThreadPool::run_items() {
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

DNNCOST_FUNC void ThreadPool::worker_loop() {
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

}  // namespace dnncost
