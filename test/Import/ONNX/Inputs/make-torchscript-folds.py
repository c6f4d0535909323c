# Writes the models of torchscript-folds.test into the folder given: what the
# TorchScript exporter's constant folding leaves in a model.
import os
import sys

import numpy as np
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

out = sys.argv[1]


def save(name, nodes, inputs, outputs, inits):
    g = h.make_graph(nodes, "g", inputs, outputs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 20)])
    m.ir_version = 10
    with open(os.path.join(out, name), "wb") as f:
        f.write(m.SerializeToString())


rng = np.random.RandomState(0)
emb = rng.randn(5, 3).astype(np.float32)
tokens = h.make_tensor_value_info("tokens", T.INT64, [2])
loss = h.make_tensor_value_info("loss", T.FLOAT, [])
head = [h.make_node("Gather", ["emb.weight", "tokens"], ["x"], name="embed"),
        h.make_node("MatMul", ["x", "onnx::MatMul_7"], ["logits"], name="head"),
        h.make_node("ReduceSum", ["logits"], ["loss"], keepdims=0, name="sum")]

# A tied weight: the output layer reads the embedding transposed, folded into an
# anonymous initializer that is the embedding's values transposed, bit for bit.
save("tied.onnx", head, [tokens], [loss],
     [nh.from_array(emb, "emb.weight"), nh.from_array(emb.T.copy(), "onnx::MatMul_7")])

# A folded copy that is no named weight transposed (its source was dropped): it
# trains under its own name.
save("untied.onnx", head, [tokens], [loss],
     [nh.from_array(emb, "emb.weight"),
      nh.from_array(rng.randn(3, 5).astype(np.float32), "onnx::MatMul_7")])

# Two named weights with equal values: which one the copy came from is unknown.
save("ambiguous.onnx", head, [tokens], [loss],
     [nh.from_array(emb, "emb.weight"), nh.from_array(emb, "other.weight"),
      nh.from_array(emb.T.copy(), "onnx::MatMul_7")])

# Labels padded by pads the export computes from constants through Transpose and
# Flatten (as transformers' loss does), and a run-time Flatten.
x = h.make_tensor_value_info("x", T.FLOAT, [2, 3, 4])
labels = h.make_tensor_value_info("labels", T.INT64, [2, 3])
flat = h.make_tensor_value_info("flat", T.FLOAT, [2, 12])
padded = h.make_tensor_value_info("padded", T.INT64, [2, 5])
# [begin, end] per axis; transposed and flattened: ONNX's [begins..., ends...].
pads = np.array([[0, 0], [1, 1]], dtype=np.int64)
save("flatten-transpose.onnx",
     [h.make_node("Transpose", ["pairs"], ["pairsT"], perm=[1, 0], name="t"),
      h.make_node("Flatten", ["pairsT"], ["pads2d"], axis=0, name="f"),
      h.make_node("Squeeze", ["pads2d", "zero"], ["pads"], name="s"),
      h.make_node("Pad", ["labels", "pads", "fill"], ["padded"], name="pad"),
      h.make_node("Flatten", ["x"], ["flat"], axis=1, name="flatten")],
     [x, labels], [flat, padded],
     [nh.from_array(pads, "pairs"), nh.from_array(np.array([0], dtype=np.int64), "zero"),
      nh.from_array(np.array(-100, dtype=np.int64), "fill")])

# A folded copy whose data is shorter than its shape: an error, not a read past it.
short = nh.from_array(emb.T.copy(), "onnx::MatMul_7")
short.raw_data = short.raw_data[:20]
save("short.onnx", head, [tokens], [loss], [nh.from_array(emb, "emb.weight"), short])
