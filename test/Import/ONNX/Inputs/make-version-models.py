# Writes the models of versions.test into the folder given.
import os
import sys

from onnx import TensorProto as T
from onnx import helper as h

out = sys.argv[1]


def save(name, nodes, inputs, outputs, opsets, ir=10, inits=(), functions=()):
    g = h.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid(d, v) for d, v in opsets],
                     functions=list(functions))
    m.ir_version = ir
    with open(os.path.join(out, name), "wb") as f:
        f.write(m.SerializeToString())


x = h.make_tensor_value_info("x", T.FLOAT, [2, 4])
y = h.make_tensor_value_info("y", T.FLOAT, [2, 4])
relu = [h.make_node("Relu", ["x"], ["y"], name="r")]
save("opset29.onnx", relu, [x], [y], [("", 29)])
save("ir15.onnx", relu, [x], [y], [("", 20)], ir=15)
save("domain.onnx", [h.make_node("FusedMatMul", ["x", "x"], ["y"], name="fused",
                                 domain="com.microsoft")],
     [x], [y], [("", 20), ("com.microsoft", 1)])
save("hardswish23.onnx", [h.make_node("HardSwish", ["x"], ["y"], name="h")], [x], [y],
     [("", 23)])

# A comparison of run-time values: folded from constants only.
cmp = h.make_tensor_value_info("c", T.BOOL, [2, 4])
save("less.onnx", [h.make_node("Less", ["x", "x"], ["c"], name="lt")], [x], [cmp], [("", 20)])

# A local function: y = relu(x) * x.
f = h.make_function("local", "ReluTimesInput", ["a"], ["b"],
                    [h.make_node("Relu", ["a"], ["r"]), h.make_node("Mul", ["r", "a"], ["b"])],
                    [h.make_opsetid("", 20)])
save("function.onnx", [h.make_node("ReluTimesInput", ["x"], ["y"], domain="local")],
     [x], [y], [("", 20), ("local", 1)], functions=[f])

# Opset 23: RMSNormalization, Attention with a bool mask and grouped K/V heads,
# Pad on integer labels, IsNaN, Not.
q = h.make_tensor_value_info("q", T.FLOAT, [1, 4, 3, 2])
k = h.make_tensor_value_info("k", T.FLOAT, [1, 2, 3, 2])
v = h.make_tensor_value_info("v", T.FLOAT, [1, 2, 3, 2])
mask = h.make_tensor_value_info("mask", T.BOOL, [3, 3])
labels = h.make_tensor_value_info("labels", T.INT64, [1, 3])
att = h.make_tensor_value_info("att", T.FLOAT, [1, 4, 3, 2])
padded = h.make_tensor_value_info("padded", T.INT64, [1, 4])
nan = h.make_tensor_value_info("nan", T.BOOL, [1, 4, 3, 2])
scale = h.make_tensor("scale", T.FLOAT, [2], [1.0, 2.0])
pads = h.make_tensor("pads", T.INT64, [4], [0, 0, 0, 1])
fill = h.make_tensor("fill", T.INT64, [], [-100])
save("opset23.onnx", [
    h.make_node("RMSNormalization", ["q", "scale"], ["n"], axis=-1, epsilon=1e-6),
    h.make_node("Attention", ["n", "k", "v", "mask"], ["att"]),
    h.make_node("Pad", ["labels", "pads", "fill"], ["padded"]),
    h.make_node("IsNaN", ["att"], ["isnan"]),
    h.make_node("Not", ["isnan"], ["nan"]),
], [q, k, v, mask, labels], [att, padded, nan], [("", 23)], inits=[scale, pads, fill])
