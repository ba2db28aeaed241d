#pragma once
/// @file dataset.hpp
/// A measured data set: a CSV file whose first column (or `key_column`) names a network and
/// whose other columns hold measured quantities (one column per device or quantity).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <dnncost/core/config.hpp>
#include <dnncost/core/error.hpp>
#include <dnncost/core/parallel.hpp>
#include <dnncost/graph/graph.hpp>
#include <dnncost/io/csv.hpp>
#include <dnncost/spaces/network_name.hpp>
#include <dnncost/spaces/registry.hpp>
#include <dnncost/train/train_data.hpp>

namespace dnncost::train {

/// The key column names networks by model file path.
inline constexpr std::string_view onnx_keys = "onnx";

/// "onnx" or the name of a registered search space. @throws config_error naming the choices
inline void check_space(std::string_view s) {
    if (s == onnx_keys) return;
    (void)spaces::find_space(s);
}

/// Turns a model file path into a graph (e.g. io::import_onnx). Throws on failure.
using GraphLoader = std::function<graph::Graph(const std::filesystem::path&)>;

/// A row that was left out, and why.
struct SkippedRow {
    std::size_t line = 0;
    std::string reason;
};

struct DatasetOptions {
    /// What the key column holds: "onnx" (model paths) or the name of a search space whose
    /// architecture strings it holds (spaces/registry.hpp). A key written `SPACE:ARCH`, or an
    /// NB201 string, names its own space whatever this says, so one data set can mix spaces.
    std::string space = "nb201";
    /// Build options of the space graphs (e.g. `prune=1` for nb201, `resolution=160` for ofa).
    spaces::SpaceOptions space_options{};
    /// Measured columns to load and check; empty: every column but the key.
    std::vector<std::string> columns{};
    /// Column holding the architecture string or model path; empty: the first column.
    std::string key_column{};
    /// Reject the whole data set at the first bad row instead of skipping it.
    bool strict = false;
    /// Required for model-path keys.
    GraphLoader loader{};
    /// Threads used to build graphs (0: hardware concurrency).
    unsigned threads = 0;
    /// The line in its file of each data row of the text, when the text is not the file itself
    /// (the ok rows of a results store), so that messages name the file's own lines; empty: the
    /// text's lines.
    std::vector<std::size_t> row_lines{};
    /// Lines of the file that the text does not carry, already left out, and why (the damaged
    /// lines of a results store): skipped() lists them among the text's own, in line order.
    std::vector<SkippedRow> left_out{};
};

/// Graphs of some items of a data set, kept alive as long as this object.
class GraphSet {
public:
    std::size_t size() const { return m_ptrs.size(); }
    bool empty() const { return m_ptrs.empty(); }
    const graph::Graph* operator[](std::size_t i) const { return m_ptrs.at(i); }
    auto begin() const { return m_ptrs.begin(); }
    auto end() const { return m_ptrs.end(); }
    /// One pointer per item, valid as long as this object. (A span taken from a temporary set,
    /// `std::span<const Graph* const> s = ds.graphs(items);`, dangles; passing the temporary
    /// straight to a function, `est.predict(ds.graphs(items))`, is fine.)
    const std::vector<const graph::Graph*>& pointers() const { return m_ptrs; }
    operator std::span<const graph::Graph* const>() const { return m_ptrs; }

private:
    friend class Dataset;
    std::vector<std::shared_ptr<const graph::Graph>> m_owned;
    std::vector<const graph::Graph*> m_ptrs;
};

namespace detail {
/// The distinct networks of a data set: loaded model files, or architecture strings of a search
/// space whose graphs are built on demand and cached while someone holds them.
struct GraphStore {
    unsigned threads = 0;
    std::vector<std::string> keys;
    std::vector<const spaces::SpaceInfo*> space;              ///< per key; nullptr for a loaded model
    std::vector<std::string> arch;                            ///< per key: the architecture string
    std::vector<spaces::SpaceOptions> options;                ///< per key: what its graph is built with
    std::vector<std::shared_ptr<const graph::Graph>> loaded;  ///< per key: the loaded model, if any
    std::mutex mutex;
    std::vector<std::weak_ptr<const graph::Graph>> live;  ///< space graphs somebody still holds

