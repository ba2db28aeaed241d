#pragma once
/// @file fusion_rules.hpp
/// A runtime's fusion rules and layout decision: which adjacent operators it executes as one
/// kernel, which multi-operator patterns it replaces by one kernel, and when it runs a kernel in
/// a blocked channel layout. A rule set is part of a device model: it is found by measurement
/// (device/fusion_discovery.hpp) and applied by the kernel pass (device/kernel_graph.hpp).
///
/// Operator kinds are ONNX op types (a matched pattern counts as one operator of the pattern's
/// name). The text form, one rule a line, `#` starting a comment:
///
///     dnncost-fusion-rules 1
///     device ort-cpu-all-1t
///     pattern LayerNormalization ReduceMean Sub Pow ReduceMean Add Sqrt Div Mul Add
///     fold Conv BatchNormalization operands=constant
///     fuse Conv Add operands=activation
///     fuse Add Relu after=Conv
///     fuse Gemm Relu consumers=shared
///     layout NCHWc 16 anchors=Conv followers=MaxPool,AveragePool,Add,Relu narrow-input=yes
///     fuse Conv Add operands=activation operand-layout=blocked
///     execute Reshape Flatten
///     merge-duplicates
///     rewrite MatMul+Add Gemm reshape-rank=3
///     rewrite BatchNormalization Conv layout=blocked
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/error.hpp>
#include <dnncost/core/json_string.hpp>

namespace dnncost::device {

/// What the operands of a fused consumer other than the producer's output are.
enum class Operands {
    any,        ///< a rule condition only: whatever they are
    none,       ///< the consumer reads nothing else (a unary operator)
    constant,   ///< only constants (weights, or values fixed at load): a bias, BatchNorm statistics
    activation  ///< at least one value computed at run time: a residual Add
};

inline std::string_view to_string(Operands o) {
    switch (o) {
        case Operands::none:
            return "none";
        case Operands::constant:
            return "constant";
        case Operands::activation:
            return "activation";
        default:
            return "any";
    }
}

/// @throws parse_error for an unknown name
inline Operands parse_operands(std::string_view s) {
    for (auto o : {Operands::any, Operands::none, Operands::constant, Operands::activation})
        if (s == to_string(o)) return o;
    raise<parse_error>("unknown operand class '", s, "' (expected any, none, constant or activation)");
}

/// A producer -> consumer pair the runtime executes in one kernel.
struct FusionRule {
    std::string producer;
    std::string consumer;
    Operands operands = Operands::any;
    /// The producer's output must be read only inside the kernel (and not be a graph output):
    /// the intermediate is never written to memory. Without it the kernel writes it as well.
    bool sole_consumer = true;
    /// The consumer is folded into the producer's constants at load time (BatchNorm into Conv)
    /// and costs nothing at run time; it needs operands = constant.
    bool fold = false;
    /// When not empty, the producer's kernel must start with one of these kinds: a chain rule
    /// such as Add -> Relu that holds only behind a Conv.
    std::vector<std::string> after;
    /// When the producer's kernel may run blocked, the consumer's activations must all come from
    /// kernels the layout rule may run blocked (ones that start with an anchor whose channels fit,
    /// or with a follower whose activations all come from such kernels): ONNX Runtime fuses an Add
    /// into a blocked convolution only when every input of the Add is blocked, and into a plain
    /// one whatever its inputs.
    bool blocked_operands = false;
    friend bool operator==(const FusionRule&, const FusionRule&) = default;
};

/// A connected group of operators the runtime replaces by one kernel of the pattern's name
/// (a decomposed LayerNorm or GELU). `ops` are the group's kinds in topological order; see
/// device/fusion_match.hpp for how a group is matched.
struct PatternRule {
    std::string name;
    std::vector<std::string> ops;
    friend bool operator==(const PatternRule&, const PatternRule&) = default;
};

/// A kernel the runtime executes as kernels of other kinds. ONNX Runtime runs MatMul+Add as a
/// Gemm, and a Gemm takes a matrix, so on inputs of three or more dimensions it flattens the
/// input before and restores the output after, in two Reshape kernels of its own; without graph
/// optimisation it expands HardSwish into a HardSigmoid kernel and a Mul kernel.
struct RewriteRule {
    std::string kind;             ///< the kernel's kind as the pass forms it ("MatMul+Add")
    std::vector<std::string> as;  ///< the kinds it runs as, in order ("Gemm"; "HardSigmoid", "Mul")
    int reshape_rank = 0;         ///< inputs of at least this rank get the two reshapes; 0: never
    /// Only a kernel that runs in the blocked layout is rewritten: ONNX Runtime runs a
    /// BatchNormalization on blocked data as a blocked convolution, and on plain data as itself.
    bool blocked_only = false;
    friend bool operator==(const RewriteRule&, const RewriteRule&) = default;
};

/// The runtime's blocked channel layout (ONNX Runtime's NCHWc): a kernel whose first operator
/// is an anchor runs blocked when its channel counts are multiples of `block`; a kernel whose
/// first operator is a follower runs blocked when every activation it reads is blocked. Where a
/// value crosses between layouts, a reorder kernel converts it.
struct LayoutRule {
    std::string name = "NCHWc";
    std::int64_t block = 0;  ///< 0: the runtime has no blocked layout
    std::vector<std::string> anchors;
    std::vector<std::string> followers;
    /// An ungrouped anchor convolution with fewer input channels than the block reads the plain
    /// layout directly (no reorder on its input): a network's first convolution on RGB images.
    bool narrow_input = true;
    bool enabled() const { return block > 0; }
    bool is_anchor(std::string_view op) const { return std::find(anchors.begin(), anchors.end(), op) != anchors.end(); }
    bool is_follower(std::string_view op) const {
        return std::find(followers.begin(), followers.end(), op) != followers.end();
    }
    friend bool operator==(const LayoutRule&, const LayoutRule&) = default;
};

/// `c % block` for a block > 0. The kernel pass and the features ask it of every kernel; a block
/// is a small power of two on the runtimes seen, where a mask gives the same value as a 64-bit
/// division (tens of cycles on many x86 cores).
inline std::int64_t block_remainder(std::int64_t c, std::int64_t block) {
    if (c >= 0 && (block & (block - 1)) == 0) return c & (block - 1);
    return c % block;
}

/// A device's rule set. The default value fuses nothing and has no blocked layout.
struct FusionRules {
    std::string device;
    std::vector<PatternRule> patterns;
    std::vector<FusionRule> fusions;
    LayoutRule layout;
    /// Operators that only relabel memory (cost::is_free_operator) which the runtime still runs
    /// as kernels of their own (ONNX Runtime copies a Reshape's or Flatten's data); the other
    /// free operators get no kernel.
    std::vector<std::string> executed;
    std::vector<RewriteRule> rewrites;
    /// The runtime computes nodes of the same operator, attributes and inputs once (ONNX
    /// Runtime's common subexpression elimination): the later ones get no kernel.
    bool merge_duplicates = false;
    friend bool operator==(const FusionRules&, const FusionRules&) = default;

