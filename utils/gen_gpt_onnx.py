#!/usr/bin/env python3
# Writes a GPT of any size as ONNX directly (onnx.helper, no PyTorch), with the same
# graph as utils/zero_models.py's export: tied embeddings, pre-LayerNorm blocks,
# causal softmax attention, GELU, mean cross-entropy; inputs tokens and targets
# [batch, seq] (int64), output the loss.
#
#   gen_gpt_onnx.py OUT.onnx --layers 48 --hidden 1600 --heads 25 --vocab 50257
#                   --seq 1024 --batch 1 [--weights none|random] [--gelu erf|tanh]
#
# --weights none (the default) declares every initializer as external data in
# OUT.onnx.data without writing it: enough for zero-opt, which reads only shapes
# (GPT-2 1.5B's 6 GB of weights are never materialized). --weights random writes
# small random weights inline, for models that zero-run should also run. The
# causal mask (bool) is a constant, always inline; the model's zero.trainable
# metadata names its float weights. --shape-operands initializers stores the int64
# shape operands as initializers instead of Constant nodes.
# Needs numpy and onnx only: the tests' environment (build/python-env/bin/python)
# or Debian's python3-onnx (/usr/bin/python3; utils/demo.sh writes its model so).
import argparse
import json
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Builder:
    def __init__(self, weights, data_name, rng, shape_operands):
        self.nodes, self.inits, self.n, self.trainable = [], [], 0, []
        self.weights, self.data_name, self.rng = weights, data_name, rng
        self.shape_operands = shape_operands

    def name(self, prefix):
        self.n += 1
        return "%s_%d" % (prefix, self.n)

    def op(self, op_type, inputs, **attrs):
        out = self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def const(self, array):
        out = self.name("const")
        if self.shape_operands == "initializers" and array.dtype == np.int64:
            # As onnx.helper models and ONNX's optimizers often store them.
            self.inits.append(numpy_helper.from_array(array, out))
            return out
        self.nodes.append(helper.make_node("Constant", [], [out], name=out,
                                           value=numpy_helper.from_array(array)))
        return out

    def param(self, name, shape, kind="weight", dtype=TensorProto.FLOAT):
        t = TensorProto()
        t.name, t.data_type = name, dtype
        t.dims.extend(shape)
        if dtype == TensorProto.BOOL:
            # A constant, not a weight: zero-opt reads it at compile time.
            t.CopyFrom(numpy_helper.from_array(np.tril(np.ones(shape, dtype=bool)), name))
            self.inits.append(t)
            return name
        self.trainable.append(name)
        if self.weights == "random":
            if kind == "scale":
                v = self.rng.uniform(0.5, 1.5, size=shape).astype(np.float32)
            elif kind == "bias":
                v = self.rng.uniform(-0.1, 0.1, size=shape).astype(np.float32)
            else:
                v = self.rng.normal(0.0, 0.02, size=shape).astype(np.float32)
            t.CopyFrom(numpy_helper.from_array(v, name))
        else:
            # External data that is not written: the compiler reads only the shape.
            t.data_location = TensorProto.EXTERNAL
            for k, v in (("location", self.data_name), ("offset", "0"), ("length", "0")):
                e = t.external_data.add()
                e.key, e.value = k, v
        self.inits.append(t)
        return name

    def linear(self, x, prefix, n_in, n_out):
        w = self.param(prefix + ".weight", [n_out, n_in])
        b = self.param(prefix + ".bias", [n_out], "bias")
        return self.op("Add", [self.op("MatMul", [x, self.op("Transpose", [w], perm=[1, 0])]), b])

    def layer_norm(self, x, prefix, hidden):
        return self.op("LayerNormalization", [x, self.param(prefix + ".weight", [hidden], "scale"),
                                              self.param(prefix + ".bias", [hidden], "bias")],
                       axis=-1, epsilon=1e-5)


