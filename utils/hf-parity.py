#!/usr/bin/env python3
# Hugging Face causal LMs, exported as a user would, train in zero-run as in PyTorch.
#
#   hf-parity.py --bin BUILD/bin --work DIR --model gpt2|llama|qwen2
#                --export default|opset23|torchscript [--steps 10] [--rtol 1e-4]
#                [--runs 0x1,3x2] [--precision bf16] [--fresh]
#
# The model is built from a tiny config (2 layers, hidden 64, vocabulary 256,
# dropout 0) with random weights: no download. Its weights are then perturbed, as a
# trained checkpoint's are, because the exporter's optimizer merges initializers
# with equal values and drops all-zero biases (a freshly initialized model's
# LayerNorm weights and biases); --fresh keeps the config's initial weights, to
# check that zero-opt gives each merged parameter its own tensor back and
# restores the dropped biases (zrt/MergedParameters.h). Then:
#   default      torch.onnx.export(model, (), path, kwargs={input_ids, labels}):
#                the installed torch's default exporter (torch.export-based)
#   opset23      the same with opset_version=23 (Attention, RMSNormalization)
#   torchscript  dynamo=False, the TorchScript exporter with its defaults
#                (constant folding on); it needs an all-ones attention_mask and
#                logits_to_keep as extra inputs (hf_export.export_torchscript says
#                why), which zero-opt binds with --constant-input
# Whatever the export, attention must run as one fused kernel per layer each way,
# reading the config's key/value heads (grouped-query attention's repeats removed)
# and with the causal mask as its own (no mask tensor read).
# zero-opt compiles each with no zero.trainable metadata (the trainable set comes
# from what the exporter recorded); zero-run trains 10 AdamW steps for each
# STAGExRANKS run (threads of one process) on a u8 token file, feeding input_ids
# and labels the same window (the model shifts); PyTorch trains the same model on
# the same batches (docs/Design.md's order). Losses and every trained tensor must
# agree within --rtol (a tensor the exporter folded from a parameter, such as a
# transposed weight or an embedding's position rows, against that part of the
# parameter); initializers that do not train must come back bit-identical.
# First, zero-run's forward (--mode=inference) on one batch must equal ONNX
# Runtime's on the exported model (loss and logits). Exit 1 on a mismatch.
# With --precision bf16, zero-opt compiles the step with --precision=bf16 and the
# reference trains under torch.autocast("cpu", torch.bfloat16); the two recipes
# round differently (autocast keeps f32 weights and rounds only its matrix products'
# operands), so the losses are held to the mixed-precision tolerance (--rtol 1e-2,
# as utils/mixed-precision-parity.py) and the weights' error is printed, not
# checked: AdamW turns the rounding differences of small gradients into full-size
# steps (10 steps, losses within 5e-4: most tensors 1-3% relative; the key
# projections' biases, whose exact gradient is zero, 11-25% for Qwen2 and GPT-2).
import argparse
import copy
import json
import os
import re
import subprocess
import sys

import numpy as np
import onnx
import onnx.numpy_helper as nh
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_export  # noqa: E402
import zero_models  # noqa: E402
import zero_testing  # noqa: E402

VOCAB, SEQ, BATCH = hf_export.TINY_VOCAB, 16, 2


def torch_reference(model, data, steps, global_batch, lr, wd, eps, precision):
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=wd, eps=eps)
    tdata = torch.from_numpy(data.astype(np.int64))
    losses = []
    for step in range(steps):
        tokens, _ = zero_models.make_batch(tdata, step, global_batch, SEQ)
        opt.zero_grad()
        with torch.autocast("cpu", torch.bfloat16, enabled=precision == "bf16"):
            loss = model(input_ids=tokens, labels=tokens).loss
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def transposed_sources(path, state, parameters):
    """A TorchScript export records no provenance: its constant folding writes a
    Linear's transposed weight as a new initializer 'onnx::...'. name -> the
    parameter whose value it is (transposed), found by value."""
    out = {}
    for t in onnx.load(path).graph.initializer:
        if not t.name.startswith("onnx::"):
            continue
        value = nh.to_array(t)
        sources = [p for p in parameters if state[p].ndim == 2 and
                   state[p].T.shape == value.shape and np.array_equal(state[p].T, value)]
        if len(sources) != 1:
            raise SystemExit("initializer %s is the transpose of %d parameters"
                             % (t.name, len(sources)))
        out[t.name] = sources[0]
    return out


