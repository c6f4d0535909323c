#!/usr/bin/env python3
# Exports a torch.nn.Module for training with zero-opt, and says which of its
# initializers are parameters.
#
# PyTorch exports buffers (rotary tables, attention masks, BatchNorm statistics) as
# initializers, exactly like parameters; only the model knows which is which. This
# helper exports as zero-opt needs (opset 17, no constant folding, training mode)
# and writes the model's `zero.trainable` metadata: a JSON array of the initializer
# names of named_parameters() that require a gradient, a tied weight once. zero-opt
# then trains exactly those and keeps every other initializer as it is.
#
#   import zero_export
#   zero_export.export_for_training(model, (tokens, targets), "model.onnx",
#                                   input_names=["tokens", "targets"],
#                                   output_names=["loss"])
#
# A Hugging Face model as from_pretrained returns it (bf16, use_cache and all):
#   zero_export.export_pretrained(model, "model.onnx", batch=4, seq=512)
# or, without building its weights (any size, in seconds), from its config:
#   zero_export.export_without_weights(transformers.AutoConfig.from_pretrained(DIR),
#                                      "model.onnx", batch=4, seq=512)
#
# From the command line, for the project's own models (utils/zero_models.py):
#   zero_export.py OUT.onnx --model gpt|mlp|llama [--layers 2 --hidden 32 --heads 4
#                  --vocab 64 --seq 16 --batch 4 --seed 0] [--without-metadata]
#
# Needs PyTorch and onnx: run it with Debian's /usr/bin/python3 here.
import argparse
import contextlib
import json
import os
import sys
import tempfile

import onnx
import torch

TRAINABLE_KEY = "zero.trainable"


def parameter_aliases(model):
    """Every parameter that requires a gradient, once (by identity), with all the
    names it has in the module tree, in registration order (a tied weight has
    several)."""
    aliases, order = {}, []
    try:
        modules = model.named_modules(remove_duplicate=False)
    except TypeError:  # PyTorch before 2.0 has no remove_duplicate
        modules = model.named_modules()
    for prefix, module in modules:
        for name, p in module._parameters.items():
            if p is None or not p.requires_grad:
                continue
            if id(p) not in aliases:
                aliases[id(p)] = []
                order.append(id(p))
            full = prefix + "." + name if prefix else name
            if full not in aliases[id(p)]:
                aliases[id(p)].append(full)
    return [aliases[i] for i in order]


def trainable_names(model, onnx_model):
    """The initializer name of each trainable parameter of `model` in `onnx_model`.
    Raises ValueError naming the parameters the export does not hold under any of
    their names (constant folding renames them onnx::...; an unused one is dropped)."""
    inits = {t.name for t in onnx_model.graph.initializer}
    names, missing = [], []
    for names_of_p in parameter_aliases(model):
        found = [n for n in names_of_p if n in inits]
        if found:
            names.append(found[0])
        else:
            missing.append(" = ".join(names_of_p))
    if missing:
        raise ValueError(
            "these parameters are not initializers of the exported graph (unused by "
            "forward, or renamed by constant folding): " + ", ".join(missing))
    return names


def set_trainable(onnx_model, names):
    """Writes (or replaces) the zero.trainable entry of `onnx_model`."""
    props = [p for p in onnx_model.metadata_props if p.key != TRAINABLE_KEY]
    del onnx_model.metadata_props[:]
    onnx_model.metadata_props.extend(props)
    entry = onnx_model.metadata_props.add()
    entry.key, entry.value = TRAINABLE_KEY, json.dumps(names)


