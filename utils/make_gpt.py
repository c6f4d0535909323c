#!/usr/bin/python3
# Writes a small GPT (tied embeddings, LayerNorm, causal softmax attention, GELU,
# cross-entropy) as ONNX for zero-opt. Run with Debian's /usr/bin/python3: it is the
# interpreter that sees python3-torch and python3-onnx.
#
#   make_gpt.py OUT.onnx [--layers 2 --hidden 64 --heads 4 --vocab 256 --seq 32
#                         --batch 2 --seed 0] [--save-batch DIR] [--external-data]
#                         [--constant-folding]
#
# The model's inputs are tokens[B,T] and targets[B,T] (int64); its output is the mean
# cross-entropy loss. Export follows DESIGN.md: opset 17, no constant folding, training
# mode, so tied weights stay one initializer and Linear weights keep their names.
import argparse
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, hidden, heads, seq):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc = nn.Linear(hidden, 4 * hidden)
        self.fc_out = nn.Linear(4 * hidden, hidden)
        self.gelu = nn.GELU()
        # Causal mask as a constant: 0 where attention is allowed, -1e9 above the diagonal.
        mask = torch.triu(torch.full((seq, seq), -1e9), diagonal=1)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        h = self.ln1(x)
        q, k, v = self.qkv(h).split(C, dim=2)
        hd = C // self.heads
        q = q.reshape(B, T, self.heads, hd).transpose(1, 2)
        k = k.reshape(B, T, self.heads, hd).transpose(1, 2)
        v = v.reshape(B, T, self.heads, hd).transpose(1, 2)
        att = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = att + self.mask[:T, :T]
        att = F.softmax(att, dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(B, T, C)
        x = x + self.proj(y)
        x = x + self.fc_out(self.gelu(self.fc(self.ln2(x))))
        return x


class GPT(nn.Module):
    def __init__(self, layers, hidden, heads, vocab, seq):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(seq, hidden)
        self.blocks = nn.ModuleList([Block(hidden, heads, seq) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied input and output embeddings
        self.register_buffer("pos", torch.arange(seq), persistent=False)

    def forward(self, tokens, targets):
        B, T = tokens.shape
        x = self.wte(tokens) + self.wpe(self.pos[:T])
        for b in self.blocks:
            x = b(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))


def build(args):
    torch.manual_seed(args.seed)
    model = GPT(args.layers, args.hidden, args.heads, args.vocab, args.seq)
    # Non-trivial LayerNorm parameters so that parity tests exercise them.
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.1, 0.1)
    return model


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
    p.add_argument("--save-batch", metavar="DIR",
                   help="also write a random batch as input_0.pb/input_1.pb and the "
                        "PyTorch loss as output_0.pb, in the ONNX backend-test layout")
    p.add_argument("--external-data", action="store_true",
                   help="store the weights in OUT.onnx.data beside the model")
    p.add_argument("--constant-folding", action="store_true",
                   help="export with PyTorch's default constant folding (what NOT to "
                        "do for training: for tests of the importer's warning)")
    args = p.parse_args()
    model = build(args)
    g = torch.Generator().manual_seed(args.seed + 1)
    tokens = torch.randint(0, args.vocab, (args.batch, args.seq), generator=g)
    targets = torch.randint(0, args.vocab, (args.batch, args.seq), generator=g)
    model.train()
    torch.onnx.export(model, (tokens, targets), args.out, opset_version=17,
                      do_constant_folding=args.constant_folding,
                      training=torch.onnx.TrainingMode.TRAINING,
                      input_names=["tokens", "targets"], output_names=["loss"])
    if args.external_data:
        import onnx
        m = onnx.load(args.out)
        onnx.save_model(m, args.out, save_as_external_data=True,
                        all_tensors_to_one_file=True,
                        location=os.path.basename(args.out) + ".data", size_threshold=0)
    if args.save_batch:
        import onnx.numpy_helper as nh
        os.makedirs(args.save_batch, exist_ok=True)
        with torch.no_grad():
            loss = model(tokens, targets)
        for name, t in (("input_0", tokens), ("input_1", targets), ("output_0", loss)):
            with open(os.path.join(args.save_batch, name + ".pb"), "wb") as f:
                f.write(nh.from_array(t.numpy()).SerializeToString())
    return 0


if __name__ == "__main__":
    sys.exit(main())
