#pragma once
/// @file platform.hpp
/// The system model of the mapping search (MaGNAS, Odema et al. 2023, Sec. 3.1): a platform is
/// a set of compute units (CUs) sharing a system memory, plus optional DVFS settings (one clock
/// per frequency domain: CUs, CPU, memory controller). Per-block costs are BlockCost values;
/// latency in milliseconds, energy in millijoules throughout the mapping search.
#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>

namespace dnncost::search::mapping {

/// Cost of one network block on one compute unit at one DVFS setting (ms and mJ).
/// `*_in` is paid when the previous block ran on another CU (its output is read from the shared
/// memory), `*_out` when the next block runs on another CU (the output is written back).
struct BlockCost {
    double t_comp = 0.0;
    double e_comp = 0.0;
    double t_in = 0.0;
    double t_out = 0.0;
    double e_in = 0.0;
    double e_out = 0.0;

    static constexpr std::size_t fields = 6;
    static constexpr const char* field_names[fields] = {"t_comp", "e_comp", "t_in", "t_out", "e_in", "e_out"};
    double field(std::size_t k) const {
        switch (k) {
            case 0:
                return t_comp;
            case 1:
                return e_comp;
            case 2:
                return t_in;
            case 3:
                return t_out;
            case 4:
                return e_in;
            default:
                return e_out;
        }
    }
    void set_field(std::size_t k, double v) {
        switch (k) {
            case 0:
                t_comp = v;
                break;
            case 1:
                e_comp = v;
                break;
            case 2:
                t_in = v;
                break;
            case 3:
                t_out = v;
                break;
            case 4:
                e_in = v;
                break;
            default:
                e_out = v;
                break;
        }
    }
    /// Index of the first field that is NaN, infinite or negative, or `fields` if all are valid.
    std::size_t first_invalid_field() const {
        for (std::size_t k = 0; k < fields; ++k)
            if (!std::isfinite(field(k)) || field(k) < 0.0) return k;
        return fields;
    }
};

/// Latency (ms) and energy (mJ) of a whole mapping.
struct TimeEnergy {
    double t = 0.0;
    double e = 0.0;
};

/// One DVFS operating point: a name and the clock of each frequency domain (MHz).
struct DvfsSetting {
    std::string name;
    std::vector<std::pair<std::string, double>> clocks_mhz;  ///< (domain, MHz); may be empty

    /// Clock of `domain`, or `fallback` if the setting does not name it.
    double clock(const std::string& domain, double fallback = 0.0) const {
        for (const auto& [d, f] : clocks_mhz)
            if (d == domain) return f;
        return fallback;
    }
};

/// Compute units and DVFS settings of a platform. The support relation (which CU can run which
/// block) is part of the cost source: a block a CU cannot run simply has no cost there.
struct Platform {
    std::string name;
    std::vector<std::string> cus;
    std::vector<DvfsSetting> dvfs{{"default", {}}};
    /// The DVFS setting whose standalone mappings normalise P(m) (see mapping_cost.hpp).
    std::size_t reference_dvfs = 0;

    std::size_t num_cus() const { return cus.size(); }
    std::size_t num_dvfs() const { return dvfs.size(); }

    /// Index of the CU called `name`. @throws config_error naming the platform's CUs.
    DNNCOST_FUNC std::size_t cu_index(const std::string& cu) const;
    /// Index of the DVFS setting called `setting`. @throws config_error naming the settings.
    DNNCOST_FUNC std::size_t dvfs_index(const std::string& setting) const;
    /// @throws config_error for no CU, more than 255 CUs, duplicate or empty names, no DVFS setting.
    DNNCOST_FUNC void validate() const;

    /// The names joined by ", ", or "none".
    DNNCOST_FUNC static std::string joined(const std::vector<std::string>& v);

private:
    DNNCOST_FUNC void check_names(const std::vector<std::string>& v, const char* what) const;
};

}  // namespace dnncost::search::mapping

#if !defined(DNNCOST_COMPILED)
#include <dnncost/search/mapping/platform_impl.hpp>
#endif