    bool is_executed(std::string_view op) const {
        return std::find(executed.begin(), executed.end(), op) != executed.end();
    }
    /// The rewrite of kernels of kind `kind`, or nullptr.
    const RewriteRule* rewrite_of(std::string_view kind) const {
        for (const auto& r : rewrites)
            if (r.kind == kind) return &r;
        return nullptr;
    }

    /// The first fusion rule for `producer` -> `consumer` whose operand class and `after`
    /// condition hold (`anchor`: the kind that starts the producer's kernel), or nullptr.
    const FusionRule* find(std::string_view producer, std::string_view consumer, Operands operands,
                           std::string_view anchor) const {
        for (const auto& r : fusions) {
            if (r.producer != producer || r.consumer != consumer) continue;
            if (r.operands != Operands::any && r.operands != operands) continue;
            if (!r.after.empty() && std::find(r.after.begin(), r.after.end(), anchor) == r.after.end()) continue;
            return &r;
        }
        return nullptr;
    }

    /// @throws config_error naming the rule when a kind is not a plain token, a fold does not
    /// require constant operands and a sole consumer, a pattern has fewer than two operators, or the block is negative
    void check() const {
        const auto token = [](std::string_view what, const std::string& s) {
            if (s.empty() || s.find_first_of(" \t\r\n,=#") != std::string::npos)
                raise<config_error>("fusion rules: ", what, " '", s,
                                    "' is not a single token (no blanks, commas, '=' or '#')");
        };
        for (const auto& p : patterns) {
            token("pattern name", p.name);
            if (p.ops.size() < 2)
                raise<config_error>("fusion rules: pattern '", p.name, "' needs at least two operators");
            for (const auto& o : p.ops) token("operator kind", o);
        }
        for (const auto& r : fusions) {
            token("operator kind", r.producer);
            token("operator kind", r.consumer);
            for (const auto& a : r.after) token("operator kind", a);
            if (r.fold && (r.operands != Operands::constant || !r.sole_consumer))
                raise<config_error>("fusion rules: fold ", r.producer, " ", r.consumer,
                                    " must require operands=constant and a sole consumer (only an operator whose "
                                    "output nothing else reads can absorb constants at load)");
        }
        for (const auto& e : executed) token("operator kind", e);
        for (std::size_t i = 0; i < rewrites.size(); ++i) {
            const auto& r = rewrites[i];
            token("kernel kind", r.kind);
            if (r.as.empty()) raise<config_error>("fusion rules: rewrite ", r.kind, " names no kind to run as");
            for (const auto& a : r.as) token("kernel kind", a);
            if (r.reshape_rank < 0 || r.reshape_rank > 8)
                raise<config_error>("fusion rules: rewrite ", r.kind, ": reshape-rank ", r.reshape_rank,
                                    " is not between 0 and 8");
            for (std::size_t j = 0; j < i; ++j)
                if (rewrites[j].kind == r.kind)
                    raise<config_error>("fusion rules: two rewrites of kernels of kind ", r.kind);
        }
        if (layout.block < 0) raise<config_error>("fusion rules: negative layout block ", layout.block);
        if (layout.enabled()) {
            token("layout name", layout.name);
            for (const auto& a : layout.anchors) token("operator kind", a);
            for (const auto& f : layout.followers) token("operator kind", f);
        }
        if (device.find_first_of("\r\n") != std::string::npos)
            raise<config_error>("fusion rules: the device name has a line break");
    }