    bool all_loaded() const {
        return std::all_of(space.begin(), space.end(), [](const auto* s) { return s == nullptr; });
    }
    std::shared_ptr<const graph::Graph> get(std::size_t d) {
        if (!space.at(d)) return loaded.at(d);
        {
            const std::lock_guard lock(mutex);
            if (auto g = live.at(d).lock()) return g;
        }
        auto built = std::make_shared<const graph::Graph>(space[d]->build_graph(arch[d], options.at(d)));
        const std::lock_guard lock(mutex);
        if (auto g = live[d].lock()) return g;  // another thread was faster: share its graph
        live[d] = built;
        return built;
    }
};
}  // namespace detail

/// Plausible measured values (a latency in ms or s, an energy, a rate, a memory in bytes): squares
/// and ratios of values outside stay finite and meaningful inside. The top is a memory's scale (a
/// petabyte); a network's peak memory passes a gigabyte.
inline constexpr double min_measured_value = 1e-9;
inline constexpr double max_measured_value = 1e15;

/// The key is either
/// - an architecture string of a search space (DatasetOptions::space, or `SPACE:ARCH`), built
///   by the space's builder, with build options of its own appended as `@KEY=VALUE` over
///   DatasetOptions::space_options (spaces/network_name.hpp), or
/// - a synthesised network's name (`cnn:...`, `transformer:...`), built again when the data set
///   is loaded, or
/// - the path of a model file relative to the CSV's directory (or absolute), loaded by the
///   caller-supplied loader (the CLI passes io::import_onnx), so that this header stays free of
///   protobuf.
///
/// Model files are loaded once per distinct path (in parallel) when the data set is loaded and
/// shared by every row naming them. Architecture strings are only parsed then: their graphs
/// (~250 KB each for NB201, 4 GB for the whole space) are built on demand, in parallel, when a
/// subset is asked for, and live as long as some GraphSet or TrainData holds them; rows naming
/// the same network share one graph while it lives.
/// Rows with a missing, non-numeric, NaN/inf, non-positive, subnormal or implausible (outside [1e-9, 1e9])
/// value in a used column, a bad
/// architecture string, an unreadable model file or a wrong field count are either skipped and
/// reported in `Dataset::skipped` (file, line, reason), or, with `strict`, rejected by a
/// parse_error naming file and line. A data set left empty is an error either way.
class Dataset {
public:
    /// File the data came from (used in messages).
    const std::string& source() const { return m_source; }
    std::size_t size() const { return m_keys.size(); }
    bool empty() const { return m_keys.empty(); }
    /// Architecture string or model path of item i, as written in the CSV.
    const std::string& key(std::size_t i) const { return m_keys.at(i); }
    /// 1-based CSV line of item i.
    std::size_t line(std::size_t i) const { return m_lines.at(i); }
    /// The graph of item i (built now if it is an NB201 network nobody holds).
    std::shared_ptr<const graph::Graph> graph(std::size_t i) const { return m_store->get(m_item_key.at(i)); }
    const std::vector<std::string>& columns() const { return m_columns; }
    const std::vector<SkippedRow>& skipped() const { return m_skipped; }
    /// Number of distinct graphs (rows naming the same network share one).
    std::size_t distinct_graphs() const { return m_distinct; }

    bool has_column(std::string_view name) const { return find(name).has_value(); }
    /// Values of a loaded column, one per item. @throws config_error naming the loaded columns.
    const std::vector<double>& column(std::string_view name) const {
        if (auto c = find(name)) return m_values[*c];
        std::string cols;
        for (const auto& h : m_columns) cols += (cols.empty() ? "" : ", ") + h;
        raise<config_error>(m_source, ": no loaded column '", name, "' (loaded: ", cols, ")");
    }

