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
    std::size_t cu_index(const std::string& cu) const {
        for (std::size_t i = 0; i < cus.size(); ++i)
            if (cus[i] == cu) return i;
        raise<config_error>("platform '", name, "': no compute unit '", cu, "' (it has ", joined(cus), ")");
    }
    /// Index of the DVFS setting called `setting`. @throws config_error naming the settings.
    std::size_t dvfs_index(const std::string& setting) const {
        std::vector<std::string> names;
        for (std::size_t i = 0; i < dvfs.size(); ++i) {
            if (dvfs[i].name == setting) return i;
            names.push_back(dvfs[i].name);
        }
        raise<config_error>("platform '", name, "': no DVFS setting '", setting, "' (it has ", joined(names), ")");
    }
    /// @throws config_error for no CU, more than 255 CUs, duplicate or empty names, no DVFS setting.
    void validate() const {
        if (cus.empty()) raise<config_error>("platform '", name, "' has no compute unit");
        if (cus.size() > 255)
            raise<config_error>("platform '", name, "' has ", cus.size(), " compute units; at most 255");
        if (dvfs.empty()) raise<config_error>("platform '", name, "' has no DVFS setting");
        if (reference_dvfs >= dvfs.size())
            raise<config_error>("platform '", name, "': reference DVFS setting ", reference_dvfs, " of ", dvfs.size());
        check_names(cus, "compute unit");
        std::vector<std::string> names;
        for (const auto& d : dvfs) names.push_back(d.name);
        check_names(names, "DVFS setting");
    }

    static std::string joined(const std::vector<std::string>& v) {
        std::string s;
        for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
        return s.empty() ? "none" : s;
    }

private:
    void check_names(const std::vector<std::string>& v, const char* what) const {
        for (std::size_t i = 0; i < v.size(); ++i) {
            if (v[i].empty()) raise<config_error>("platform '", name, "': ", what, " ", i, " has an empty name");
            for (std::size_t j = 0; j < i; ++j)
                if (v[i] == v[j]) raise<config_error>("platform '", name, "': ", what, " '", v[i], "' listed twice");
        }
    }
};

}  // namespace dnncost::search::mapping
