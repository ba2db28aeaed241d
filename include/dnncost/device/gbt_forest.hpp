#pragma once
/// @file gbt_forest.hpp
/// The trees of a gradient-boosted regressor as one flat node array, read from XGBoost's JSON
/// model and evaluated the way XGBoost's CPU predictor evaluates them: features as float, a split
/// sends `x < threshold` left and a missing (NaN) feature to the node's default child, and the
/// leaves are added in float, tree after tree, onto the base score. Pricing a network asks for a
/// few rows per kernel kind; XGBoost's own prediction builds a matrix and a thread team for every
/// call, which costs more than walking the trees. Needs no XGBoost: the model is text.
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include <dnncost/core/error.hpp>

namespace dnncost::device {

namespace detail {
/// A cursor over JSON text that finds members and elements without building a document: the
/// model holds hundreds of trees of a dozen arrays each, of which the forest reads five.
class JsonCursor {
public:
    explicit JsonCursor(std::string_view text) : m_text(text) {}

    /// The text of the value starting at `pos` (after white space), and the position after it.
    std::string_view value_at(std::size_t& pos) const {
        skip_space(pos);
        const std::size_t begin = pos;
        if (pos >= m_text.size()) fail("a value", pos);
        const char c = m_text[pos];
        if (c == '{' || c == '[') {
            int depth = 0;
            while (pos < m_text.size()) {
                while (pos < m_text.size() && !is_structural(m_text[pos])) ++pos;  // most of the text: numbers
                if (pos >= m_text.size()) break;
                const char d = m_text[pos];
                if (d == '"') {
                    skip_string(pos);
                    continue;
                }
                depth += d == '{' || d == '[' ? 1 : -1;
                ++pos;
                if (depth == 0) return m_text.substr(begin, pos - begin);
            }
            fail("the end of an object or array", begin);
        }
        if (c == '"') {
            skip_string(pos);
            return m_text.substr(begin, pos - begin);
        }
        while (pos < m_text.size() && !is_space(m_text[pos]) && m_text[pos] != ',' && m_text[pos] != '}' &&
               m_text[pos] != ']')
            ++pos;
        if (pos == begin) fail("a value", begin);
        return m_text.substr(begin, pos - begin);
    }