    /// Graphs of the given items, valid as long as the returned set (those not alive yet are
    /// built in parallel).
    GraphSet graphs(std::span<const std::size_t> items) const {
        if (!m_store->all_loaded() && items.size() >= 64) {
            ThreadPool pool(m_store->threads);
            return graphs(items, &pool);
        }
        return graphs(items, nullptr);
    }
    /// Values of `column` for the given items.
    std::vector<double> values(std::span<const std::size_t> items, std::string_view col) const {
        const auto& v = column(col);
        check_items(items);
        std::vector<double> out;
        out.reserve(items.size());
        for (auto i : items) out.push_back(v[i]);
        return out;
    }
    /// The estimator's view of a subset: graphs and their values in `column`.
    TrainData subset(std::span<const std::size_t> items, std::string_view col) const {
        auto set = std::make_shared<const GraphSet>(graphs(items));
        return {set->pointers(), values(items, col), set};
    }
    /// The same for several columns at once (one model, several targets).
    MultiTrainData subset(std::span<const std::size_t> items, const std::vector<std::string>& cols) const {
        auto set = std::make_shared<const GraphSet>(graphs(items));
        MultiTrainData d;
        d.graphs = set->pointers();
        d.keep_alive = set;
        d.names = cols;
        for (const auto& c : cols) d.targets.push_back(values(items, c));
        return d;
    }
    /// f(graph) for every item, in parallel chunks (NB201 graphs are built and released chunk by
    /// chunk, so the whole space never sits in memory at once).
    template <class F>
    std::vector<double> map_graphs(F&& f) const {
        constexpr std::size_t chunk = 2048;
        std::vector<double> out(size());
        ThreadPool pool(m_store->threads);
        for (std::size_t s = 0; s < size(); s += chunk) {
            std::vector<std::size_t> part(std::min(chunk, size() - s));
            for (std::size_t k = 0; k < part.size(); ++k) part[k] = s + k;
            const auto set = graphs(part, &pool);
            pool.parallel_for(0, part.size(), [&](std::size_t k) { out[s + k] = static_cast<double>(f(*set[k])); });
        }
        return out;
    }
    /// Add a column computed by the caller (one value per item, positive and finite, like a
    /// measured one). @throws config_error for a name already loaded, a wrong count or a bad value
    void add_column(std::string name, std::vector<double> values) {
        if (has_column(name)) raise<config_error>(m_source, ": column '", name, "' is already loaded");
        if (values.size() != size())
            raise<config_error>(m_source, ": column '", name, "' has ", values.size(), " values for ", size(),
                                " items");
        for (std::size_t i = 0; i < values.size(); ++i)
            if (!(values[i] > 0) || !std::isfinite(values[i]))
                raise<config_error>(m_source, ":", m_lines[i], ": computed column '", name, "' is ", values[i],
                                    " for '", m_keys[i], "' (must be positive and finite)");
        m_columns.push_back(std::move(name));
        m_values.push_back(std::move(values));
    }
    /// Every item index 0..size()-1.
    std::vector<std::size_t> all_items() const {
        std::vector<std::size_t> v(size());
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = i;
        return v;
    }

private:
    /// graphs(items), those not alive yet built on `pool` (serially without one).
    GraphSet graphs(std::span<const std::size_t> items, ThreadPool* pool) const {
        GraphSet set;
        set.m_owned.resize(items.size());
        check_items(items);  // before any work
        const auto fill = [&](std::size_t k) { set.m_owned[k] = m_store->get(m_item_key[items[k]]); };
        if (pool)
            pool->parallel_for(0, items.size(), fill);
        else
            for (std::size_t k = 0; k < items.size(); ++k) fill(k);
        set.m_ptrs.reserve(items.size());
        for (const auto& g : set.m_owned) set.m_ptrs.push_back(g.get());
        return set;
    }
    void check_items(std::span<const std::size_t> items) const {
        for (auto i : items)
            if (i >= size()) raise<config_error>(m_source, ": item ", i, " is out of range (", size(), " items)");
    }
    std::optional<std::size_t> find(std::string_view name) const {
        for (std::size_t c = 0; c < m_columns.size(); ++c)
            if (m_columns[c] == name) return c;
        return std::nullopt;
    }

    friend Dataset load_dataset_text(std::string_view, std::string, const std::filesystem::path&,
                                     const DatasetOptions&);

    std::string m_source;
    std::vector<std::string> m_keys;
    std::vector<std::size_t> m_lines;
    std::shared_ptr<detail::GraphStore> m_store = std::make_shared<detail::GraphStore>();
    std::vector<std::size_t> m_item_key;  ///< item -> distinct network in m_store
    std::vector<std::string> m_columns;
    std::vector<std::vector<double>> m_values;  ///< [column][item]
    std::vector<SkippedRow> m_skipped;
    std::size_t m_distinct = 0;
};

/// Load a data set from CSV text. `base_dir` resolves relative model paths.
/// @throws parse_error (bad row under strict, malformed CSV, missing column, empty result),
///         config_error (unknown space, bad space options, model paths without a loader)
DNNCOST_FUNC Dataset load_dataset_text(std::string_view text, std::string source, const std::filesystem::path& base_dir,
                                 const DatasetOptions& opt);

/// Load a data set from a CSV file; relative model paths are resolved against its directory.
inline Dataset load_dataset(const std::filesystem::path& csv, const DatasetOptions& opt) {
    const auto base = csv.has_parent_path() ? csv.parent_path() : std::filesystem::path(".");
    return load_dataset_text(io::read_file(csv), csv.string(), base, opt);
}

}  // namespace dnncost::train

#if !defined(DNNCOST_COMPILED)
#include <dnncost/train/dataset_impl.hpp>
#endif
