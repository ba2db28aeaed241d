#pragma once
/// @file dataset_impl.hpp
/// The definitions of dataset.hpp: compiled once into dnncost::compiled in compiled mode
/// (core/config.hpp), included by dataset.hpp in header-only mode.
#include <map>
#include <utility>

#include <dnncost/train/dataset.hpp>

DNNCOST_FUNC auto dnncost::train::load_dataset_text(std::string_view text, std::string source,
                                                    const std::filesystem::path& base_dir, const DatasetOptions& opt)
    -> Dataset {
    check_space(opt.space);
    // Rows with a wrong field count are collected, not thrown, so that under `strict` the error
    // reported is the first bad row in file order, whatever kind of problem it has.
    const auto table = io::parse_csv(text, source, io::CsvOptions{.skip_bad_rows = true});
    if (!opt.row_lines.empty() && (opt.row_lines.size() != table.size() || !table.issues.empty()))
        raise<config_error>("load_dataset: ", table.source, ": ", opt.row_lines.size(), " row lines for ",
                            table.size() + table.issues.size(), " data rows");
    const auto line_of = [&](std::size_t row) { return opt.row_lines.empty() ? table.lines[row] : opt.row_lines[row]; };
    Dataset ds;
    ds.m_source = table.source;
    ds.m_skipped = opt.left_out;
    for (const auto& issue : table.issues) ds.m_skipped.push_back({issue.line, issue.message});

    const std::size_t key_col = opt.key_column.empty() ? 0 : table.column(opt.key_column);
    std::vector<std::size_t> cols;
    if (opt.columns.empty()) {
        for (std::size_t c = 0; c < table.header.size(); ++c)
            if (c != key_col) cols.push_back(c);
    } else {
        for (const auto& name : opt.columns) {
            const auto c = table.column(name);
            if (c == key_col)
                raise<parse_error>(table.source, ": column '", name, "' is the key column, not a measurement");
            cols.push_back(c);
        }
    }
    if (cols.empty()) raise<parse_error>(table.source, ": no measurement column besides the key column");
    for (auto c : cols) ds.m_columns.push_back(table.header[c]);
    ds.m_values.resize(cols.size());

    // a 1 MB bad field must not become a 1 MB message
    auto reject = [&](std::size_t row, std::string reason) {
        if (reason.size() > 300)
            reason = reason.substr(0, 300) + "... (" + std::to_string(reason.size()) + " characters)";
        ds.m_skipped.push_back({line_of(row), std::move(reason)});
    };

    // Pass 1: values and keys (cheap, serial), so that messages come in line order.
    std::vector<std::size_t> kept;
    std::vector<std::vector<double>> row_values;
    for (std::size_t r = 0; r < table.size(); ++r) {
        std::vector<double> vals;
        std::string problem;
        for (auto c : cols) {
            const auto p = io::parse_number(table.rows[r][c]);
            if (!p.ok()) {
                problem = "column '" + table.header[c] + "': " + std::string(io::to_string(p.status)) + " ('" +
                          table.rows[r][c] + "')";
                break;
            }
            if (!(p.value > 0)) {
                problem = "column '" + table.header[c] + "': non-positive value " + table.rows[r][c];
                break;
            }
            if (!std::isnormal(p.value)) {  // 1e-320: relative errors against it overflow
                problem = "column '" + table.header[c] + "': subnormal value " + table.rows[r][c];
                break;
            }
            if (p.value < min_measured_value || p.value > max_measured_value) {  // 1e300: squared errors overflow
                problem = "column '" + table.header[c] + "': value " + table.rows[r][c] +
                          " outside the plausible range [1e-9, 1e15]";
                break;
            }
            vals.push_back(p.value);
        }
        if (problem.empty() && table.rows[r][key_col].empty())
            problem = "empty key in column '" + table.header[key_col] + "'";
        if (!problem.empty()) {
            reject(r, problem);
            continue;
        }
        kept.push_back(r);
        row_values.push_back(std::move(vals));
    }

    // Pass 2: one graph per distinct key, built in parallel; failures are per key.
    std::map<std::string, std::size_t> key_index;
    std::vector<std::string> distinct;
    std::vector<std::size_t> row_key(kept.size());
    for (std::size_t k = 0; k < kept.size(); ++k) {
        const auto& key = table.rows[kept[k]][key_col];
        auto [it, inserted] = key_index.try_emplace(key, distinct.size());
        if (inserted) distinct.push_back(key);
        row_key[k] = it->second;
    }
    std::vector<std::shared_ptr<const graph::Graph>> built(distinct.size());
    // what each key names: a space's network (built on demand), a synthesised network (built
    // now), or neither (a model file, loaded now)
    std::vector<spaces::NetworkName> named(distinct.size());
    std::vector<char> is_named(distinct.size(), 0);
    std::vector<char> ok(distinct.size(), 0);
    std::vector<std::string> failure(distinct.size());
    for (std::size_t d = 0; d < distinct.size(); ++d) {
        try {
            auto n = spaces::parse_network_name(distinct[d]);
            if (!n && opt.space != onnx_keys) {
                n = spaces::parse_network_name(spaces::qualified_arch(opt.space, distinct[d]));
                // an NB201 string that does not start with '|': its space says what is wrong
                if (!n) n = spaces::NetworkName{&spaces::find_space(opt.space), distinct[d], {}};
            }
            if (n) {
                named[d] = std::move(*n);
                is_named[d] = 1;
                if (named[d].space)  // the key's own options win
                    named[d].options.insert(opt.space_options.begin(), opt.space_options.end());
            } else if (!opt.loader) {
                raise<config_error>("load_dataset: ", table.source, " names model files (e.g. '", distinct[d],
                                    "'), which needs a model loader (e.g. dnncost::io::import_onnx)");
            }
        } catch (const parse_error& e) {  // options that are not KEY=VALUE
            is_named[d] = 1;
            failure[d] = e.what();
        }
    }
    {
        ThreadPool pool(opt.threads);
        pool.parallel_for(0, distinct.size(), [&](std::size_t d) {
            if (!failure[d].empty()) return;
            try {
                if (named[d].space) {
                    (void)named[d].space->canonical(named[d].arch);  // the graph is built on demand
                } else if (is_named[d]) {
                    built[d] = std::make_shared<const graph::Graph>(named[d].build());
                } else {
                    std::filesystem::path p(distinct[d]);
                    if (p.is_relative()) p = base_dir / p;
                    built[d] = std::make_shared<const graph::Graph>(opt.loader(p));
                }
                ok[d] = 1;
            } catch (const std::exception& e) {
                failure[d] = e.what();
            }
        });
    }
    // the build options are checked now, not at first use: one graph of every space and options
    // named. Options the data set gives fail it whole; options a key gives fail that key's rows
    std::map<std::pair<const spaces::SpaceInfo*, spaces::SpaceOptions>, std::string> checked;
    for (std::size_t d = 0; d < distinct.size(); ++d) {
        if (!ok[d] || !named[d].space) continue;
        auto [it, first] = checked.try_emplace({named[d].space, named[d].options});
        if (first) {
            try {
                (void)named[d].space->build_graph(named[d].arch, named[d].options);
            } catch (const config_error& e) {
                if (named[d].options == opt.space_options) throw;
                it->second = e.what();
            }
        }
        if (!it->second.empty()) ok[d] = 0, failure[d] = it->second;
    }
    // the store holds the distinct networks that are used, renumbered
    auto& store = *ds.m_store;
    store.threads = opt.threads;
    std::vector<std::size_t> renumber(distinct.size(), 0);
    for (std::size_t d = 0; d < distinct.size(); ++d) {
        if (!ok[d]) continue;
        renumber[d] = store.keys.size();
        store.keys.push_back(distinct[d]);
        store.space.push_back(named[d].space);
        store.arch.push_back(named[d].arch);
        store.options.push_back(named[d].options);
        store.loaded.push_back(built[d]);
    }
    store.live.resize(store.keys.size());
    for (std::size_t k = 0; k < kept.size(); ++k) {
        const auto d = row_key[k];
        if (!ok[d]) {
            reject(kept[k],
                   (is_named[d] || named[d].space ? "bad architecture: " : "cannot load model: ") + failure[d]);
            continue;
        }
        ds.m_keys.push_back(distinct[d]);
        ds.m_lines.push_back(line_of(kept[k]));
        ds.m_item_key.push_back(renumber[d]);
        for (std::size_t c = 0; c < cols.size(); ++c) ds.m_values[c].push_back(row_values[k][c]);
    }
    std::sort(ds.m_skipped.begin(), ds.m_skipped.end(),
              [](const SkippedRow& a, const SkippedRow& b) { return a.line < b.line; });
    if (opt.strict && !ds.m_skipped.empty())
        raise<parse_error>(
            table.source, ":", ds.m_skipped[0].line, ": ", ds.m_skipped[0].reason,
            ds.m_skipped.size() > 1 ? " (and " + std::to_string(ds.m_skipped.size() - 1) + " more bad rows)" : "");
    ds.m_distinct = store.keys.size();
    if (ds.empty())
        raise<parse_error>(table.source, ": no usable rows (", table.size() + table.issues.size(), " data rows, ",
                           ds.m_skipped.size(), " skipped",
                           ds.m_skipped.empty() ? std::string()
                                                : "; first: line " + std::to_string(ds.m_skipped[0].line) + ": " +
                                                      ds.m_skipped[0].reason,
                           ")");
    return ds;
}
