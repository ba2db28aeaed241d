#pragma once
/// @file fusion_rules_impl.hpp
/// The definitions of fusion_rules.hpp: checking, reading and writing rule sets. Compiled once
/// into dnncost::compiled in compiled mode (core/config.hpp), included by fusion_rules.hpp in
/// header-only mode.
#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/json_string.hpp>
#include <dnncost/device/fusion_rules.hpp>

namespace dnncost::device {

namespace detail {
/// A byte below 0x20 or DEL: operator kinds are ONNX op types, and the text output prints them as
/// they are.
inline bool has_control_character(std::string_view s) {
    return std::any_of(s.begin(), s.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u < 0x20 || u == 0x7f;
    });
}
}  // namespace detail

DNNCOST_FUNC std::string FusionRules::token_problem(std::string_view what, const std::string& s) {
    if (detail::has_control_character(s)) return std::string(what) + " " + json_quote(s) + " has a control character";
    if (s.empty() || s.find_first_of(" ,=#") != std::string::npos)
        return std::string(what) + " '" + s + "' is not a single token (no blanks, commas, '=' or '#')";
    return {};
}

DNNCOST_FUNC std::string FusionRules::problem(const PatternRule& p) {
    if (auto e = token_problem("pattern name", p.name); !e.empty()) return e;
    if (p.ops.size() < 2) return "pattern '" + p.name + "' needs at least two operators";
    for (const auto& o : p.ops)
        if (auto e = token_problem("operator kind", o); !e.empty()) return e;
    return {};
}

DNNCOST_FUNC std::string FusionRules::problem(const FusionRule& r) {
    for (const auto* k : {&r.producer, &r.consumer})
        if (auto e = token_problem("operator kind", *k); !e.empty()) return e;
    for (const auto& a : r.after)
        if (auto e = token_problem("operator kind", a); !e.empty()) return e;
    if (r.fold && (r.operands != Operands::constant || !r.sole_consumer))
        return "fold " + r.producer + " " + r.consumer +
               " must require operands=constant and a sole consumer (only an operator whose output nothing else "
               "reads can absorb constants at load)";
    return {};
}

DNNCOST_FUNC std::string FusionRules::problem(const RewriteRule& r) {
    if (auto e = token_problem("kernel kind", r.kind); !e.empty()) return e;
    if (r.as.empty()) return "rewrite " + r.kind + " names no kind to run as";
    for (const auto& a : r.as)
        if (auto e = token_problem("kernel kind", a); !e.empty()) return e;
    if (r.reshape_rank < 0 || r.reshape_rank > 8)
        return "rewrite " + r.kind + ": reshape-rank " + std::to_string(r.reshape_rank) + " is not between 0 and 8";
    return {};
}

DNNCOST_FUNC std::string FusionRules::problem(const LayoutRule& l) {
    if (l.block < 0) return "negative layout block " + std::to_string(l.block);
    if (!l.enabled()) return {};
    if (auto e = token_problem("layout name", l.name); !e.empty()) return e;
    for (const auto* kinds : {&l.anchors, &l.followers})
        for (const auto& k : *kinds)
            if (auto e = token_problem("operator kind", k); !e.empty()) return e;
    return {};
}

DNNCOST_FUNC std::string FusionRules::device_problem(std::string_view device) {
    // a tab is a blank within the name; other control characters break the text form or the terminal
    std::string rest(device);
    std::replace(rest.begin(), rest.end(), '\t', ' ');
    if (detail::has_control_character(rest))
        return "the device name " + json_quote(device) + " has a control character (a line break, or another)";
    return {};
}

DNNCOST_FUNC void FusionRules::check() const {
    const auto report = [](const std::string& e) {
        if (!e.empty()) raise<config_error>("fusion rules: ", e);
    };
    for (const auto& p : patterns) report(problem(p));
    for (const auto& r : fusions) report(problem(r));
    for (const auto& e : executed) report(token_problem("operator kind", e));
    for (std::size_t i = 0; i < rewrites.size(); ++i) {
        report(problem(rewrites[i]));
        for (std::size_t j = 0; j < i; ++j)
            if (rewrites[j].kind == rewrites[i].kind) report("two rewrites of kernels of kind " + rewrites[i].kind);
    }
    report(problem(layout));
    report(device_problem(device));
}

