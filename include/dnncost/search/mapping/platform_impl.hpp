#pragma once
/// @file platform_impl.hpp
/// The definitions of platform.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by platform.hpp in header-only mode.
#include <dnncost/search/mapping/platform.hpp>

namespace dnncost::search::mapping {

DNNCOST_FUNC std::size_t Platform::cu_index(const std::string& cu) const {
    for (std::size_t i = 0; i < cus.size(); ++i)
        if (cus[i] == cu) return i;
    raise<config_error>("platform '", name, "': no compute unit '", cu, "' (it has ", joined(cus), ")");
}

DNNCOST_FUNC std::size_t Platform::dvfs_index(const std::string& setting) const {
    std::vector<std::string> names;
    for (std::size_t i = 0; i < dvfs.size(); ++i) {
        if (dvfs[i].name == setting) return i;
        names.push_back(dvfs[i].name);
    }
    raise<config_error>("platform '", name, "': no DVFS setting '", setting, "' (it has ", joined(names), ")");
}

DNNCOST_FUNC void Platform::validate() const {
    if (cus.empty()) raise<config_error>("platform '", name, "' has no compute unit");
    if (cus.size() > 255) raise<config_error>("platform '", name, "' has ", cus.size(), " compute units; at most 255");
    if (dvfs.empty()) raise<config_error>("platform '", name, "' has no DVFS setting");
    if (reference_dvfs >= dvfs.size())
        raise<config_error>("platform '", name, "': reference DVFS setting ", reference_dvfs, " of ", dvfs.size());
    check_names(cus, "compute unit");
    std::vector<std::string> names;
    for (const auto& d : dvfs) names.push_back(d.name);
    check_names(names, "DVFS setting");
}

DNNCOST_FUNC std::string Platform::joined(const std::vector<std::string>& v) {
    std::string s;
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
    return s.empty() ? "none" : s;
}

DNNCOST_FUNC void Platform::check_names(const std::vector<std::string>& v, const char* what) const {
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (v[i].empty()) raise<config_error>("platform '", name, "': ", what, " ", i, " has an empty name");
        for (std::size_t j = 0; j < i; ++j)
            if (v[i] == v[j]) raise<config_error>("platform '", name, "': ", what, " '", v[i], "' listed twice");
    }
}

}  // namespace dnncost::search::mapping
