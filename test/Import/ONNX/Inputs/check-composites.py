# The ops imported as compositions, run by zero-run against ONNX Runtime on one
# model (opset 20) whose node tests cannot check them (those are at opsets below 13,
# or keep sequences or log-probabilities as graph values): Not, And, Or, IsNaN,
# SplitToSequence + SequenceAt, NegativeLogLikelihoodLoss after LogSoftmax, Pad,
# CastLike, Range, and the folded Sin, Cos, Max and Min. Prints one line per
# output; exit 1 on a mismatch.
#   check-composites.py WORKDIR  (zero-opt and zero-run on PATH)
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

work = sys.argv[1]
os.makedirs(os.path.join(work, "inputs"), exist_ok=True)
x = h.make_tensor_value_info("x", T.FLOAT, [2, 6])
y = h.make_tensor_value_info("y", T.FLOAT, [2, 6])
b = h.make_tensor_value_info("b", T.BOOL, [2, 6])
labels = h.make_tensor_value_info("labels", T.INT64, [2])
outs = [h.make_tensor_value_info(n, t, None) for n, t in [
    ("logic", T.BOOL), ("part", T.FLOAT), ("nll", T.FLOAT), ("padded", T.FLOAT),
    ("like", T.INT64), ("steps", T.INT64), ("wave", T.FLOAT), ("top", T.FLOAT)]]
inits = [h.make_tensor("split", T.INT64, [2], [2, 4]),
         h.make_tensor("at", T.INT64, [], [1]),
         h.make_tensor("pads", T.INT64, [4], [1, 0, 0, 2]),
         h.make_tensor("start", T.INT64, [], [3]),
         h.make_tensor("limit", T.INT64, [], [11]),
         h.make_tensor("delta", T.INT64, [], [3])]
nodes = [
    h.make_node("IsNaN", ["y"], ["nan"]),
    h.make_node("Or", ["nan", "b"], ["either"]),
    h.make_node("Not", ["either"], ["neither"]),
    h.make_node("And", ["neither", "b"], ["logic"]),
    h.make_node("SplitToSequence", ["x", "split"], ["seq"], axis=1),
    h.make_node("SequenceAt", ["seq", "at"], ["part"]),
    h.make_node("LogSoftmax", ["x"], ["logp"], axis=1),
    h.make_node("NegativeLogLikelihoodLoss", ["logp", "labels"], ["nll"],
                reduction="mean", ignore_index=5),
    h.make_node("Constant", [], ["fill"], value=h.make_tensor("v", T.FLOAT, [], [0.5])),
    h.make_node("Pad", ["x", "pads", "fill"], ["padded"]),
    h.make_node("CastLike", ["x", "labels"], ["like"]),
    h.make_node("Range", ["start", "limit", "delta"], ["steps"]),
    # Folded at compile time, as exporters' rotary tables and masks are.
    h.make_node("Cast", ["steps"], ["stepsf"], to=T.FLOAT),
    h.make_node("Sin", ["stepsf"], ["s"]),
    h.make_node("Cos", ["stepsf"], ["c"]),
    h.make_node("Add", ["s", "c"], ["wave"]),
    h.make_node("Constant", [], ["cut"], value=h.make_tensor("v2", T.FLOAT, [], [5.5])),
    h.make_node("Max", ["stepsf", "cut"], ["hi"]),
    h.make_node("Min", ["hi", "stepsf", "cut"], ["top"]),
]
model = h.make_model(h.make_graph(nodes, "composites", [x, y, b, labels], outs, inits),
                     opset_imports=[h.make_opsetid("", 20)])
model.ir_version = 10
path = os.path.join(work, "composites.onnx")
open(path, "wb").write(model.SerializeToString())

rng = np.random.RandomState(0)
feeds = {"x": (rng.randn(2, 6) * 3).astype(np.float32),
         "b": rng.rand(2, 6) > 0.5, "labels": np.array([3, 5], np.int64)}
feeds["y"] = np.where(rng.rand(2, 6) > 0.6, np.nan, feeds["x"]).astype(np.float32)
for k, name in enumerate(["x", "y", "b", "labels"]):
    open(os.path.join(work, "inputs", "input_%d.pb" % k), "wb").write(
        nh.from_array(feeds[name], name).SerializeToString())
plan = os.path.join(work, "composites.zplan")
subprocess.run(["zero-opt", path, "--mode=inference", "-o", plan], check=True)
subprocess.run(["zero-run", plan, "--init", path, "--inputs", os.path.join(work, "inputs"),
                "--save-outputs", os.path.join(work, "out"), "--quiet"], check=True)
want = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
ok = True
for k, (o, w) in enumerate(zip(outs, want)):
    got = nh.to_array(onnx.load_tensor(os.path.join(work, "out", "output_%d.pb" % k)))
    same = got.shape == w.shape and got.dtype == w.dtype and np.allclose(
        got, w, rtol=1e-6, atol=1e-6, equal_nan=True)
    print("%s %s: %s" % (o.name, list(w.shape), "ok" if same else "MISMATCH %s vs %s" % (got, w)))
    ok &= same
sys.exit(0 if ok else 1)
