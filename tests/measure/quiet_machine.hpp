#pragma once
// A planted load sampler for the measuring tests: a machine on which nothing else runs, so that
// a run is judged by its reference network alone, whatever this machine is doing meanwhile.
#include <dnncost/measure/harness.hpp>
#include <dnncost/measure/machine_load.hpp>

namespace measure_tests {

/// Samples one second apart with no CPU time spent by any other process.
inline dnncost::measure::Harness::LoadSampler quiet_machine() {
    return [calls = 0]() mutable {
        dnncost::measure::LoadSample l;
        l.seconds = 1000.0 + calls++;
        l.busy = {0, 0};
        return l;
    };
}

}  // namespace measure_tests
