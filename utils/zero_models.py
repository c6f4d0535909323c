# Models for zero-opt's demos, tests and benchmarks, and their ONNX export.
# Imported by make_gpt.py, train-parity.py and bench-train-step.py; run those with
# the tests' Python environment (build/python-env/bin/python).
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zero_export  # noqa: E402


class Block(nn.Module):
    def __init__(self, hidden, heads, seq, gelu="none"):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc = nn.Linear(hidden, 4 * hidden)
        self.fc_out = nn.Linear(4 * hidden, hidden)
        self.gelu = nn.GELU(approximate=gelu)  # "tanh": GPT-2's own form
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

    def __init__(self, layers, hidden, heads, vocab, seq, gelu="none"):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(seq, hidden)
        self.blocks = nn.ModuleList([Block(hidden, heads, seq, gelu) for _ in range(layers)])
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


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight, as Llama writes it."""

    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.heads, self.hd = heads, hidden // heads
        self.attn_norm = RMSNorm(hidden)
        self.wq = nn.Linear(hidden, hidden, bias=False)
        self.wk = nn.Linear(hidden, hidden, bias=False)
        self.wv = nn.Linear(hidden, hidden, bias=False)
        self.wo = nn.Linear(hidden, hidden, bias=False)
        self.ffn_norm = RMSNorm(hidden)
        self.w1 = nn.Linear(hidden, ffn, bias=False)  # gate
        self.w3 = nn.Linear(hidden, ffn, bias=False)  # up
        self.w2 = nn.Linear(ffn, hidden, bias=False)  # down

    def forward(self, x, cos, sin, mask):
        B, T, C = x.shape
        hd = self.hd
        h = self.attn_norm(x)
        q = self.wq(h).reshape(B, T, self.heads, hd).transpose(1, 2)
        k = self.wk(h).reshape(B, T, self.heads, hd).transpose(1, 2)
        v = self.wv(h).reshape(B, T, self.heads, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        att = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(hd)) + mask
        att = F.softmax(att, dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(B, T, C)
        x = x + self.wo(y)
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class Llama(nn.Module):
    """Llama-style: RMSNorm, rotary position embeddings whose cos/sin tables are
    buffers, an additive causal mask (-inf above the diagonal) as a buffer, SwiGLU,
    an untied output head, no biases. The buffers are float initializers in the
    export that must not be trained."""

    def __init__(self, layers, hidden, heads, vocab, seq, ffn=None):
        super().__init__()
        ffn = ffn or 2 * hidden
        self.embed = nn.Embedding(vocab, hidden)
        self.blocks = nn.ModuleList([LlamaBlock(hidden, heads, ffn) for _ in range(layers)])
        self.norm = RMSNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        hd = hidden // heads
        inv_freq = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
        freqs = torch.outer(torch.arange(seq).float(), inv_freq)
        angles = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("rope_cos", angles.cos())
        self.register_buffer("rope_sin", angles.sin())
        self.register_buffer("mask", torch.full((seq, seq), float("-inf")).triu(1))
        with torch.no_grad():
            for p in self.parameters():
                if p.dim() == 2:
                    p.normal_(0.0, 0.02)
            for m in self.modules():  # non-trivial norm weights, for parity tests
                if isinstance(m, RMSNorm):
                    m.weight.uniform_(0.5, 1.5)

    def forward(self, tokens, targets):
        B, T = tokens.shape
        x = self.embed(tokens)
        cos, sin = self.rope_cos[:T], self.rope_sin[:T]
        mask = self.mask[:T, :T]
        for b in self.blocks:
            x = b(x, cos, sin, mask)
        logits = self.lm_head(self.norm(x))
        return F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))


MODELS = ("gpt", "mlp", "llama")


def build(name, layers=2, hidden=32, heads=4, vocab=64, seq=16, gelu="none"):
    """One of MODELS at the given size (the MLP uses vocab and hidden only; gelu,
    nn.GELU's approximate, the GPT only)."""
    if name == "gpt":
        return GPT(layers, hidden, heads, vocab, seq, gelu)
    if name == "llama":
        return Llama(layers, hidden, heads, vocab, seq)
    if name == "mlp":
        return MLP(vocab, hidden)
    raise ValueError("unknown model %r (one of %s)" % (name, ", ".join(MODELS)))


def export(model, path, batch, seq, vocab, constant_folding=False,
           trainable_metadata=True):
    """Exports for zero-opt: opset 17, no constant folding, training mode, inputs
    tokens and targets [batch, seq] (int64), output the loss, and the model's
    zero.trainable metadata (utils/zero_export.py). Returns the trainable
    initializer names. constant_folding=True is what NOT to do, for the importer's
    warning test: it writes no metadata."""
    tokens = torch.zeros((batch, seq), dtype=torch.int64)
    targets = torch.zeros((batch, seq), dtype=torch.int64)
    if constant_folding:
        model.train()
        torch.onnx.export(model, (tokens, targets), path, dynamo=False, opset_version=17,
                          do_constant_folding=True,
                          training=torch.onnx.TrainingMode.TRAINING,
                          input_names=["tokens", "targets"], output_names=["loss"])
        return []
    return zero_export.export_for_training(
        model, (tokens, targets), path, input_names=["tokens", "targets"],
        output_names=["loss"], trainable_metadata=trainable_metadata)


def sample_starts(first, count, seq, length):
    """Starts of global samples first .. first + count - 1 in docs/Design.md's
    deterministic order (sample k starts at k * seq mod (length - seq - 1))."""
    span = length - seq - 1
    return [((first + g) * seq) % span for g in range(count)]


def make_samples(data, first, count, seq):
    """tokens and targets [count, seq] of global samples first .. first + count - 1
    from a 1-D token tensor."""
    starts = sample_starts(first, count, seq, len(data))
    tokens = torch.stack([data[s:s + seq] for s in starts]).long()
    targets = torch.stack([data[s + 1:s + seq + 1] for s in starts]).long()
    return tokens, targets


def make_batch(data, step, global_batch, seq):
    """tokens and targets [global_batch, seq] of `step` from a 1-D token tensor."""
    return make_samples(data, step * global_batch, global_batch, seq)


# The GPU benchmarks' models (utils/gpu-checks.sh): GPT-2 small, and a tiny one only
# to rehearse the scripts without a GPU. GELU in its tanh form, as GPT-2 (and
# llm.c) has it.
GPU_BENCH_MODELS = {
    "small": dict(layers=12, hidden=768, heads=12, vocab=50257, seq=1024, batch=8,
                  gelu="tanh"),
    "tiny": dict(layers=1, hidden=32, heads=2, vocab=64, seq=16, batch=2, gelu="tanh"),
    # One layer of GPT-2 small's shape: utils/bench-attention-gpu.py times its
    # attention kernels.
    "attention": dict(layers=1, hidden=768, heads=12, vocab=256, seq=1024, batch=8),
}


def gpu_bench_inputs(work, cfg):
    """GPU_BENCH_MODELS entry CFG with random weights (utils/gen_gpt_onnx.py) in
    WORK/gpt.onnx, and 2M random tokens (seed 0) in WORK/tokens.u16: (model, data)."""
    import subprocess
    import sys
    import numpy as np
    model = os.path.join(work, "gpt.onnx")
    subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                 "gen_gpt_onnx.py"), model,
                    "--layers", str(cfg["layers"]), "--hidden", str(cfg["hidden"]),
                    "--heads", str(cfg["heads"]), "--vocab", str(cfg["vocab"]),
                    "--seq", str(cfg["seq"]), "--batch", str(cfg["batch"]),
                    "--gelu", "tanh" if cfg.get("gelu") == "tanh" else "erf",
                    "--weights", "random"], check=True)
    data = os.path.join(work, "tokens.u16")
    np.random.RandomState(0).randint(0, cfg["vocab"], size=2_000_000).astype(
        np.uint16).tofile(data)
    return model, data


def test_gpt(work, vocab=64, seq=16, batch=4, layers=2):
    """The tests' small GPT (2 layers, hidden 32, 4 heads; seed 0) exported to
    WORK/gpt.onnx with its trainable set, and a reproducible token file of 4096
    tokens (seed 1) in WORK/tokens.u8: (model path, data path)."""
    import numpy as np
    data = os.path.join(work, "tokens.u8")
    np.random.RandomState(1).randint(0, vocab, size=4096).astype(np.uint8).tofile(data)
    model = os.path.join(work, "gpt.onnx")
    export(test_gpt_module(vocab, seq, layers), model, batch, seq, vocab)
    return model, data


def test_gpt_module(vocab=64, seq=16, layers=2):
    """The PyTorch module test_gpt exports (the same initial weights)."""
    torch.manual_seed(0)
    return build("gpt", layers=layers, hidden=32, heads=4, vocab=vocab, seq=seq)