def save_whole(onnx_model, path):
    """onnx.save to a temporary file beside `path`, then a rename: a failed save
    leaves any previous file as it was."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(path) + ".")
    os.close(fd)
    try:
        onnx.save(onnx_model, tmp)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def export_for_training(model, args, path, input_names, output_names,
                        trainable_metadata=True):
    """torch.onnx.export for zero-opt (opset 17, no constant folding, training mode),
    then the zero.trainable entry. Returns the trainable initializer names."""
    model.train()
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "export.onnx")
        torch.onnx.export(model, args, raw, dynamo=False, opset_version=17,
                          do_constant_folding=False,
                          training=torch.onnx.TrainingMode.TRAINING,
                          input_names=input_names, output_names=output_names)
        exported = onnx.load(raw)
    names = trainable_names(model, exported)
    if trainable_metadata:
        set_trainable(exported, names)
    save_whole(exported, path)
    return names


def export_pretrained(model, path, batch, seq):
    """Exports a Hugging Face causal LM as from_pretrained returns it (transformers
    5: in the checkpoint's dtype, its config's use_cache as saved) with
    torch.onnx.export's defaults, for training on token windows [batch, seq]:
    the inputs input_ids and labels (the model shifts them) and use_cache=False,
    without which the export fails on the DynamicCache the forward returns. The
    weights go to PATH.data beside the model. zero-opt computes a bf16 or f16
    export in float32 (f32 master weights; --precision=bf16 for 16-bit products)
    and zero-run --init CHECKPOINT reads the weights from the checkpoint."""
    ids = torch.zeros((batch, seq), dtype=torch.int64)
    torch.onnx.export(model, (), path,
                      kwargs={"input_ids": ids, "labels": ids, "use_cache": False},
                      external_data=True)


@contextlib.contextmanager
def parameters_on_meta():
    """Modules built inside have their parameters on the meta device (no memory,
    no values) and their buffers (rotary tables) on the CPU, as accelerate's
    init_empty_weights(include_buffers=False) does."""
    register = torch.nn.Module.register_parameter

    def on_meta(module, name, param):
        register(module, name, param)
        if param is not None:
            p = module._parameters[name]
            module._parameters[name] = torch.nn.Parameter(p.to("meta"),
                                                          requires_grad=p.requires_grad)

    torch.nn.Module.register_parameter = on_meta
    try:
        yield
    finally:
        torch.nn.Module.register_parameter = register


def export_without_weights(config, path, batch, seq):
    """Exports the causal LM of a Hugging Face config (transformers.AutoConfig, e.g.
    from_pretrained of a checkpoint's folder) without building its weights: a
    model larger than this host's memory exports in seconds. Its parameters live
    on the meta device; the export runs without the exporter's optimizer (it
    would read their values), the parameters become graph inputs, then the
    optimizer runs. The graph signature still names them: zero-opt trains them as
    parameters and zero-run --init CHECKPOINT gives their values."""
    import transformers
    with parameters_on_meta():
        model = transformers.AutoModelForCausalLM.from_config(config)
    ids = torch.zeros((batch, seq), dtype=torch.int64)
    program = torch.onnx.export(model, (), kwargs={"input_ids": ids, "labels": ids,
                                                   "use_cache": False}, optimize=False)
    graph = program.model.graph
    parameters = {n for n, _ in model.named_parameters(remove_duplicate=False)}
    for name in list(graph.initializers):
        if name in parameters:
            value = graph.initializers.pop(name)
            value.const_value = None
            graph.inputs.append(value)
    program.optimize()
    program.save(path)


def main():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import zero_models  # noqa: E402

    p = argparse.ArgumentParser(description="export one of zero_models' models")
    p.add_argument("out")
    p.add_argument("--model", choices=sorted(zero_models.MODELS), required=True)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=64)
    p.add_argument("--seq", type=int, default=16)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--without-metadata", action="store_true",
                   help="leave out the zero.trainable entry (zero-opt then trains "
                        "every float initializer, and says so)")
    a = p.parse_args()
    torch.manual_seed(a.seed)
    model = zero_models.build(a.model, layers=a.layers, hidden=a.hidden, heads=a.heads,
                              vocab=a.vocab, seq=a.seq)
    names = zero_models.export(model, a.out, a.batch, a.seq, a.vocab,
                               trainable_metadata=not a.without_metadata)
    print("%s: %s, %d trainable initializers%s" % (
        a.out, a.model, len(names), " (no metadata written)" if a.without_metadata else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