def build(a):
    B, T, C, H, V = a.batch, a.seq, a.hidden, a.heads, a.vocab
    if C % H:
        raise SystemExit("--hidden must be a multiple of --heads")
    D = C // H
    g = Builder(a.weights, os.path.basename(a.out) + ".data", np.random.RandomState(a.seed),
                a.shape_operands)
    wte = g.param("wte.weight", [V, C])
    wpe = g.param("wpe.weight", [T, C])
    mask = g.param("mask", [T, T], dtype=TensorProto.BOOL)  # lower triangle, shared
    i64 = lambda *v: np.array(v, dtype=np.int64)
    f32 = lambda v: np.array(v, dtype=np.float32)
    x = g.op("Add", [g.op("Gather", [wte, "tokens"]),
                     g.op("Gather", [wpe, g.const(np.arange(T, dtype=np.int64))])])
    shape_bthd = g.const(i64(B, T, H, D))
    shape_btc = g.const(i64(B, T, C))
    split = g.const(i64(C, C, C))
    scale = g.const(f32(1.0 / math.sqrt(D)))
    neg = g.const(f32(-1e9))
    sqrt2, one, half = g.const(f32(math.sqrt(2.0))), g.const(f32(1.0)), g.const(f32(0.5))
    if a.gelu == "tanh":
        beta, kappa = g.const(f32(math.sqrt(2.0 / math.pi))), g.const(f32(0.044715))
        three = g.const(f32(3.0))
    for l in range(a.layers):
        p = "blocks.%d." % l
        h = g.layer_norm(x, p + "ln1", C)
        qkv = g.linear(h, p + "qkv", C, 3 * C)
        q, k, v = [g.name("split") for _ in range(3)]
        g.nodes.append(helper.make_node("Split", [qkv, split], [q, k, v], name=g.name("Split"), axis=2))
        q = g.op("Transpose", [g.op("Reshape", [q, shape_bthd])], perm=[0, 2, 1, 3])
        k = g.op("Transpose", [g.op("Reshape", [k, shape_bthd])], perm=[0, 2, 3, 1])
        v = g.op("Transpose", [g.op("Reshape", [v, shape_bthd])], perm=[0, 2, 1, 3])
        att = g.op("Mul", [g.op("MatMul", [q, k]), scale])
        att = g.op("Softmax", [g.op("Where", [mask, att, neg])], axis=-1)
        y = g.op("Reshape", [g.op("Transpose", [g.op("MatMul", [att, v])], perm=[0, 2, 1, 3]), shape_btc])
        x = g.op("Add", [x, g.linear(y, p + "proj", C, C)])
        f = g.linear(g.layer_norm(x, p + "ln2", C), p + "fc", C, 4 * C)
        if a.gelu == "tanh":  # GPT-2's own (Hugging Face's gelu_new), as it writes it
            inner = g.op("Add", [f, g.op("Mul", [kappa, g.op("Pow", [f, three])])])
            t = g.op("Tanh", [g.op("Mul", [beta, inner])])
            gelu = g.op("Mul", [g.op("Mul", [half, f]), g.op("Add", [one, t])])
        else:
            gelu = g.op("Mul", [g.op("Mul", [f, g.op("Add", [g.op("Erf", [g.op("Div", [f, sqrt2])]), one])]), half])
        x = g.op("Add", [x, g.linear(gelu, p + "fc_out", 4 * C, C)])
    logits = g.op("MatMul", [g.layer_norm(x, "ln_f", C), g.op("Transpose", [wte], perm=[1, 0])])
    logits = g.op("Reshape", [logits, g.const(i64(B * T, V))])
    targets = g.op("Reshape", ["targets", g.const(i64(B * T))])
    g.nodes.append(helper.make_node("SoftmaxCrossEntropyLoss", [logits, targets], ["loss"],
                                    name="loss", reduction="mean"))
    graph = helper.make_graph(
        g.nodes, "gpt",
        [helper.make_tensor_value_info("tokens", TensorProto.INT64, [B, T]),
         helper.make_tensor_value_info("targets", TensorProto.INT64, [B, T])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="zero-opt gen_gpt_onnx.py")
    entry = model.metadata_props.add()
    entry.key, entry.value = "zero.trainable", json.dumps(g.trainable)
    return model


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--layers", type=int, default=48)
    p.add_argument("--hidden", type=int, default=1600)
    p.add_argument("--heads", type=int, default=25)
    p.add_argument("--vocab", type=int, default=50257)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--gelu", choices=["erf", "tanh"], default="erf",
                   help="GELU's exact form, or its tanh form (GPT-2's, llm.c's)")
    p.add_argument("--weights", choices=["none", "random"], default="none")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--shape-operands", choices=["constants", "initializers"],
                   default="constants",
                   help="store Reshape's shapes, Split's sizes and the position "
                        "indices as Constant nodes or as int64 initializers")
    a = p.parse_args()
    model = build(a)
    onnx.save(model, a.out)
    n = sum(int(np.prod(t.dims)) for t in model.graph.initializer if t.name != "mask")
    print("%s: %d layers, hidden %d, %d heads, vocab %d, seq %d, batch %d: %.1fM parameters%s"
          % (a.out, a.layers, a.hidden, a.heads, a.vocab, a.seq, a.batch, n / 1e6,
             "" if a.weights == "random" else " (weights not written)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
