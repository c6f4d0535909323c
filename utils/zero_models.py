# Models for zero-opt's demos, tests and benchmarks, and their ONNX export.
# Imported by make_gpt.py, train-parity.py and bench-train-step.py; needs Debian's
# python3-torch (run those scripts with /usr/bin/python3).
import math

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
    """Tied input and output embeddings, pre-LayerNorm blocks, mean cross-entropy."""

    def __init__(self, layers, hidden, heads, vocab, seq):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(seq, hidden)
        self.blocks = nn.ModuleList([Block(hidden, heads, seq) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied input and output embeddings
        self.register_buffer("pos", torch.arange(seq), persistent=False)
        with torch.no_grad():  # GPT-2's initialization scale
            for name, p in self.named_parameters():
                if p.dim() == 2:
                    p.normal_(0.0, 0.02)
            # Non-trivial LayerNorm parameters so that parity tests exercise them.
            for m in self.modules():
                if isinstance(m, nn.LayerNorm):
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.1, 0.1)

    def forward(self, tokens, targets):
        B, T = tokens.shape
        x = self.wte(tokens) + self.wpe(self.pos[:T])
        for b in self.blocks:
            x = b(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))


class MLP(nn.Module):
    """Embedding, then Linear layers on [B*T, H] (exported as Gemm) with tanh and
    relu, then cross-entropy over the vocabulary."""

    def __init__(self, vocab, hidden):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.fc1 = nn.Linear(hidden, 2 * hidden)
        self.fc2 = nn.Linear(2 * hidden, hidden)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, tokens, targets):
        B, T = tokens.shape
        x = self.emb(tokens).reshape(B * T, -1)
        x = torch.relu(self.fc2(torch.tanh(self.fc1(x))))
        return F.cross_entropy(self.out(x), targets.reshape(B * T))


def export(model, path, batch, seq, vocab, constant_folding=False):
    """torch.onnx.export as DESIGN.md says: opset 17, no constant folding, training
    mode, inputs tokens and targets [batch, seq] (int64), output the loss."""
    tokens = torch.zeros((batch, seq), dtype=torch.int64)
    targets = torch.zeros((batch, seq), dtype=torch.int64)
    model.train()
    torch.onnx.export(model, (tokens, targets), path, opset_version=17,
                      do_constant_folding=constant_folding,
                      training=torch.onnx.TrainingMode.TRAINING,
                      input_names=["tokens", "targets"], output_names=["loss"])


def batch_starts(step, global_batch, seq, length):
    """Sample starts of one step in DESIGN.md's deterministic order."""
    span = length - seq - 1
    return [((step * global_batch + g) * seq) % span for g in range(global_batch)]


def make_batch(data, step, global_batch, seq):
    """tokens and targets [global_batch, seq] of `step` from a 1-D token tensor."""
    starts = batch_starts(step, global_batch, seq, len(data))
    tokens = torch.stack([data[s:s + seq] for s in starts]).long()
    targets = torch.stack([data[s + 1:s + seq + 1] for s in starts]).long()
    return tokens, targets
