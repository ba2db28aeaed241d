#pragma once
/// @file runner_pool.hpp
/// A pool of identical runners (one per board of a device farm): a batch of requests is spread
/// over the runners, each taking the next request as soon as it is free, with at most one
/// request in flight per runner. Failed requests are retried (on the same runner, restarted
/// after any failure but a runner-reported error) up to `retries` times.
///
/// A runner whose command cannot be run at all (start_failed: exit status 126/127 before any
/// output) stops the batch with a config_error: every further request would fail the same way.
///
/// The larger functions are defined in runner_pool_impl.hpp: compiled into dnncost::compiled in compiled
/// mode (core/config.hpp), included at the end of this header otherwise.
#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <dnncost/core/config.hpp>
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

    explicit RunnerPool(const std::vector<std::string>& commands, PoolOptions options = {});

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
    std::vector<Outcome> run(std::vector<Request> requests, const OnDone& on_done = {});

private:
    PoolOptions m_options;
    std::vector<std::unique_ptr<Runner>> m_runners;
    std::uint64_t m_next_id = 0;
    std::string m_device;
};

}  // namespace dnncost::measure

#if !defined(DNNCOST_COMPILED)
#include <dnncost/measure/runner_pool_impl.hpp>
#endif