    /// Calls f(key, value) for each member of the object `obj` (text of an object).
    template <class F>
    static void members(std::string_view obj, F&& f) {
        const JsonCursor c(obj);
        std::size_t pos = 0;
        c.expect(pos, '{');
        c.skip_space(pos);
        if (pos < obj.size() && obj[pos] == '}') return;
        for (;;) {
            const auto key = unquote(c.value_at(pos));
            c.expect(pos, ':');
            f(key, c.value_at(pos));
            c.skip_space(pos);
            if (pos < obj.size() && obj[pos] == '}') return;
            c.expect(pos, ',');
        }
    }
    /// Calls f(value) for each element of the array `arr` (text of an array).
    template <class F>
    static void elements(std::string_view arr, F&& f) {
        const JsonCursor c(arr);
        std::size_t pos = 0;
        c.expect(pos, '[');
        c.skip_space(pos);
        if (pos < arr.size() && arr[pos] == ']') return;
        for (;;) {
            f(c.value_at(pos));
            c.skip_space(pos);
            if (pos < arr.size() && arr[pos] == ']') return;
            c.expect(pos, ',');
        }
    }
    /// The members `keys` of the object `obj`, found in one pass over it.
    /// @throws config_error naming the first of them it lacks
    template <std::size_t N>
    static std::array<std::string_view, N> member(std::string_view obj, const std::array<std::string_view, N>& keys) {
        std::array<std::string_view, N> found{};
        std::array<bool, N> seen{};
        members(obj, [&](std::string_view k, std::string_view v) {
            for (std::size_t i = 0; i < N; ++i)
                if (!seen[i] && k == keys[i]) {
                    found[i] = v;
                    seen[i] = true;
                }
        });
        for (std::size_t i = 0; i < N; ++i)
            if (!seen[i]) raise<config_error>("XGBoost model: no member '", keys[i], "' where one was expected");
        return found;
    }
    /// The member `key` of the object `obj`. @throws config_error when it has none
    static std::string_view member(std::string_view obj, std::string_view key) { return member<1>(obj, {key})[0]; }
    /// A string's contents (XGBoost's keys and numbers-as-strings carry no escapes), or the text
    /// itself when it is not a string.
    static std::string_view unquote(std::string_view v) {
        return v.size() >= 2 && v.front() == '"' && v.back() == '"' ? v.substr(1, v.size() - 2) : v;
    }

private:
    static bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
    static bool is_structural(char c) {
        static const auto table = [] {
            std::array<bool, 256> t{};
            for (const unsigned char s : {'"', '{', '}', '[', ']'}) t[s] = true;
            return t;
        }();
        return table[static_cast<unsigned char>(c)];
    }
    void skip_space(std::size_t& pos) const {
        while (pos < m_text.size() && is_space(m_text[pos])) ++pos;
    }
    void skip_string(std::size_t& pos) const {
        const std::size_t begin = pos++;
        while (pos < m_text.size() && m_text[pos] != '"') pos += m_text[pos] == '\\' ? 2 : 1;
        if (pos >= m_text.size()) fail("the end of a string", begin);
        ++pos;
    }
    void expect(std::size_t& pos, char c) const {
        skip_space(pos);
        if (pos >= m_text.size() || m_text[pos] != c) fail(std::string("'") + c + "'", pos);
        ++pos;
    }
    [[noreturn]] void fail(const std::string& what, std::size_t pos) const {
        raise<config_error>("XGBoost model: expected ", what, " at character ", pos, " of its JSON");
    }
    std::string_view m_text;
};

/// A number of XGBoost's JSON (bare, or in a string as XGBoost writes its parameters), read
/// exactly: a float through from_chars, not through double, which could round twice.
template <class T>
T json_number(std::string_view v, std::string_view what) {
    v = JsonCursor::unquote(v);
    T out{};
    if (v == "true" || v == "false") {
        if constexpr (std::is_integral_v<T>) return v == "true" ? T{1} : T{0};
    }
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc{} || end != v.data() + v.size())
        raise<config_error>("XGBoost model: ", what, " '", v, "' is not a number");
    return out;
}
}  // namespace detail

/// Regression trees with one output, summed onto a base score.
class GbtForest {
public:
    /// The forest of XGBoost's JSON model (XGBoosterSaveModelToBuffer with format "json") of a
    /// single-output gbtree booster with numerical splits.
    /// @throws config_error for another kind of model, or a malformed tree
    static GbtForest from_xgboost_json(std::string_view json) {
        using detail::JsonCursor;
        const auto learner = JsonCursor::member(json, "learner");
        const auto [param, booster] = JsonCursor::member<2>(learner, {"learner_model_param", "gradient_booster"});
        const auto [base, features, classes] = JsonCursor::member<3>(param, {"base_score", "num_feature", "num_class"});
        GbtForest f;
        f.m_base = detail::json_number<float>(base, "base score");
        f.m_features = detail::json_number<std::size_t>(features, "feature count");
        const auto targets = detail::json_number<int>(classes, "class count");
        const auto [name, model_text] = JsonCursor::member<2>(booster, {"name", "model"});
        if (JsonCursor::unquote(name) != "gbtree" || targets > 1)
            raise<config_error>("XGBoost model: only a single-output gbtree booster is read");
        const auto [tree_info, trees] = JsonCursor::member<2>(model_text, {"tree_info", "trees"});
        JsonCursor::elements(tree_info, [&](std::string_view g) {
            if (detail::json_number<int>(g, "tree group") != 0)
                raise<config_error>("XGBoost model: a tree of output group ", g, "; only one output is read");
        });
        JsonCursor::elements(trees, [&](std::string_view tree) { f.add_tree(tree); });
        return f;
    }

