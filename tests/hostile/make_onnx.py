"""Writes the hostile ONNX models of the hostile-input suite into the current directory:
malformed structure and attributes, and shapes declared in the file that the operators
contradict. usage: python3 make_onnx.py"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from onnxgen import FLOAT, INT64, blob, model, node, tensor, value_info as vi, vint, write  # noqa: E402


def relu_model(name="relu", node_name=None, in_shape=(1, 4), out_shape=(1, 4), opset=17, ir=8):
    return model([node("Relu", ["x"], ["y"], name=node_name or name)], [vi("x", list(in_shape))],
                 [vi("y", list(out_shape) if out_shape is not None else None)], opset=opset, ir=ir)


def reshape_model(in_shape, target, declared):
    return model([node("Reshape", ["x", "s"], ["y"], name="reshape")], [vi("x", in_shape)], [vi("y", declared)],
                 initializers=[tensor("s", [len(target)], target, elem=INT64)])


def conv_model(attrs, declared=(1, 8, 8, 8), w_shape=(8, 3, 3, 3)):
    return model([node("Conv", ["x", "w"], ["y"], name="conv", attrs=attrs)], [vi("x", [1, 3, 8, 8])],
                 [vi("y", list(declared))], initializers=[tensor("w", list(w_shape))])


cases = {
    # a well-formed control model: must import
    "valid.onnx": relu_model(),
    # structure
    "empty.onnx": b"",
    "garbage.onnx": bytes(range(256)) * 4,
    "truncated.onnx": relu_model()[:-9],
    "no_graph.onnx": b"\x08\x08",
    "ir0.onnx": relu_model(ir=0),
    "opset9999.onnx": relu_model(opset=9999),
    "cycle.onnx": model([node("Add", ["x", "b"], ["a"], name="add"), node("Relu", ["a"], ["b"], name="relu")],
                        [vi("x", [1, 4])], [vi("b", [1, 4])]),
    "undefined_input.onnx": model([node("Relu", ["nowhere"], ["y"], name="relu")], [vi("x", [1, 4])],
                                  [vi("y", [1, 4])]),
    "two_writers.onnx": model([node("Relu", ["x"], ["y"], name="r1"), node("Relu", ["x"], ["y"], name="r2")],
                              [vi("x", [1, 4])], [vi("y", [1, 4])]),
    "unknown_op.onnx": model([node("FrobnicateX", ["x"], ["y"], name="frob")], [vi("x", [1, 4])],
                             [vi("y", [1, 4])]),
    "empty_op_type.onnx": model([node("", ["x"], ["y"], name="nameless")], [vi("x", [1, 4])], [vi("y", [1, 4])]),
    "input_no_shape.onnx": model([node("Relu", ["x"], ["y"])], [vi("x", None)], [vi("y", [1, 4])]),
    "input_not_tensor.onnx": model([node("Relu", ["x"], ["y"])], [b"\x0a\x01x"], [vi("y", [1, 4])]),
    "batch_negative.onnx": relu_model(in_shape=(-3, 4), out_shape=(-3, 4)),
    "batch_zero.onnx": relu_model(in_shape=(0, 4), out_shape=(0, 4)),
    "dim_negative.onnx": relu_model(in_shape=(1, -4), out_shape=(1, -4)),
    "dim_symbolic.onnx": relu_model(in_shape=(1, "n"), out_shape=(1, "n")),
    "dims_huge.onnx": relu_model(in_shape=(1 << 40, 1 << 40), out_shape=(1 << 40, 1 << 40)),
    "node_name_newline.onnx": model([node("Relu", ["ghost"], ["y"], name="evil\ndnncost: error: forged")],
                                    [vi("x", [1, 4])], [vi("y", [1, 4])]),
    "node_name_nul.onnx": model([node("Relu", ["ghost"], ["y"], name=b"cut\x00here\x1b[31m")],
                                [vi("x", [1, 4])], [vi("y", [1, 4])]),
    "node_name_bad_utf8.onnx": model([node("Relu", ["x"], ["y"], name=b"bad\xff\xfe\xc3name")],
                                     [vi("x", [1, 4])], [vi("y", [1, 4])]),
    "node_name_huge.onnx": model([node("Relu", ["ghost"], ["y"], name="n" * 1000000)], [vi("x", [1, 4])],
                                 [vi("y", [1, 4])]),
    "value_name_control.onnx": model([node("Relu", ["gh\x07ost\r"], ["y"], name="relu")], [vi("x", [1, 4])],
                                     [vi("y", [1, 4])]),
    # attributes
    "conv_stride0.onnx": conv_model({"strides": [0, 1]}),
    "conv_group0.onnx": conv_model({"group": 0}),
    "conv_pads_negative.onnx": conv_model({"pads": [-1, -1, -1, -1]}),
    "conv_auto_pad_garbage.onnx": conv_model({"auto_pad": "GARBAGE"}),
    "conv_dilation_huge.onnx": conv_model({"dilations": [1 << 40, 1]}),
    "pool_ceil_mode7.onnx": model([node("MaxPool", ["x"], ["y"], name="pool", attrs={"kernel_shape": [2, 2],
                                                                                      "ceil_mode": 7})],
                                  [vi("x", [1, 3, 8, 8])], [vi("y", [1, 3, 4, 4])]),
    "gemm_transB_5.onnx": model([node("Gemm", ["x", "w"], ["y"], name="gemm", attrs={"transB": 5})],
                                [vi("x", [2, 8])], [vi("y", [2, 4])], initializers=[tensor("w", [4, 8])]),
    "attr_wrong_type.onnx": conv_model({"strides": 1.5}),
    # shapes: declared output shapes the operator contradicts
    "matmul_broadcast.onnx": model([node("MatMul", ["a", "b"], ["y"], name="matmul")], [vi("a", [3, 2, 8])],
                                   [vi("y", [1, 8])], initializers=[tensor("b", [5, 8, 4])]),
    "matmul_declared_wrong.onnx": model([node("MatMul", ["a", "b"], ["y"], name="matmul")], [vi("a", [2, 8])],
                                        [vi("y", [2, 5])], initializers=[tensor("b", [8, 4])]),
    "matmul_rank_wrong.onnx": model([node("MatMul", ["a", "b"], ["y"], name="matmul")], [vi("a", [2, 8])],
                                    [vi("y", [2, 4, 1])], initializers=[tensor("b", [8, 4])]),
    "reshape_two_minus1.onnx": reshape_model([2, 3, 4], [-1, -1], [6, 4]),
    "reshape_minus5.onnx": reshape_model([2, 3, 4], [-5], [24]),
    "reshape_wrong_size.onnx": reshape_model([2, 3, 4], [5, 5], [5, 5]),
    "reshape_zero_copy_wrong.onnx": reshape_model([2, 3, 4], [0, -1], [3, 8]),
    "flatten_axis100.onnx": model([node("Flatten", ["x"], ["y"], name="flatten", attrs={"axis": 100})],
                                  [vi("x", [2, 3, 4])], [vi("y", [24, 1])]),
    "add_broadcast.onnx": model([node("Add", ["a", "b"], ["y"], name="add")], [vi("a", [2, 3])], [vi("y", [2, 3])],
                                initializers=[tensor("b", [4, 3])]),
    "concat_mismatch.onnx": model([node("Concat", ["a", "b"], ["y"], name="concat", attrs={"axis": 0})],
                                  [vi("a", [2, 3])], [vi("y", [4, 3])], initializers=[tensor("b", [2, 5])]),
    "gemm_k_mismatch.onnx": model([node("Gemm", ["x", "w"], ["y"], name="gemm")], [vi("x", [2, 8])],
                                  [vi("y", [2, 4])], initializers=[tensor("w", [7, 4])]),
    "conv_channels.onnx": conv_model({}, declared=(1, 8, 6, 6), w_shape=(8, 5, 3, 3)),
    "conv_declared_wrong.onnx": conv_model({}, declared=(1, 8, 8, 8)),
    "transpose_perm.onnx": model([node("Transpose", ["x"], ["y"], name="transpose", attrs={"perm": [0, 0]})],
                                 [vi("x", [2, 3])], [vi("y", [3, 2])]),
    "relu_declared_wrong.onnx": relu_model(out_shape=(1, 5)),
    "softmax_axis.onnx": model([node("Softmax", ["x"], ["y"], name="softmax", attrs={"axis": 7})],
                               [vi("x", [2, 3])], [vi("y", [2, 3])]),
    "value_info_wrong.onnx": model([node("Relu", ["x"], ["h"], name="r1"), node("Relu", ["h"], ["y"], name="r2")],
                                   [vi("x", [1, 4])], [vi("y", [1, 4])], value_infos=[vi("h", [9, 9])]),
    # shapes that are right: must import
    "reshape_zero_copy.onnx": reshape_model([2, 3, 4], [0, -1], [2, 12]),
    "matmul_broadcast_ok.onnx": model([node("MatMul", ["a", "b"], ["y"], name="matmul")], [vi("a", [3, 2, 8])],
                                      [vi("y", [3, 2, 4])], initializers=[tensor("b", [1, 8, 4])]),
}


# Further hostile models: huge folded or broadcast shapes, malformed tensors and declarations.
def m1(nodes, ins, outs, inits=(), **kw):
    return model(nodes, ins, outs, initializers=inits, **kw)


T = tensor
cases["const_huge.onnx"] = m1([node("ConstantOfShape", ["s"], ["y"], name="cos")], [], [vi("y", None)], [T("s",[2],[1<<30,1<<30],elem=INT64)])
cases["expand_huge.onnx"] = m1([node("Expand", ["x","s"], ["y"], name="expand")], [vi("x",[1,1])], [vi("y", None)], [T("s",[2],[1<<31,1<<31],elem=INT64)])
cases["tile_huge.onnx"] = m1([node("Tile", ["x","r"], ["y"], name="tile")], [vi("x",[4,4])], [vi("y", None)], [T("r",[2],[1<<40,1<<40],elem=INT64)])
cases["resize_huge.onnx"] = m1([node("Resize", ["x","","sc"], ["y"], name="resize")], [vi("x",[1,3,8,8])], [vi("y", None)], [T("sc",[4],[1.0,1.0,1e9,1e9])])
cases["pad_huge.onnx"] = m1([node("Pad", ["x","p"], ["y"], name="pad")], [vi("x",[1,3,8,8])], [vi("y", None)], [T("p",[8],[0,0,1<<40,1<<40,0,0,1<<40,1<<40],elem=INT64)])
cases["pad_negative.onnx"] = m1([node("Pad", ["x","p"], ["y"], name="pad")], [vi("x",[1,3,8,8])], [vi("y", None)], [T("p",[8],[0,0,-20,0,0,0,0,0],elem=INT64)])
cases["range_huge.onnx"] = m1([node("Range", ["a","b","d"], ["y"], name="range")], [], [vi("y", None)], [T("a",[],[0],elem=INT64),T("b",[],[1<<50],elem=INT64),T("d",[],[1],elem=INT64)])
cases["range_zero_delta.onnx"] = m1([node("Range", ["a","b","d"], ["y"], name="range"), node("Relu",["y"],["z"],name="r")], [], [vi("z", None)], [T("a",[],[0],elem=INT64),T("b",[],[10],elem=INT64),T("d",[],[0],elem=INT64)])
cases["init_dims_overflow.onnx"] = m1([node("Add", ["x","w"], ["y"], name="add")], [vi("x",[1,4])], [vi("y", None)], [T("w",[1<<62,1<<62])])
cases["init_raw_short.onnx"] = m1([node("Add", ["x","w"], ["y"], name="add")], [vi("x",[1,4])], [vi("y", None)], [T("w",[1,4],[1.0])])
cases["init_negative_dim.onnx"] = m1([node("Add", ["x","w"], ["y"], name="add")], [vi("x",[1,4])], [vi("y", None)], [T("w",[-1,4])])
# external data pointing to /etc/passwd: TensorProto data_location=14 (EXTERNAL=1), external_data=13 (StringStringEntryProto key=1 value=2)
ext = vint(1,1)+vint(1,4)+vint(2,1)+blob(8,"w")+blob(13, blob(1,"location")+blob(2,"/etc/passwd"))+vint(14,1)
cases["external_data.onnx"] = m1([node("Add", ["x","w"], ["y"], name="add")], [vi("x",[1,4])], [vi("y", None)], [ext])
ext2 = vint(1,1)+vint(1,4)+vint(2,1)+blob(8,"w")+blob(13, blob(1,"location")+blob(2,"../../../../dev/zero"))+vint(14,1)
cases["external_zero.onnx"] = m1([node("Add", ["x","w"], ["y"], name="add")], [vi("x",[1,4])], [vi("y", None)], [ext2])
cases["if_node.onnx"] = m1([node("If", ["c"], ["y"], name="if")], [vi("c",[],elem=9)], [vi("y",[1])])
cases["loop_no_body.onnx"] = m1([node("Loop", ["", ""], ["y"], name="loop")], [vi("x",[1])], [vi("y",[1])])
cases["split_zero.onnx"] = m1([node("Split", ["x"], ["a","b"], name="split", attrs={"axis":0})], [vi("x",[1,4])], [vi("a",None), vi("b",None)])
cases["shape_chain_bad.onnx"] = m1([node("Shape",["x"],["s"],name="shape"), node("Reshape",["x","s2"],["y"],name="reshape"), node("Gather",["s","i"],["s2"],name="g")], [vi("x",[2,3])], [vi("y",None)], [T("i",[1],[7],elem=INT64)])
cases["gather_index_out_of_range.onnx"] = m1([node("Gather",["x","i"],["y"],name="embed",attrs={"axis":0})], [vi("x",[10,4])], [vi("y",None)], [T("i",[2],[3,10],elem=INT64)])
cases["gather_index_negative_ok.onnx"] = m1([node("Gather",["x","i"],["y"],name="embed",attrs={"axis":0})], [vi("x",[10,4])], [vi("y",None)], [T("i",[2],[-10,9],elem=INT64)])
cases["conv_kernel_bigger.onnx"] = m1([node("Conv", ["x","w"], ["y"], name="conv")], [vi("x",[1,3,2,2])], [vi("y",None)], [T("w",[8,3,5,5])])
cases["maxpool_kernel_bigger.onnx"] = m1([node("MaxPool", ["x"], ["y"], name="pool", attrs={"kernel_shape":[9,9]})], [vi("x",[1,3,2,2])], [vi("y",None)])
cases["matmul_scalar.onnx"] = m1([node("MatMul", ["x","w"], ["y"], name="mm")], [vi("x",[])], [vi("y",None)], [T("w",[])])
cases["cast_bad_to.onnx"] = m1([node("Cast", ["x"], ["y"], name="cast", attrs={"to":999})], [vi("x",[1,4])], [vi("y",None)])
cases["elem_type_bad.onnx"] = m1([node("Relu", ["x"], ["y"], name="relu")], [vi("x",[1,4],elem=999)], [vi("y",None)])
cases["dup_input.onnx"] = m1([node("Relu", ["x"], ["y"], name="relu")], [vi("x",[1,4]), vi("x",[2,4])], [vi("y",None)])
cases["output_is_input.onnx"] = m1([node("Relu", ["x"], ["y"], name="relu")], [vi("x",[1,4])], [vi("x",[1,4])])
cases["no_outputs.onnx"] = m1([node("Relu", ["x"], ["y"], name="relu")], [vi("x",[1,4])], [])
cases["node_no_outputs.onnx"] = m1([node("Relu", ["x"], [], name="relu")], [vi("x",[1,4])], [])
cases["many_inputs.onnx"] = m1([node("Sum", ["x"]*100000, ["y"], name="sum")], [vi("x",[1,4])], [vi("y",None)])
cases["deep_custom_domain.onnx"] = m1([node("Foo", ["x"], ["y"], name="foo", domain="com.evil")], [vi("x",[1,4])], [vi("y",[1,-4])])
cases["custom_domain_huge.onnx"] = m1([node("Foo", ["x"], ["y"], name="foo", domain="com.evil")], [vi("x",[1,4])], [vi("y",[1<<40,1<<40])])
cases["opset_dup.onnx"] = vint(1,8)+blob(7, blob(1,node("Relu",["x"],["y"]))+blob(11,vi("x",[1,4]))+blob(12,vi("y",None)))+blob(8, blob(1,"")+vint(2,17))+blob(8, blob(1,"")+vint(2,5))
cases["ir_negative.onnx"] = m1([node("Relu", ["x"], ["y"], name="relu")], [vi("x",[1,4])], [vi("y",None)], ir=-5)
cases["batchnorm_mismatch.onnx"] = m1([node("BatchNormalization", ["x","s","b","m","v"], ["y"], name="bn")], [vi("x",[1,3,4,4])], [vi("y",None)], [T("s",[5]),T("b",[5]),T("m",[5]),T("v",[5])])
cases["lstm_bad.onnx"] = m1([node("LSTM", ["x","w","r"], ["y"], name="lstm", attrs={"hidden_size":-4})], [vi("x",[2,1,3])], [vi("y",None)], [T("w",[1,16,3]),T("r",[1,16,4])])
cases["einsum_bad.onnx"] = m1([node("Einsum", ["x"], ["y"], name="einsum", attrs={"equation":"ij->kk"})], [vi("x",[2,3])], [vi("y",None)])
cases["topk_k_huge.onnx"] = m1([node("TopK", ["x","k"], ["v","i"], name="topk")], [vi("x",[2,3])], [vi("v",None),vi("i",None)], [T("k",[1],[99],elem=INT64)])

for name, data in cases.items():
    write(name, data)
