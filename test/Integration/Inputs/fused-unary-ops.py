"""Every elementwise unary op that ONNX has, inside a fused kernel, against
onnxruntime, on the CPU and on the emulated GPU (its generated kernel).

  fused-unary-ops.py SRC_ROOT BIN_DIR WORK_DIR

The ops are read from their records (include/zplan/UnaryOps.def), so an op added
there is checked here with nothing else to write. Each runs as
Y = op(X * 1.5) + 0.25 in f32, which zero-opt fuses into one kernel (checked in
the plan), on inputs of both signs (of one sign where the op is not finite on the
other: sqrt, log), and must match onnxruntime within rtol 2e-5, atol 1e-6.
"""
import os
import re
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(sys.argv[1], "utils"))
import zero_testing  # noqa: E402

root, bindir, work = sys.argv[1:4]
with open(os.path.join(root, "include", "zplan", "UnaryOps.def")) as f:
    records = re.findall(r'^ZERO_UNARY_OP\((\w+),\s*"(\w+)",\s*\w+,\s*\d+,\s*\w+,\s*\w+,\s*"(\w*)"',
                         f.read(), re.M)
ops = [(ident, onnx_name) for ident, _, onnx_name in records if onnx_name]
if len(ops) < 10:
    sys.exit("fused-unary-ops: only %d records with an ONNX op in UnaryOps.def" % len(ops))

rng = np.random.default_rng(0)
failures = 0
for ident, onnx_name in ops:
    folder = os.path.join(work, onnx_name)
    data = os.path.join(folder, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    graph = helper.make_graph(
        [helper.make_node("Mul", ["X", "k"], ["s"]), helper.make_node(onnx_name, ["s"], ["u"]),
         helper.make_node("Add", ["u", "c"], ["Y"])],
        "fused_" + onnx_name,
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [8, 300])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [8, 300])],
        [numpy_helper.from_array(np.array([1.5], np.float32), "k"),
         numpy_helper.from_array(np.array([0.25], np.float32), "c")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = os.path.join(folder, "model.onnx")
    onnx.save(model, path)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    x = (rng.standard_normal((8, 300)) * 4).astype(np.float32)
    want = session.run(None, {"X": x})[0]
    if not np.all(np.isfinite(want)):
        x = np.abs(x) + 0.1
        want = session.run(None, {"X": x})[0]
    with open(os.path.join(data, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, "X").SerializeToString())
    plan = os.path.join(folder, "model.zplan")
    subprocess.run([os.path.join(bindir, "zero-opt"), path, "--mode=inference", "-o", plan],
                   check=True)
    text = subprocess.run([os.path.join(bindir, "zero-opt"), path, "--mode=inference",
                           "--emit=plan"], check=True, capture_output=True, text=True).stdout
    kernels = re.findall(r"plan\.kernel (\w+)", text)
    if kernels != ["fused"]:
        print("FAIL %s: the plan's kernels are %s, not one fused kernel" % (ident, kernels))
        failures += 1
        continue
    for device, runner in (("cpu", "zero-run"), ("cuda", "zero-run-cuda-emulated")):
        out = os.path.join(folder, "out-" + device)
        subprocess.run([os.path.join(bindir, runner), plan, "--init", path, "--inputs", data,
                        "--save-outputs", out, "--quiet", "--device", device], check=True)
        got = zero_testing.read_tensor(os.path.join(out, "output_0.pb"))
        err = np.abs(got.astype(np.float64) - want) / (1e-6 + np.abs(want))
        ok = np.allclose(got, want, rtol=2e-5, atol=1e-6)
        print("%s %-10s %-4s worst relative difference from onnxruntime %.2e" %
              ("PASS" if ok else "FAIL", ident, device, err.max()))
        failures += not ok
print("fused unary ops: %d ops, %s" % (len(ops), "every one matches" if not failures
                                       else "%d failures" % failures))
sys.exit(1 if failures else 0)
