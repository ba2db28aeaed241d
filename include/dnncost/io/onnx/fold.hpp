#pragma once
/// @file fold.hpp
/// The shape folder's entry point: a table from operator type to evaluator (fold_ops.hpp), and
/// `evaluate`, which runs one node on constant inputs. The importer folds shape computations with
/// it (Shape -> Gather -> Unsqueeze -> Concat -> Reshape and friends) so that every compute node
/// ends up with concrete shapes.
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include <dnncost/io/onnx/fold_ops.hpp>

namespace dnncost::io::detail::onnx_impl {

/// What an evaluator reads besides the node's attributes.
enum class FoldReads {
    input_values,  ///< the values of its inputs: folded only when every input has values
    input_shape,   ///< only the shape of input 0 (Shape, Size)
    nothing,       ///< only attributes (Constant)
};

struct FoldRule {
    FoldResult (*evaluate)(const FoldRequest&) = nullptr;
    FoldReads reads = FoldReads::input_values;
};

/// Operator type -> evaluator.
class FoldTable {
public:
    void add(std::string op_type, FoldRule rule) { m_rules.insert_or_assign(std::move(op_type), rule); }
    /// The rule for an operator type, or null when the folder does not evaluate it.
    const FoldRule* find(const std::string& op_type) const {
        const auto it = m_rules.find(op_type);
        return it == m_rules.end() ? nullptr : &it->second;
    }

private:
    std::unordered_map<std::string, FoldRule> m_rules;
};

/// The operators the folder evaluates (built once, read-only afterwards).
inline const FoldTable& fold_table() {
    static const FoldTable table = [] {
        using namespace fold_ops;
        FoldTable t;
        t.add("Shape", {shape, FoldReads::input_shape});
        t.add("Size", {size, FoldReads::input_shape});
        t.add("Constant", {constant, FoldReads::nothing});
        t.add("Identity", {identity});
        t.add("Cast", {cast});
        t.add("Gather", {fold_ops::gather});
        t.add("Unsqueeze", {unsqueeze});
        t.add("Squeeze", {squeeze});
        t.add("Reshape", {reshape});
        t.add("Flatten", {flatten});
        t.add("Concat", {concat});
        t.add("Slice", {fold_ops::slice});
        t.add("Add", {binary<AddOp>});
        t.add("Sub", {binary<SubOp>});
        t.add("Mul", {binary<MulOp>});
        t.add("Div", {binary<DivOp>});
        t.add("Mod", {binary<ModOp>});
        t.add("Min", {binary<MinOp>});
        t.add("Max", {binary<MaxOp>});
        t.add("Equal", {binary<EqualOp>});
        t.add("Less", {binary<LessOp>});
        t.add("Greater", {binary<GreaterOp>});
        t.add("Neg", {sign_op<true>});
        t.add("Abs", {sign_op<false>});
        t.add("LessOrEqual", {binary<LessOrEqualOp>});
        t.add("GreaterOrEqual", {binary<GreaterOrEqualOp>});
        t.add("And", {binary<AndOp>});
        t.add("Or", {binary<OrOp>});
        t.add("Not", {logical_not});
        t.add("Floor", {rounding<Rounding::floor>});
        t.add("Ceil", {rounding<Rounding::ceil>});
        t.add("Round", {rounding<Rounding::round>});
        t.add("Sqrt", {rounding<Rounding::sqrt>});
        t.add("Where", {where});
        t.add("Transpose", {fold_ops::transpose});
        t.add("Expand", {fold_ops::expand});
        t.add("Tile", {fold_ops::tile});
        t.add("ConstantOfShape", {constant_of_shape});
        t.add("Range", {range});
        t.add("ReduceProd", {reduce<Reduction::product>});
        t.add("ReduceSum", {reduce<Reduction::sum>});
        t.add("ReduceMax", {reduce<Reduction::max>});
        t.add("ReduceMin", {reduce<Reduction::min>});
        return t;
    }();
    return table;
}

/// Evaluate one node on constant inputs: its outputs, or cannot_fold when the folder does not
/// know the operator or cannot compute this instance exactly.
inline FoldResult evaluate(const FoldRequest& request) {
    const FoldRule* rule = fold_table().find(request.node.op_type());
    if (!rule) throw cannot_fold{};
    return rule->evaluate(request);
}

/// Operators that only re-lay-out or relabel their first input: applied to a weight without
/// data, the result is still a weight (shape from inference, no data).
inline bool is_weight_layout_op(std::string_view op) {
    return op == "Identity" || op == "Transpose" || op == "Reshape" || op == "Flatten" || op == "Squeeze" ||
           op == "Unsqueeze" || op == "Cast" || op == "Dropout";
}

}  // namespace dnncost::io::detail::onnx_impl