def bind(work, bindings):
    """Writes each bound input to a TensorProto file: zero-opt's --constant-input
    flags for them."""
    flags = []
    for k, (name, value) in enumerate(sorted(bindings.items())):
        path = os.path.join(work, "bound-%d.pb" % k)
        zero_testing.write_tensor(value, path, name)
        flags.append("--constant-input=%s=%s" % (name, path))
    return flags


def forward_check(bindir, work, onnx_path, tokens, bindings, bound):
    """zero-run's forward (--mode=inference) against ONNX Runtime's on the exported
    model, on one batch: every output within rtol 1e-4, atol 1e-5. True if so.
    `bound`: the --constant-input flags of `bindings` (bind)."""
    import onnxruntime
    inputs = os.path.join(work, "forward-inputs")
    os.makedirs(inputs, exist_ok=True)
    session = onnxruntime.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    feeds = {}
    # input_K.pb is the graph's input K (positions as in the file, bound ones too).
    for k, i in enumerate(session.get_inputs()):
        if i.name in bindings:
            feeds[i.name] = bindings[i.name]
            continue
        feeds[i.name] = tokens
        zero_testing.write_tensor(tokens, os.path.join(inputs, "input_%d.pb" % k), i.name)
    plan = os.path.join(work, "forward.zplan")
    out = os.path.join(work, "forward-outputs")
    subprocess.run([os.path.join(bindir, "zero-opt"), onnx_path, "--mode=inference",
                    "-o", plan] + bound, check=True, capture_output=True)
    subprocess.run([os.path.join(bindir, "zero-run"), plan, "--init", onnx_path,
                    "--inputs", inputs, "--save-outputs", out, "--quiet"], check=True)
    want = session.run(None, feeds)
    ok = True
    for k, (w, o) in enumerate(zip(want, session.get_outputs())):
        got = zero_testing.read_tensor(os.path.join(out, "output_%d.pb" % k))
        err = float(np.max(np.abs(got.astype(np.float64) - w)))
        good = got.shape == w.shape and np.allclose(got, w, rtol=1e-4, atol=1e-5)
        print("forward output %s %s: max abs difference from ONNX Runtime %.2e: %s"
              % (o.name, list(w.shape), err, "ok" if good else "MISMATCH"))
        ok &= good
    return ok


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--model", choices=["gpt2", "llama", "qwen2"], required=True)
    p.add_argument("--export", choices=["default", "opset23", "torchscript"],
                   default="default")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--fresh", action="store_true",
                   help="the config's initial weights, unperturbed: the exporter merges "
                        "equal ones and drops zero biases, which zero-opt splits and "
                        "restores (zrt/MergedParameters.h)")
    p.add_argument("--runs", default="0x1,3x2",
                   help="STAGExRANKS runs, comma-separated (default: stage 0 on one "
                        "rank, stage 3 on two)")
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    # Adam's eps is 1e-6, not 1e-8: a key projection's bias has a gradient of zero in
    # exact arithmetic (softmax ignores a shift shared by a row of scores), and
    # Adam would scale its rounding noise, which differs between any two
    # implementations, to full-size steps.
    lr, wd, eps = 3e-3, 0.01, 1e-6

    rng = np.random.RandomState(1)
    data = rng.randint(0, VOCAB, size=4096).astype(np.uint8)
    data_path = os.path.join(a.work, "tokens.u8")
    data.tofile(data_path)

    initial = hf_export.build(a.model, positions=SEQ * 2, fresh=a.fresh)
    onnx_path = os.path.join(a.work, "model.onnx")
    bindings = {}
    if a.export == "torchscript":
        bindings = hf_export.export_torchscript(initial, onnx_path, BATCH, SEQ)
    else:
        hf_export.export(initial, onnx_path, BATCH, SEQ,
                         opset=23 if a.export == "opset23" else None)
    state0 = {k: v.detach().numpy() for k, v in initial.state_dict().items()}
    # Tied parameters (GPT-2's embedding and output layer) under each of their names.
    parameters = {k for k, _ in initial.named_parameters(remove_duplicate=False)}
    if a.export == "torchscript":
        folded = transposed_sources(onnx_path, state0,
                                    {k for k, _ in initial.named_parameters()})
    else:
        folded = hf_export.folded_sources(onnx_path, parameters)
    exported = {t.name: nh.to_array(t) for t in onnx.load(onnx_path).graph.initializer}
    layouts = {n: hf_export.layout(exported[n], state0[src]) for n, src in folded.items()
               if n in exported}

    # ONNX's Attention, or the exporters' SDPA decomposition, runs fused: one
    # kernel per layer forward, one backward.
    bound = bind(a.work, bindings)  # zero-opt's --constant-input flags
    plan = subprocess.run([os.path.join(a.bin, "zero-opt"), onnx_path, "--emit=plan"] + bound,
                          check=True, capture_output=True, text=True).stdout
    layers = initial.config.num_hidden_layers
    fused = (plan.count("plan.kernel attention "), plan.count("plan.kernel attention_grad "))
    print("fused attention kernels: %d forward, %d backward (%d layers)" % (
        fused + (layers,)))
    if fused != (layers, layers):
        print("expected one fused attention kernel per layer each way")
        return 1
    # Grouped-query attention reads each key/value head once: the fused kernel's
    # key and value have the config's key/value heads, not copies per query head.
    kv_heads = getattr(initial.config, "num_key_value_heads", None) or \
        initial.config.num_attention_heads
    # An operand read in place (a head of the QKV projection) has its view's
    # shape as an attribute; one read as it lies, its buffer's.
    def operand_heads(line, name, buffer):
        view = re.search(r"\b%s_shape = array<i64: (\d+), (\d+)" % name, line)
        return int(view.group(2)) if view else int(buffer.split("x")[1])
    heads = set()
    for line in plan.splitlines():
        buffers = re.search(r"plan\.kernel attention ins\([^:]*: memref<([0-9x]+)x\w+>, "
                            r"memref<([0-9x]+)x\w+>, memref<([0-9x]+)x\w+>", line)
        if buffers:
            heads.add((operand_heads(line, "key", buffers.group(2)),
                       operand_heads(line, "value", buffers.group(3))))
    heads = sorted(heads)
    print("fused attention's key and value heads: %s (the config's: %d)" % (heads, kv_heads))
    if heads != [(kv_heads, kv_heads)]:
        print("expected the key and value to have the config's key/value heads")
        return 1
    # The causal mask (all samples unpadded), however the export writes it, is the
    # kernels' own: no mask tensor is read.
    causal = plan.count("causal = true")
    print("fused attention kernels with the causal mask as their own: %d of %d" % (
        causal, 2 * layers))
    if causal != 2 * layers:
        print("expected every fused attention kernel to be causal")
        return 1

    first, _ = zero_models.make_batch(torch.from_numpy(data.astype(np.int64)), 0, BATCH, SEQ)
    ok = forward_check(a.bin, a.work, onnx_path, first.numpy(), bindings, bound)
    references = {}
    for run in a.runs.split(","):
        stage, world = (int(x) for x in run.split("x"))
        if world not in references:
            model = copy.deepcopy(initial)
            references[world] = (torch_reference(model, data, a.steps, world * BATCH, lr, wd,
                                                 eps, a.precision),
                                 {k: v.detach().numpy() for k, v in model.state_dict().items()})
        torch_losses, state = references[world]
        work = os.path.join(a.work, "s%d-w%d" % (stage, world))
        os.makedirs(work, exist_ok=True)
        plan = os.path.join(work, "step.zplan")
        compile_cmd = [os.path.join(a.bin, "zero-opt"), onnx_path, "-o", plan,
                       "--optimizer=adamw", "--lr=%r" % lr, "--weight-decay=%r" % wd,
                       "--eps=%r" % eps,
                       "--world-size=%d" % world, "--zero-stage=%d" % stage,
                       "--bucket-size-mb=0.02", "--precision=" + a.precision] + bound
        r = subprocess.run(compile_cmd, capture_output=True, text=True)
        sys.stderr.write(r.stderr)
        if r.returncode != 0:
            print("zero-opt failed on the %s export of %s" % (a.export, a.model))
            return 1
        log = os.path.join(work, "log.json")
        trained = os.path.join(work, "trained.onnx")
        subprocess.run(zero_testing.launcher(world, "threads") + [
            os.path.join(a.bin, "zero-run"), plan, "--init", onnx_path, "--data", data_path,
            "--steps", str(a.steps), "--log-json", log, "--save-weights", trained,
            "--quiet"], check=True)
        zero_losses = [json.loads(line)["loss"] for line in open(log)]
        worst_loss = max(abs(z - t) / abs(t) for z, t in zip(zero_losses, torch_losses))
        print("%s (%s export, %s), stage %d on %d ranks: step losses" % (
            a.model, a.export, a.precision, stage, world))
        for i, (z, t) in enumerate(zip(zero_losses, torch_losses)):
            print("%4d  %13.8f  %13.8f   %.2e" % (i + 1, z, t, abs(z - t) / abs(t)))
        good = len(zero_losses) == a.steps and worst_loss < a.rtol

        before = {t.name: t for t in onnx.load(onnx_path).graph.initializer}
        worst, compared, fixed = 0.0, 0, 0
        covered = set()
        for init in onnx.load(trained).graph.initializer:
            got = nh.to_array(init)
            if init.name not in parameters and init.name not in folded:
                # Not a parameter: exactly the exported bytes.
                fixed += 1
                if got.tobytes() != nh.to_array(before[init.name]).tobytes():
                    print("initializer %s does not train but changed" % init.name)
                    good = False
                continue
            want = hf_export.expected_value(init.name, got.shape, state, folded, layouts)
            rel = (np.linalg.norm(got.astype(np.float64) - want.astype(np.float64))
                   / max(np.linalg.norm(want.astype(np.float64)), 1e-30))
            worst = max(worst, rel)
            compared += 1
            covered.add(folded.get(init.name, init.name))
            if rel >= a.rtol and a.precision == "fp32":
                print("weight %s differs from PyTorch's: relative error %.2e" % (init.name, rel))
                good = False
            # It trained: it moved away from its initial value.
            start = hf_export.expected_value(init.name, got.shape, state0, folded, layouts)
            if np.array_equal(got, start):
                print("weight %s did not change" % init.name)
                good = False
        tied = {k for k in parameters if k not in covered and
                any(initial.get_parameter(k) is initial.get_parameter(c) for c in covered)}
        covered |= tied
        missing = parameters - covered
        if missing:
            print("parameters with no trained tensor: %s" % ", ".join(sorted(missing)))
            good = False
        print("worst loss error %.2e, worst weight error %.2e over %d tensors (%d "
              "parameters, %d tied), %d fixed initializers bit-identical: %s" % (
                  worst_loss, worst, compared, len(parameters), len(tied), fixed,
                  "ok" if good else "MISMATCH"))
        ok &= good
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
