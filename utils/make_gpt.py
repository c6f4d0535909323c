#!/usr/bin/env python3
# Writes a small GPT (tied embeddings, LayerNorm, causal softmax attention, GELU,
# cross-entropy) as ONNX for zero-opt. Run with the tests' Python environment
# (build/python-env/bin/python), which has torch and onnx.
#
#   make_gpt.py OUT.onnx [--layers 2 --hidden 64 --heads 4 --vocab 256 --seq 32
#                         --batch 2 --seed 0] [--save-batch DIR] [--external-data]
#                         [--constant-folding]
#
# The model's inputs are tokens[B,T] and targets[B,T] (int64); its output is the mean
# cross-entropy loss. Export follows docs/Design.md: opset 17, no constant folding, training
# mode, so tied weights stay one initializer and Linear weights keep their names.
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zero_models  # noqa: E402
import zero_testing  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--gelu", choices=["none", "tanh"], default="none",
                   help="nn.GELU's approximate: the exact form, or GPT-2's tanh form")
    p.add_argument("--save-batch", metavar="DIR",
                   help="also write a random batch as input_0.pb/input_1.pb and the "
                        "PyTorch loss as output_0.pb, in the ONNX backend-test layout")
    p.add_argument("--external-data", action="store_true",
                   help="store the float weights in OUT.onnx.data beside the model")
    p.add_argument("--constant-folding", action="store_true",
                   help="export with PyTorch's default constant folding (what NOT to "
                        "do for training: for tests of the importer's warning)")
    args = p.parse_args()
    torch.manual_seed(args.seed)
    model = zero_models.GPT(args.layers, args.hidden, args.heads, args.vocab, args.seq,
                            gelu=args.gelu)
    zero_models.export(model, args.out, args.batch, args.seq, args.vocab,
                       constant_folding=args.constant_folding)
    if args.external_data:
        # Float weights only: integer initializers are constants that zero-opt
        # reads at compile time, kept inline as a model with big weights has them.
        import onnx
        m = onnx.load(args.out)
        location = os.path.basename(args.out) + ".data"
        with open(args.out + ".data", "wb") as data:
            for t in m.graph.initializer:
                if t.data_type != onnx.TensorProto.FLOAT:
                    continue
                offset = data.tell()
                data.write(t.raw_data)
                t.ClearField("raw_data")
                t.data_location = onnx.TensorProto.EXTERNAL
                for k, v in (("location", location), ("offset", str(offset)),
                             ("length", str(data.tell() - offset))):
                    e = t.external_data.add()
                    e.key, e.value = k, v
        onnx.save(m, args.out)
    if args.save_batch:
        g = torch.Generator().manual_seed(args.seed + 1)
        tokens = torch.randint(0, args.vocab, (args.batch, args.seq), generator=g)
        targets = torch.randint(0, args.vocab, (args.batch, args.seq), generator=g)
        os.makedirs(args.save_batch, exist_ok=True)
        with torch.no_grad():
            loss = model(tokens, targets)
        for name, t in (("input_0", tokens), ("input_1", targets), ("output_0", loss)):
            zero_testing.write_tensor(t.numpy(), os.path.join(args.save_batch, name + ".pb"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
