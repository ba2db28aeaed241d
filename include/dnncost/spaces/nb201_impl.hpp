#pragma once
/// @file nb201_impl.hpp
/// The definitions of nb201.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by nb201.hpp in header-only mode.
#include <dnncost/spaces/nb201.hpp>

DNNCOST_FUNC auto dnncost::nb201::parse(std::string_view text) -> Arch {
    Arch a;
    const std::string s(text);
    auto fail = [&](const std::string& why) -> void {
        raise<parse_error>("nb201: bad architecture string '", s, "': ", why);
    };
    std::vector<std::string> groups;
    {
        std::size_t start = 0;
        for (;;) {
            const auto plus = s.find('+', start);
            groups.push_back(s.substr(start, plus == std::string::npos ? std::string::npos : plus - start));
            if (plus == std::string::npos) break;
            start = plus + 1;
        }
    }
    if (groups.size() != 3) fail("expected 3 groups separated by '+', found " + std::to_string(groups.size()));
    int e = 0;
    for (int node = 1; node <= 3; ++node) {
        const std::string& grp = groups[static_cast<std::size_t>(node - 1)];
        if (grp.size() < 2 || grp.front() != '|' || grp.back() != '|')
            fail("group " + std::to_string(node) + " must be enclosed in '|'");
        std::vector<std::string> items;
        std::size_t start = 1;
        while (start < grp.size()) {
            const auto bar = grp.find('|', start);
            items.push_back(grp.substr(start, bar - start));
            start = bar + 1;
        }
        if (static_cast<int>(items.size()) != node)
            fail("group " + std::to_string(node) + " must have " + std::to_string(node) + " operations");
        for (int j = 0; j < node; ++j) {
            const auto& it = items[static_cast<std::size_t>(j)];
            const auto tilde = it.rfind('~');
            if (tilde == std::string::npos) fail("item '" + it + "' lacks '~input'");
            if (it.substr(tilde + 1) != std::to_string(j))
                fail("item '" + it + "' should read from node " + std::to_string(j));
            a.ops[static_cast<std::size_t>(e++)] = op_from_name(it.substr(0, tilde));
        }
    }
    return a;
}

DNNCOST_FUNC auto dnncost::nb201::to_string(const Arch& a) -> std::string {
    std::string s;
    int e = 0;
    for (int node = 1; node <= 3; ++node) {
        if (node > 1) s += '+';
        s += '|';
        for (int j = 0; j < node; ++j) {
            s += op_names[static_cast<std::size_t>(a.ops[static_cast<std::size_t>(e++)])];
            s += '~';
            s += std::to_string(j);
            s += '|';
        }
    }
    return s;
}

DNNCOST_FUNC auto dnncost::nb201::from_index(std::int64_t idx) -> Arch {
    if (idx < 0 || idx >= num_architectures)
        raise<config_error>("nb201: index ", idx, " out of range [0, ", num_architectures, ")");
    Arch a;
    for (int e = num_edges - 1; e >= 0; --e) {
        a.ops[static_cast<std::size_t>(e)] = static_cast<Op>(idx % num_ops);
        idx /= num_ops;
    }
    return a;
}

DNNCOST_FUNC auto dnncost::nb201::isomorphic_twin(const Arch& a) -> std::optional<Arch> {
    if (a.ops[2] != Op::none) return std::nullopt;
    Arch b = a;
    std::swap(b.ops[0], b.ops[1]);
    std::swap(b.ops[4], b.ops[5]);
    if (b == a) return std::nullopt;
    return b;
}
