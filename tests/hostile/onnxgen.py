"""A minimal ONNX writer on the protobuf wire format (python3 standard library only), for
building malformed and extreme models that no well-behaved exporter would write."""
import struct

FLOAT, INT64 = 1, 7


def _varint(n):
    n &= (1 << 64) - 1  # negative int64 values are ten-byte varints
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field, wire):
    return _varint((field << 3) | wire)


def vint(field, n):
    return _key(field, 0) + _varint(n)


def blob(field, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    return _key(field, 2) + _varint(len(data)) + data


def f32(field, x):
    return _key(field, 5) + struct.pack("<f", x)


def dim(d):
    return blob(1, vint(1, d) if isinstance(d, int) else blob(2, d))


def value_info(name, shape=None, elem=FLOAT):
    tensor = vint(1, elem)
    if shape is not None:
        tensor += blob(2, b"".join(dim(d) for d in shape))
    return blob(1, name) + blob(2, blob(1, tensor))


def attr(name, value):
    """An attribute from a Python value: int, float, str/bytes, list of ints or floats."""
    if isinstance(value, bool) or isinstance(value, int):
        return blob(1, name) + vint(3, value) + vint(20, 2)
    if isinstance(value, float):
        return blob(1, name) + f32(2, value) + vint(20, 1)
    if isinstance(value, (str, bytes)):
        return blob(1, name) + blob(4, value) + vint(20, 3)
    if all(isinstance(v, int) for v in value):
        return blob(1, name) + b"".join(vint(8, v) for v in value) + vint(20, 7)
    return blob(1, name) + b"".join(f32(7, v) for v in value) + vint(20, 6)


def node(op, inputs, outputs, name=None, attrs=None, domain=None):
    b = b"".join(blob(1, i) for i in inputs) + b"".join(blob(2, o) for o in outputs)
    b += blob(3, name if name is not None else outputs[0] if outputs else op)
    b += blob(4, op)
    for k, v in (attrs or {}).items():
        b += blob(5, attr(k, v))
    if domain is not None:
        b += blob(7, domain)
    return b


def tensor(name, dims, values=None, elem=FLOAT):
    b = b"".join(vint(1, d) for d in dims) + vint(2, elem) + blob(8, name)
    if values is not None:
        if elem == INT64:
            b += blob(9, b"".join(struct.pack("<q", v) for v in values))
        else:
            b += blob(9, b"".join(struct.pack("<f", v) for v in values))
    return b


def model(nodes, inputs, outputs, initializers=(), value_infos=(), opset=17, ir=8, name="g"):
    """nodes: encoded nodes; inputs/outputs/value_infos: encoded value infos."""
    g = b"".join(blob(1, n) for n in nodes) + blob(2, name)
    g += b"".join(blob(5, t) for t in initializers)
    g += b"".join(blob(11, i) for i in inputs) + b"".join(blob(12, o) for o in outputs)
    g += b"".join(blob(13, v) for v in value_infos)
    return vint(1, ir) + blob(2, "hostile") + blob(7, g) + blob(8, blob(1, "") + vint(2, opset))


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
