#!/usr/bin/env python3
# Hugging Face causal LMs built from their configs (random weights: nothing is
# downloaded) and exported as a user would: torch.onnx.export with the inputs only.
#
#   hf_export.py OUT.onnx --model gpt2|llama|qwen2 [--size tiny|small] [--batch B]
#                [--seq T] [--opset N] [--fresh]
#
# (export_torchscript() exports with dynamo=False, for utils/hf-parity.py.)
#
# tiny: 2 layers, hidden 64, 4 heads (Llama and Qwen2: 2 key/value heads),
# vocabulary 256, dropout 0. small: GPT-2 small as Hugging Face defines it (124M
# parameters, vocabulary 50257, 1024 positions), written with external data.
# cpu: GPT-2 with 6 layers, hidden 512, 8 heads, vocabulary 16384 (utils/bench-engines.py).
#
# Unless --fresh, every weight is perturbed (normal, std 0.02), as a trained
# checkpoint's are: the exporter's optimizer merges initializers with equal values
# and drops all-zero biases, and a freshly initialized model has many (LayerNorm
# weights of 1, biases of 0).
import argparse
import sys

import numpy as np
import onnx
import torch
import transformers

TINY_VOCAB = 256


def build(name, size="tiny", positions=32, fresh=False, seed=0):
    torch.manual_seed(seed)
    if size == "small":
        if name != "gpt2":
            raise SystemExit("--size small is GPT-2 small only")
        cfg = transformers.GPT2Config(use_cache=False, resid_pdrop=0.0, embd_pdrop=0.0,
                                      attn_pdrop=0.0)
        model = transformers.GPT2LMHeadModel(cfg)
    elif size == "cpu":
        # A GPT-2 of a realistic size for 2 CPU cores (27.4M parameters):
        # utils/bench-engines.py's model.
        if name != "gpt2":
            raise SystemExit("--size cpu is GPT-2 only")
        cfg = transformers.GPT2Config(n_layer=6, n_embd=512, n_head=8, n_positions=positions,
                                      vocab_size=16384, bos_token_id=0, eos_token_id=0,
                                      use_cache=False, resid_pdrop=0.0,
                                      embd_pdrop=0.0, attn_pdrop=0.0)
        model = transformers.GPT2LMHeadModel(cfg)
    elif name == "gpt2":
        cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, n_positions=positions,
                                      vocab_size=TINY_VOCAB, use_cache=False,
                                      resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
        model = transformers.GPT2LMHeadModel(cfg)
    else:
        classes = {"llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM),
                   "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM)}[name]
        cfg = classes[0](hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=positions, vocab_size=TINY_VOCAB,
                         attention_dropout=0.0, use_cache=False)
        model = classes[1](cfg)
    if not fresh:
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.02 * torch.randn_like(p))
    model.train()
    return model


# The exporter's optimizer folds some parameters into initializers of their own (a
# transposed weight, an embedding's position rows), recorded in value_info metadata:
# the parity checks compare each such initializer with its part of the parameter.
def layout(initial, source):
    """How an initializer the exporter folded from parameter value `source` lays it
    out, found from the exported value: 'same', 'transposed' or 'rows' (the leading
    elements, as an embedding's position rows)."""
    if source.shape == initial.shape and np.array_equal(source, initial):
        return "same"
    if source.ndim == 2 and source.T.shape == initial.shape and np.array_equal(source.T, initial):
        return "transposed"
    if np.array_equal(source.reshape(-1)[:initial.size], initial.reshape(-1)):
        return "rows"
    raise SystemExit("cannot tell how the exporter laid out its fold of %s" % source.shape)


def expected_value(name, shape, state, folded_from, layouts):
    """PyTorch's tensor for trained initializer `name`: the parameter of that name,
    or the part of the one it was folded from, laid out as the fold is."""
    if name in state:
        return state[name]
    source = state[folded_from[name]]
    how = layouts[name]
    if how == "same":
        return source
    if how == "transposed":
        return source.T
    return source.reshape(-1)[:int(np.prod(shape))].reshape(shape)


def folded_sources(path, parameters):
    """Initializers folded from exactly one parameter: name -> the parameter."""
    m = onnx.load(path, load_external_data=False)
    out = {}
    for v in m.graph.value_info:
        for p in v.metadata_props:
            if p.key == "pkg.onnxscript.optimizer.folded_from":
                sources = [s.strip(" '\"") for s in p.value.strip("[]").split(",")]
                sources = [s for s in sources if s in parameters]
                if len(sources) == 1:
                    out[v.name] = sources[0]
    return out


def export(model, path, batch, seq, opset=None, external_data=None):
    """torch.onnx.export(model, (), path, kwargs={input_ids, labels}) with the
    installed torch's defaults, or at `opset`."""
    ids = torch.zeros((batch, seq), dtype=torch.int64)
    kwargs = {}
    if opset:
        kwargs["opset_version"] = opset
    if external_data is not None:
        kwargs["external_data"] = external_data
    torch.onnx.export(model, (), path, kwargs={"input_ids": ids, "labels": ids}, **kwargs)


def export_torchscript(model, path, batch, seq):
    """torch.onnx.export(..., dynamo=False): the TorchScript exporter, otherwise
    with its defaults. Returns {graph input name: value} for the inputs that must be
    bound at compile time (zero-opt --constant-input).

    Two inputs more than input_ids and labels, because the TorchScript exporter
    cannot trace transformers' defaults: without an attention_mask the mask code
    calls torch.diff (no ONNX form: "Exporting the operator 'aten::diff' ... is not
    supported"), and it turns the integer default logits_to_keep=0 into a tensor
    index, so the logits keep one position (and the loss fails). An all-ones mask
    and logits_to_keep = every position are what training on full windows means."""
    ids = torch.zeros((batch, seq), dtype=torch.int64)
    mask = torch.ones((batch, seq), dtype=torch.int64)
    keep = torch.arange(seq, dtype=torch.int64)
    torch.onnx.export(model, (ids, {"attention_mask": mask, "labels": ids,
                                    "logits_to_keep": keep}), path, dynamo=False)
    # Inputs keep the order of forward's parameters; the exporter names them after
    # the traced values ('input.1', 'onnx::Reshape_1', ...).
    import onnx
    m = onnx.load(path, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    names = [i.name for i in m.graph.input if i.name not in inits]
    if len(names) != 4 or names[2] != "labels" or names[3] != "logits_to_keep":
        raise SystemExit("unexpected inputs of the TorchScript export: %s" % names)
    return {names[1]: mask.numpy(), names[3]: keep.numpy()}


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("out")
    p.add_argument("--model", choices=["gpt2", "llama", "qwen2"], required=True)
    p.add_argument("--size", choices=["tiny", "cpu", "small"], default="tiny")
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seq", type=int, default=16)
    p.add_argument("--opset", type=int)
    p.add_argument("--fresh", action="store_true",
                   help="keep the config's initial weights (the exporter then merges "
                        "equal ones)")
    a = p.parse_args()
    model = build(a.model, a.size, positions=max(32, a.seq), fresh=a.fresh)
    export(model, a.out, a.batch, a.seq, a.opset,
           external_data=True if a.size == "small" else None)
    n = len({id(q) for q in model.parameters()})
    print("%s: %s %s, %d parameters (%d elements)" % (
        a.out, a.size, a.model, n, sum(q.numel() for q in model.parameters())))


if __name__ == "__main__":
    sys.exit(main())
