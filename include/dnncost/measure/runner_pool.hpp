#pragma once
/// @file runner_pool.hpp
/// A pool of identical runners (one per board of a device farm): a batch of requests is spread
/// over the runners, each taking the next request as soon as it is free, with at most one
/// request in flight per runner. Failed requests are retried (on the same runner, restarted
/// after any failure but a runner-reported error) up to `retries` times.
///
/// A runner whose command cannot be run at all (start_failed: exit status 126/127 before any
/// output) stops the batch with a config_error: every further request would fail the same way.
#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/measure/runner.hpp>

namespace dnncost::measure {

struct PoolOptions {
    /// Time limit of one request (model load, warm-up and timed runs).
    Millis timeout{120000};
    /// Further attempts after a failed one.
    int retries = 1;
    RunnerOptions runner{};
};

class RunnerPool {
public:
    /// Called once per request with its index in the batch and its final outcome. Calls are
    /// serialised; an exception thrown by it stops the batch and is rethrown by run().
    using OnDone = std::function<void(std::size_t, const Outcome&)>;

    explicit RunnerPool(const std::vector<std::string>& commands, PoolOptions options = {}) : m_options(options) {
        if (commands.empty()) raise<config_error>("runner pool: no runner command");
        if (options.retries < 0) raise<config_error>("runner pool: negative retry count ", options.retries);
        if (options.timeout.count() <= 0) raise<config_error>("runner pool: the timeout must be positive");
        for (const auto& c : commands) m_runners.push_back(std::make_unique<Runner>(c, options.runner));
    }

    std::size_t size() const { return m_runners.size(); }
    const PoolOptions& options() const { return m_options; }
    const Runner& runner(std::size_t i) const { return *m_runners.at(i); }

    /// The device object of the first runner that printed a device line; empty if none did.
    /// Safe to call from `on_done` and between batches.
    const std::string& device() const { return m_device; }

    /// Stop every runner; the next request starts fresh processes.
    void restart() {
        for (auto& r : m_runners) r->stop();
    }

    /// Run every request (their ids are assigned here, unique over the pool's life) and return
    /// the final outcomes in request order.
    /// @throws config_error when a runner cannot be started; whatever `on_done` throws
    std::vector<Outcome> run(std::vector<Request> requests, const OnDone& on_done = {}) {
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

private:
    PoolOptions m_options;
    std::vector<std::unique_ptr<Runner>> m_runners;
    std::uint64_t m_next_id = 0;
    std::string m_device;
};

}  // namespace dnncost::measure