DNNCOST_FUNC std::string FusionRules::to_text() const {
    check();
    const auto join = [](const std::vector<std::string>& v) {
        std::string s;
        for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
        return s;
    };
    std::string out = "dnncost-fusion-rules 1\n";
    if (!device.empty()) out += "device " + device + "\n";
    for (const auto& p : patterns) {
        out += "pattern " + p.name;
        for (const auto& o : p.ops) out += " " + o;
        out += "\n";
    }
    for (const auto& r : fusions) {
        out += std::string(r.fold ? "fold " : "fuse ") + r.producer + " " + r.consumer;
        if (r.operands != Operands::any) out += " operands=" + std::string(to_string(r.operands));
        if (!r.sole_consumer) out += " consumers=shared";
        if (!r.after.empty()) out += " after=" + join(r.after);
        if (r.blocked_operands) out += " operand-layout=blocked";
        if (r.blocked_producer) out += " layout=blocked";
        out += "\n";
    }
    if (layout.enabled()) {
        out += "layout " + layout.name + " " + std::to_string(layout.block);
        if (!layout.anchors.empty()) out += " anchors=" + join(layout.anchors);
        if (!layout.followers.empty()) out += " followers=" + join(layout.followers);
        out += std::string(" narrow-input=") + (layout.narrow_input ? "yes" : "no");
        // only when set, so that older rule sets read as they did
        if (layout.channels_last_reorders) out += " channels-last=yes";
        if (layout.concat_alignment > 0) out += " concat-alignment=" + std::to_string(layout.concat_alignment);
        out += "\n";
    }
    if (merge_duplicates) out += "merge-duplicates\n";
    if (!executed.empty()) {
        out += "execute";
        for (const auto& e : executed) out += " " + e;
        out += "\n";
    }
    for (const auto& r : rewrites) {
        out += "rewrite " + r.kind + " " + join(r.as);
        if (r.reshape_rank > 0) out += " reshape-rank=" + std::to_string(r.reshape_rank);
        if (r.blocked_only) out += " layout=blocked";
        out += "\n";
    }
    return out;
}

