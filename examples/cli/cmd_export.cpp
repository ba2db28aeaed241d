// `dnncost probe`: the hardware descriptor of this device (operator micro-kernels, performance
// counters). `dnncost export-header`: a trained estimator as one self-contained C++ header.
#include <cctype>
#include <functional>
#include <iostream>
#include <memory>
#include <set>
#include <string>

#include "train_common.hpp"
#include "commands.hpp"
#include "common.hpp"

#include <dnncost/estimators/capabilities.hpp>
#include <dnncost/measure/probe.hpp>

namespace dnncost::cli {

namespace export_detail {

/// A name a C++ namespace can have: an identifier that is not a keyword (nor an alternative
/// token such as `and`), which would make the header fail to compile.
inline bool is_identifier(const std::string& s) {
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
    for (char c : s)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    static const std::set<std::string, std::less<>> keywords{
        "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch",
        "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr",
        "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default", "delete",
        "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for",
        "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
        "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register", "reinterpret_cast",
        "requires", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct",
        "switch", "template", "this", "thread_local", "throw", "true", "try", "typedef", "typeid", "typename",
        "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq"};
    return !keywords.contains(s);
}

struct ProbeArgs {
    std::string out;
    bool json_out = false;
};

inline void run_probe(const ProbeArgs& a) {
    io::check_writable(a.out);
    const auto d = probe::run();
    if (!d.missing.empty()) {
        std::cerr << "dnncost: probe: " << d.missing.size() << " of " << probe::counters().size()
                  << " performance counters are missing; the descriptor keeps the kernel latencies"
                  << (d.missing.size() == probe::counters().size() ? " alone" : " and the others") << ":\n";
        for (const auto& m : d.missing) std::cerr << "dnncost: probe:   " << m << '\n';
    }
    io::write_file_atomic(a.out, probe::to_json(d));
    if (a.json_out)
        print_json({{"descriptor", a.out}, {"kernels", d.kernels.size()}, {"missing_counters", d.missing}});
    else
        std::cout << "descriptor of " << d.kernels.size() << " kernels written to " << a.out << '\n';
}

struct ExportArgs {
    std::string model, out, name;
    bool json_out = false;
};

inline void run_export_header(const ExportArgs& a) {
    if (!is_identifier(a.name)) raise<config_error>("--name '", a.name, "' is not a C++ identifier (or is a keyword)");
    const auto model = train_detail::load_model(a.model);  // first: an unreadable --model is named as read
    io::check_distinct_outputs({{"--model", a.model}, {"--out", a.out}});
    io::check_writable(a.out);
    io::write_file_atomic(a.out, estimators::export_header(*model.est, a.name, a.model));
    if (a.json_out)
        print_json({{"header", a.out}, {"namespace", a.name}, {"model", a.model}, {"preset", model.est->preset()}});
    else
        std::cout << "header written to " << a.out << " (namespace " << a.name << ")\n";
}

}  // namespace export_detail

void add_export_commands(Command& app, Context& ctx) {
    namespace ed = export_detail;
    auto p = std::make_shared<ed::ProbeArgs>();
    auto* probe = app.add_subcommand(
        "probe", "Hardware descriptor of this device: operator micro-kernels timed with performance counters");
    probe->add_option("--out", p->out, "Where to write the descriptor (JSON)")->required();
    probe->add_flag("--json", p->json_out, "Print what was written as one JSON document");
    probe->callback([p, &ctx] {
        ed::run_probe(*p);
        ctx.exit_code = 0;
    });

    auto a = std::make_shared<ed::ExportArgs>();
    auto* ex = app.add_subcommand("export-header", "Write a trained estimator as one self-contained C++ header");
    ex->add_option("--model", a->model, "Saved estimator (.dnnc)")->required();
    ex->add_option("--out", a->out, "Header to write")->required();
    ex->add_option("--name", a->name, "C++ namespace of the model in the header")->required();
    ex->add_flag("--json", a->json_out, "Print what was written as one JSON document");
    ex->callback([a, &ctx] {
        ed::run_export_header(*a);
        ctx.exit_code = 0;
    });
}

}  // namespace dnncost::cli
