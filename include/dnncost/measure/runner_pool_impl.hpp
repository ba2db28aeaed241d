#pragma once
/// @file runner_pool_impl.hpp
/// The definitions of runner_pool.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by runner_pool.hpp in header-only mode.
#include <dnncost/measure/runner_pool.hpp>

namespace dnncost::measure {

DNNCOST_FUNC RunnerPool::RunnerPool(const std::vector<std::string>& commands, PoolOptions options)
    : m_options(options) {
    if (commands.empty()) raise<config_error>("runner pool: no runner command");
    if (options.retries < 0) raise<config_error>("runner pool: negative retry count ", options.retries);
    if (options.timeout.count() <= 0) raise<config_error>("runner pool: the timeout must be positive");
    for (const auto& c : commands) m_runners.push_back(std::make_unique<Runner>(c, options.runner));
}

DNNCOST_FUNC auto RunnerPool::run(std::vector<Request> requests, const OnDone& on_done) -> std::vector<Outcome> {
    for (auto& r : requests) r.id = ++m_next_id;
    std::vector<Outcome> outcomes(requests.size());
    std::atomic<std::size_t> next{0};
    std::atomic<bool> stop{false};
    std::mutex done_mutex;
    std::exception_ptr error;
    const auto work = [&](Runner& runner) {
        for (;;) {
            if (stop.load()) return;
            const std::size_t i = next.fetch_add(1);
            if (i >= requests.size()) return;
            Outcome o;
            for (int attempt = 0; attempt <= m_options.retries; ++attempt) {
                o = runner.measure(requests[i], m_options.timeout);
                o.attempts = attempt + 1;
                if (o.ok() || o.failure == Failure::start_failed) break;
            }
            const std::lock_guard lock(done_mutex);
            if (m_device.empty()) m_device = runner.device();
            if (stop.load()) return;
            if (o.failure == Failure::start_failed) {
                error = std::make_exception_ptr(
                    config_error("runner '" + runner.command() + "' cannot be started: " + o.detail));
                stop = true;
                return;
            }
            outcomes[i] = o;
            try {
                if (on_done) on_done(i, outcomes[i]);
            } catch (...) {
                error = std::current_exception();
                stop = true;
                return;
            }
        }
    };
    if (m_runners.size() == 1 || requests.size() <= 1) {
        work(*m_runners.front());
    } else {
        std::vector<std::thread> threads;
        threads.reserve(m_runners.size());
        for (auto& r : m_runners) threads.emplace_back(work, std::ref(*r));
        for (auto& t : threads) t.join();
    }
    if (error) std::rethrow_exception(error);
    return outcomes;
}

}  // namespace dnncost::measure