DNNCOST_FUNC FusionRules FusionRules::parse(std::string_view text, std::string_view source) {
    FusionRules rules;
    std::size_t line_no = 0, pos = 0;
    bool header = false;
    while (pos <= text.size()) {
        const auto end = std::min(text.find('\n', pos), text.size());
        std::string_view line = text.substr(pos, end - pos);
        pos = end + 1;
        ++line_no;
        if (const auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
        const auto words = split(line);
        if (words.empty()) {
            if (end == text.size()) break;
            continue;
        }
        const auto fail = [&](const auto&... what) { raise<parse_error>(source, ":", line_no, ": ", what...); };
        // each rule checked on its own line, so that the error names it
        const auto refuse = [&](const std::string& e) {
            if (!e.empty()) fail(e);
        };
        const auto& w = words[0];
        if (!header) {
            if (w != "dnncost-fusion-rules" || words.size() != 2) fail("expected the header 'dnncost-fusion-rules 1'");
            if (words[1] != "1") fail("unsupported format version '", words[1], "' (this build reads 1)");
            header = true;
        } else if (w == "device") {
            const auto at = line.find("device") + 6;
            auto rest = line.substr(at);
            while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
            while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\t' || rest.back() == '\r'))
                rest.remove_suffix(1);
            rules.device = std::string(rest);
            refuse(device_problem(rules.device));
        } else if (w == "pattern") {
            if (words.size() < 4) fail("a pattern is 'pattern NAME OP OP...' with at least two operators");
            rules.patterns.push_back({words[1], {words.begin() + 2, words.end()}});
            refuse(problem(rules.patterns.back()));
        } else if (w == "fuse" || w == "fold") {
            if (words.size() < 3) fail("a rule is '", w, " PRODUCER CONSUMER [options]'");
            FusionRule r{words[1], words[2], Operands::any, true, w == "fold", {}};
            for (std::size_t i = 3; i < words.size(); ++i) {
                const auto [key, value] = option(words[i], fail);
                if (key == "operands") {
                    try {
                        r.operands = parse_operands(value);
                    } catch (const parse_error& e) {
                        fail(e.what());
                    }
                } else if (key == "consumers") {
                    if (value != "sole" && value != "shared") fail("consumers= is sole or shared, got '", value, "'");
                    r.sole_consumer = value == "sole";
                } else if (key == "after") {
                    r.after = list(value);
                } else if (key == "operand-layout") {
                    if (value != "any" && value != "blocked")
                        fail("operand-layout= is any or blocked, got '", value, "'");
                    r.blocked_operands = value == "blocked";
                } else if (key == "layout") {
                    if (value != "any" && value != "blocked") fail("layout= is any or blocked, got '", value, "'");
                    r.blocked_producer = value == "blocked";
                } else {
                    fail("unknown option '", key, "' (expected operands, consumers, after, operand-layout or layout)");
                }
            }
            refuse(problem(r));
            rules.fusions.push_back(std::move(r));
        } else if (w == "layout") {
            if (words.size() < 3) fail("a layout is 'layout NAME BLOCK [options]'");
            rules.layout.name = words[1];
            const auto& b = words[2];
            if (b.empty() || b.size() > 6 || b.find_first_not_of("0123456789") != std::string::npos)
                fail("the layout block '", b, "' is not a whole number below 10^6");
            rules.layout.block = std::stoll(b);
            for (std::size_t i = 3; i < words.size(); ++i) {
                const auto [key, value] = option(words[i], fail);
                if (key == "anchors")
                    rules.layout.anchors = list(value);
                else if (key == "followers")
                    rules.layout.followers = list(value);
                else if (key == "narrow-input") {
                    if (value != "yes" && value != "no") fail("narrow-input= is yes or no, got '", value, "'");
                    rules.layout.narrow_input = value == "yes";
                } else if (key == "channels-last") {
                    if (value != "yes" && value != "no") fail("channels-last= is yes or no, got '", value, "'");
                    rules.layout.channels_last_reorders = value == "yes";
                } else if (key == "concat-alignment") {
                    if (value.empty() || value.size() > 6 || value.find_first_not_of("0123456789") != std::string::npos)
                        fail("concat-alignment= is a whole number below 10^6, got '", value, "'");
                    rules.layout.concat_alignment = std::stoll(std::string(value));
                } else
                    fail("unknown option '", key,
                         "' (expected anchors, followers, narrow-input, channels-last or concat-alignment)");
            }
            refuse(problem(rules.layout));
        } else if (w == "merge-duplicates") {
            if (words.size() != 1) fail("merge-duplicates takes no arguments");
            rules.merge_duplicates = true;
        } else if (w == "execute") {
            if (words.size() < 2) fail("an execute line is 'execute OP [OP...]'");
            for (std::size_t i = 1; i < words.size(); ++i) refuse(token_problem("operator kind", words[i]));
            rules.executed.insert(rules.executed.end(), words.begin() + 1, words.end());
        } else if (w == "rewrite") {
            if (words.size() < 3) fail("a rewrite is 'rewrite KIND AS[,AS...] [reshape-rank=N] [layout=blocked]'");
            RewriteRule r{words[1], list(words[2]), 0, false};
            for (std::size_t i = 3; i < words.size(); ++i) {
                const auto [key, value] = option(words[i], fail);
                if (key == "layout") {
                    if (value != "any" && value != "blocked") fail("layout= is any or blocked, got '", value, "'");
                    r.blocked_only = value == "blocked";
                    continue;
                }
                if (key != "reshape-rank") fail("unknown option '", key, "' (expected reshape-rank or layout)");
                if (value.empty() || value.size() > 1 || value.find_first_not_of("0123456789") != std::string::npos)
                    fail("reshape-rank= is a whole number from 0 to 8, got '", value, "'");
                r.reshape_rank = std::stoi(value);
            }
            refuse(problem(r));
            if (rules.rewrite_of(r.kind)) fail("two rewrites of kernels of kind ", r.kind);
            rules.rewrites.push_back(std::move(r));
        } else {
            fail("unknown rule '", w,
                 "' (expected device, pattern, fuse, fold, layout, execute, rewrite or merge-duplicates)");
        }
        if (end == text.size()) break;
    }
    if (!header) raise<parse_error>(source, ": empty; expected the header 'dnncost-fusion-rules 1'");
    try {
        rules.check();
    } catch (const config_error& e) {
        raise<parse_error>(source, ": ", e.what());
    }
    return rules;
}

DNNCOST_FUNC std::string FusionRules::to_json() const {
    check();
    const auto str = [](const std::string& s) { return json_quote(s); };
    const auto arr = [&](const std::vector<std::string>& v) {
        std::string o = "[";
        for (std::size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + str(v[i]);
        return o + "]";
    };
    std::string o = "{\"device\": " + str(device) + ", \"patterns\": [";
    for (std::size_t i = 0; i < patterns.size(); ++i)
        o += std::string(i ? ", " : "") + "{\"name\": " + str(patterns[i].name) + ", \"ops\": " + arr(patterns[i].ops) +
             "}";
    o += "], \"fusions\": [";
    for (std::size_t i = 0; i < fusions.size(); ++i) {
        const auto& r = fusions[i];
        o += std::string(i ? ", " : "") + "{\"producer\": " + str(r.producer) + ", \"consumer\": " + str(r.consumer) +
             ", \"operands\": " + str(std::string(to_string(r.operands))) +
             ", \"sole_consumer\": " + (r.sole_consumer ? "true" : "false") +
             ", \"fold\": " + (r.fold ? "true" : "false") + ", \"after\": " + arr(r.after) +
             (r.blocked_operands ? ", \"operand_layout\": \"blocked\"" : "") +
             (r.blocked_producer ? ", \"layout\": \"blocked\"}" : "}");
    }
    o += "], \"layout\": {\"name\": " + str(layout.name) + ", \"block\": " + std::to_string(layout.block) +
         ", \"anchors\": " + arr(layout.anchors) + ", \"followers\": " + arr(layout.followers) +
         ", \"narrow_input\": " + (layout.narrow_input ? "true" : "false") +
         (layout.channels_last_reorders ? ", \"channels_last\": true" : "") +
         (layout.concat_alignment > 0 ? ", \"concat_alignment\": " + std::to_string(layout.concat_alignment) + "}"
                                      : "}");
    // only when used, so that the object of an older rule set reads as it did
    if (merge_duplicates) o += ", \"merge_duplicates\": true";
    if (!executed.empty()) o += ", \"executed\": " + arr(executed);
    if (!rewrites.empty()) {
        o += ", \"rewrites\": [";
        for (std::size_t i = 0; i < rewrites.size(); ++i)
            o += std::string(i ? ", " : "") + "{\"kind\": " + str(rewrites[i].kind) +
                 ", \"as\": " + arr(rewrites[i].as) +
                 ", \"reshape_rank\": " + std::to_string(rewrites[i].reshape_rank) +
                 (rewrites[i].blocked_only ? ", \"layout\": \"blocked\"}" : "}");
        o += "]";
    }
    return o + "}";
}

DNNCOST_FUNC std::vector<std::string> FusionRules::split(std::string_view line) {
    std::vector<std::string> out;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
        const auto start = i;
        while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
        if (i > start) out.emplace_back(line.substr(start, i - start));
    }
    return out;
}

DNNCOST_FUNC std::vector<std::string> FusionRules::list(const std::string& value) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= value.size()) {
        const auto comma = std::min(value.find(',', start), value.size());
        out.push_back(value.substr(start, comma - start));
        start = comma + 1;
    }
    return out;  // empty items are reported by check()
}

}  // namespace dnncost::device