    /// The text form (see the file comment); parse(to_text()) == *this.
    std::string to_text() const {
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
            out += "\n";
        }
        if (layout.enabled()) {
            out += "layout " + layout.name + " " + std::to_string(layout.block);
            if (!layout.anchors.empty()) out += " anchors=" + join(layout.anchors);
            if (!layout.followers.empty()) out += " followers=" + join(layout.followers);
            out += std::string(" narrow-input=") + (layout.narrow_input ? "yes" : "no") + "\n";
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

    /// Read the text form; `source` names the text in errors ("rules.txt:4: ...").
    /// @throws parse_error naming the line
    static FusionRules parse(std::string_view text, std::string_view source = "fusion rules") {
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
            const auto& w = words[0];
            if (!header) {
                if (w != "dnncost-fusion-rules" || words.size() != 2)
                    fail("expected the header 'dnncost-fusion-rules 1'");
                if (words[1] != "1") fail("unsupported format version '", words[1], "' (this build reads 1)");
                header = true;
            } else if (w == "device") {
                const auto at = line.find("device") + 6;
                auto rest = line.substr(at);
                while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
                while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\t' || rest.back() == '\r'))
                    rest.remove_suffix(1);
                rules.device = std::string(rest);
            } else if (w == "pattern") {
                if (words.size() < 4) fail("a pattern is 'pattern NAME OP OP...' with at least two operators");
                rules.patterns.push_back({words[1], {words.begin() + 2, words.end()}});
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
                        if (value != "sole" && value != "shared")
                            fail("consumers= is sole or shared, got '", value, "'");
                        r.sole_consumer = value == "sole";
                    } else if (key == "after") {
                        r.after = list(value);
                    } else if (key == "operand-layout") {
                        if (value != "any" && value != "blocked")
                            fail("operand-layout= is any or blocked, got '", value, "'");
                        r.blocked_operands = value == "blocked";
                    } else {
                        fail("unknown option '", key, "' (expected operands, consumers, after or operand-layout)");
                    }
                }
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
                    } else
                        fail("unknown option '", key, "' (expected anchors, followers or narrow-input)");
                }
            } else if (w == "merge-duplicates") {
                if (words.size() != 1) fail("merge-duplicates takes no arguments");
                rules.merge_duplicates = true;
            } else if (w == "execute") {
                if (words.size() < 2) fail("an execute line is 'execute OP [OP...]'");
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

    /// The rule set as one JSON object (for reports; the text form is what is read back).
    std::string to_json() const {
        check();
        const auto str = [](const std::string& s) { return json_quote(s); };
        const auto arr = [&](const std::vector<std::string>& v) {
            std::string o = "[";
            for (std::size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + str(v[i]);
            return o + "]";
        };
        std::string o = "{\"device\": " + str(device) + ", \"patterns\": [";
        for (std::size_t i = 0; i < patterns.size(); ++i)
            o += std::string(i ? ", " : "") + "{\"name\": " + str(patterns[i].name) +
                 ", \"ops\": " + arr(patterns[i].ops) + "}";
        o += "], \"fusions\": [";
        for (std::size_t i = 0; i < fusions.size(); ++i) {
            const auto& r = fusions[i];
            o += std::string(i ? ", " : "") + "{\"producer\": " + str(r.producer) +
                 ", \"consumer\": " + str(r.consumer) + ", \"operands\": " + str(std::string(to_string(r.operands))) +
                 ", \"sole_consumer\": " + (r.sole_consumer ? "true" : "false") +
                 ", \"fold\": " + (r.fold ? "true" : "false") + ", \"after\": " + arr(r.after) +
                 (r.blocked_operands ? ", \"operand_layout\": \"blocked\"}" : "}");
        }
        o += "], \"layout\": {\"name\": " + str(layout.name) + ", \"block\": " + std::to_string(layout.block) +
             ", \"anchors\": " + arr(layout.anchors) + ", \"followers\": " + arr(layout.followers) +
             ", \"narrow_input\": " + (layout.narrow_input ? "true" : "false") + "}";
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

private:
    static std::vector<std::string> split(std::string_view line) {
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
    static std::vector<std::string> list(const std::string& value) {
        std::vector<std::string> out;
        std::size_t start = 0;
        while (start <= value.size()) {
            const auto comma = std::min(value.find(',', start), value.size());
            out.push_back(value.substr(start, comma - start));
            start = comma + 1;
        }
        return out;  // empty items are reported by check()
    }
    template <class Fail>
    static std::pair<std::string, std::string> option(const std::string& word, const Fail& fail) {
        const auto eq = word.find('=');
        if (eq == std::string::npos || eq == 0) fail("expected KEY=VALUE, got '", word, "'");
        return {word.substr(0, eq), word.substr(eq + 1)};
    }
};

}  // namespace dnncost::device