    std::size_t num_trees() const { return m_roots.size(); }
    std::size_t num_features() const { return m_features; }
    float base_score() const { return m_base; }
    /// Per feature, the distinct thresholds its splits use, in increasing order.
    std::vector<std::vector<float>> thresholds() const {
        std::vector<std::vector<float>> t(m_features);
        for (std::size_t i = 0; i < m_nodes.size(); ++i)
            if (!is_leaf(i)) t[m_nodes[i].feature].push_back(m_nodes[i].value);
        for (auto& v : t) {
            std::sort(v.begin(), v.end());
            v.erase(std::unique(v.begin(), v.end()), v.end());
        }
        return t;
    }

    /// The forest's output for each of `rows` rows of num_features() floats (row-major in `x`),
    /// written to `out`. A row walks `lanes` trees at once, each lane for as many steps as the
    /// deepest of them (a leaf leads to itself), so that the walks' loads overlap; the leaves are
    /// then added in tree order, as XGBoost adds them. Every row walks one group of trees before
    /// any row walks the next: the group's nodes, fetched for the first row, serve the others.
    /// @throws shape_error for sizes that do not match
    void predict(std::span<const float> x, std::span<float> out) const {
        const std::size_t rows = out.size();
        if (x.size() != rows * m_features)
            raise<shape_error>("GbtForest::predict: ", x.size(), " features for ", rows, " rows of ", m_features);
        const std::size_t trees = m_roots.size(), full = trees / lanes * lanes;
        std::fill(out.begin(), out.end(), m_base);
        for (std::size_t t = 0; t < trees; t += lanes) {
            const std::size_t width = t < full ? lanes : trees - t;
            const int depth = m_group_depth[t / lanes];
            for (std::size_t r = 0; r < rows; ++r) {
                const float* row = x.data() + r * m_features;
                std::int32_t at[lanes];
                for (std::size_t l = 0; l < lanes; ++l) at[l] = m_roots[t + (l < width ? l : 0)];
                for (int step = 0; step < depth; ++step)
                    for (std::size_t l = 0; l < lanes; ++l) at[l] = next(at[l], row);
                float sum = out[r];
                for (std::size_t l = 0; l < width; ++l) sum += m_nodes[static_cast<std::size_t>(at[l])].value;
                out[r] = sum;
            }
        }
    }

private:
    static constexpr std::size_t lanes = 8;

    /// A split (feature, threshold in `value`, default side) or a leaf (its value). A split's
    /// children lie side by side, the left one at `left`; a leaf's `left` is itself and its
    /// `right_step` 0, so that it leads to itself. Indices are into the whole forest's array.
    /// 16 bytes: four nodes to a cache line and none across two, as the walks wait for nodes.
    struct Node {
        float value = 0;
        std::int32_t left = 0;
        std::uint32_t feature = 0;
        std::uint8_t default_left = 0;
        std::uint8_t right_step = 0;
    };
    static_assert(sizeof(Node) == 16);
    bool is_leaf(std::size_t i) const { return m_nodes[i].right_step == 0; }

    /// The node after `at` for `row`: `x < threshold` left, a missing value the default side.
    /// Without a branch: the side is data, and a mispredicted branch would undo the overlap of
    /// the lanes' walks.
    std::int32_t next(std::int32_t at, const float* row) const {
        const Node& n = m_nodes[static_cast<std::size_t>(at)];
        const float v = row[n.feature];
        const unsigned missing_left = static_cast<unsigned>(v != v) & n.default_left;  // v != v: NaN
        const unsigned right = static_cast<unsigned>(!(v < n.value)) & (missing_left ^ 1u);
        return n.left + static_cast<std::int32_t>(right * n.right_step);
    }

