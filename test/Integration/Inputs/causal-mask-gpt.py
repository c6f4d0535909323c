#!/usr/bin/env python3
# A minGPT-style GPT (2 layers) exported with its causal mask written two ways:
#   constant.onnx  the mask a buffer (register_buffer(torch.tril(...)))
#   tril-*.onnx    torch.tril(torch.ones(T, T)) computed in forward, masked_fill
#                  with -inf, the scale 1 / sqrt(d) computed too; exported by the
#                  torch.export-based exporter (tril-default, tril-noopt with
#                  optimize=False: the Trilu stays in the graph) and the
#                  TorchScript one (tril-torchscript, tril-nofold without its
#                  constant folding)
#
#   causal-mask-gpt.py OUTDIR [T]   (T: the sequence, 16 unless given)
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

T, C, HEADS, VOCAB = int(sys.argv[2]) if len(sys.argv) > 2 else 16, 32, 4, 64


class Block(nn.Module):
    def __init__(self, constant):
        super().__init__()
        self.qkv, self.proj, self.ln = nn.Linear(C, 3 * C), nn.Linear(C, C), nn.LayerNorm(C)
        self.constant = constant
        if constant:
            self.register_buffer("mask", torch.tril(torch.ones(T, T)).view(1, 1, T, T))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (z.view(b, t, HEADS, c // HEADS).transpose(1, 2)
                   for z in self.qkv(self.ln(x)).split(c, dim=2))
        att = (q @ k.transpose(-2, -1)) * (1.0 / (c // HEADS) ** 0.5)
        mask = (self.mask[:, :, :t, :t] if self.constant
                else torch.tril(torch.ones(t, t, device=x.device)).view(1, 1, t, t))
        att = F.softmax(att.masked_fill(mask == 0, float("-inf")), dim=-1)
        return x + self.proj((att @ v).transpose(1, 2).contiguous().view(b, t, c))


class GPT(nn.Module):
    def __init__(self, constant):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, C)
        self.pos = nn.Parameter(0.02 * torch.randn(T, C))
        self.blocks = nn.ModuleList([Block(constant) for _ in range(2)])
        self.head = nn.Linear(C, VOCAB)

    def forward(self, tokens, targets):
        x = self.tok(tokens) + self.pos
        for blk in self.blocks:
            x = blk(x)
        return F.cross_entropy(self.head(x).view(-1, VOCAB), targets.view(-1))


def main():
    out = sys.argv[1]
    ids = torch.zeros((2, T), dtype=torch.int64)
    names = dict(input_names=["tokens", "targets"])
    for name, constant, kwargs in [
            ("constant", True, {}), ("tril-default", False, {}),
            ("tril-noopt", False, dict(optimize=False)),
            ("tril-torchscript", False, dict(dynamo=False)),
            ("tril-nofold", False, dict(dynamo=False, do_constant_folding=False))]:
        torch.manual_seed(0)
        torch.onnx.export(GPT(constant), (ids, ids), os.path.join(out, name + ".onnx"),
                          **names, **kwargs)


if __name__ == "__main__":
    main()