    void add_tree(std::string_view tree) {
        using detail::JsonCursor;
        std::vector<std::int64_t> left, right, feature, default_left;
        std::vector<float> value;
        std::int64_t categorical = 0;  // split_type is absent from models of older XGBoost versions
        const auto ints = [](std::string_view text, std::string_view what, std::vector<std::int64_t>& v) {
            JsonCursor::elements(text,
                                 [&](std::string_view e) { v.push_back(detail::json_number<std::int64_t>(e, what)); });
        };
        JsonCursor::members(tree, [&](std::string_view k, std::string_view v) {
            if (k == "left_children") ints(v, k, left);
            if (k == "right_children") ints(v, k, right);
            if (k == "split_indices") ints(v, k, feature);
            if (k == "default_left") ints(v, k, default_left);
            if (k == "split_conditions")
                JsonCursor::elements(v, [&](std::string_view e) { value.push_back(detail::json_number<float>(e, k)); });
            if (k == "split_type")
                JsonCursor::elements(v,
                                     [&](std::string_view e) { categorical += detail::json_number<int>(e, k) != 0; });
        });
        const std::size_t n = left.size();
        if (n == 0 || right.size() != n || feature.size() != n || default_left.size() != n || value.size() != n)
            raise<config_error>("XGBoost model: tree ", m_roots.size(), " has arrays of different lengths");
        if (categorical > 0)
            raise<config_error>("XGBoost model: tree ", m_roots.size(),
                                " has categorical splits; only numerical ones are read");
        const auto base = m_nodes.size();
        if (base + n > static_cast<std::size_t>(INT32_MAX)) raise<config_error>("XGBoost model: too many tree nodes");
        // every node reached once from the root: the walk in predict() ends, and reads no node twice
        std::vector<char> reached(n, 0);
        std::vector<std::pair<std::size_t, int>> stack{{0, 0}};  // (node, its depth)
        reached[0] = 1;
        int depth = 0;
        while (!stack.empty()) {
            const auto [i, d] = stack.back();
            stack.pop_back();
            depth = std::max(depth, d);
            if (left[i] < 0) continue;
            for (const auto c : {left[i], right[i]}) {
                if (c < 0 || static_cast<std::size_t>(c) >= n || reached[static_cast<std::size_t>(c)])
                    raise<config_error>("XGBoost model: node ", i, " of tree ", m_roots.size(), " has child ", c,
                                        ", not a fresh node of its ", n);
                reached[static_cast<std::size_t>(c)] = 1;
                stack.emplace_back(static_cast<std::size_t>(c), d + 1);
            }
            if (feature[i] < 0 || static_cast<std::size_t>(feature[i]) >= m_features)
                raise<config_error>("XGBoost model: node ", i, " of tree ", m_roots.size(), " splits on feature ",
                                    feature[i], " of ", m_features);
        }
        // breadth first from the root, each split's children side by side (nodes no walk reaches
        // are left out)
        std::vector<std::int32_t> place(n, -1);
        std::vector<std::size_t> queue{0};
        place[0] = 0;
        for (std::size_t q = 0; q < queue.size(); ++q) {
            const auto i = queue[q];
            if (left[i] < 0) continue;
            for (const auto c : {left[i], right[i]}) {
                place[static_cast<std::size_t>(c)] = static_cast<std::int32_t>(queue.size());
                queue.push_back(static_cast<std::size_t>(c));
            }
        }
        m_nodes.resize(base + queue.size());
        for (const auto i : queue) {
            const auto at = base + static_cast<std::size_t>(place[i]);
            Node& node = m_nodes[at];
            node.value = value[i];
            node.left = static_cast<std::int32_t>(at);
            if (left[i] >= 0) {
                const auto child = place[static_cast<std::size_t>(left[i])];
                node.left = static_cast<std::int32_t>(base + static_cast<std::size_t>(child));
                node.right_step = 1;
                node.feature = static_cast<std::uint32_t>(feature[i]);
                node.default_left = default_left[i] != 0;
            }
        }
        if (m_roots.size() % lanes == 0) m_group_depth.push_back(0);
        m_group_depth.back() = std::max(m_group_depth.back(), depth);
        m_roots.push_back(static_cast<std::int32_t>(base));
    }

    std::vector<Node> m_nodes;
    std::vector<std::int32_t> m_roots;
    std::vector<int> m_group_depth;  ///< per `lanes` trees in order: the deepest one's depth
    float m_base = 0;
    std::size_t m_features = 0;
};

}  // namespace dnncost::device
