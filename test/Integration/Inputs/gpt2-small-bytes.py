# Checks gpt2-small-bytes.test's bf16 plan and report (see there): REPORT PLAN
# [erf|tanh], the model's GELU.
import json
import re
import sys

report, plan = json.load(open(sys.argv[1])), open(sys.argv[2]).read()
gelu = sys.argv[3] if len(sys.argv) > 3 else "erf"
batch, seq, vocab = 8, 1024, 50257
logits = batch * seq * vocab

# Every f32 buffer's element count: none may be as large as the logits.
f32 = []
for shape in re.findall(r"plan\.buffer [^\n]*?: memref<([0-9x]+)xf32>\n", plan):
    n = 1
    for d in shape.split("x"):
        n *= int(d)
    f32.append(n)
largest = max(f32)
print("largest f32 buffer %d elements, logits %d: %s" % (
    largest, logits, "smaller" if largest < logits else "as large"))

# The classifier's gradient is written over the logits: its second output and its
# scores are views of one buffer, at the same offset.
buffers = dict(re.findall(r"(%\d+) = plan\.buffer temp at (\d+ view of %\d+)", plan))
kernel = re.search(r"plan\.kernel softmax_cross_entropy_with_grad ins\((%\d+),.*?\) "
                   r"outs\(%\d+, (%\d+) ", plan)
scores, grad = kernel.group(1), kernel.group(2)
print("gradient over the logits: %s" % (
    "yes" if scores in buffers and buffers.get(grad) == buffers[scores] else "no"))

# The figure before the issue (the report's step.bytes.other for this model at the
# commit that added it, 7dd49a9) and the goal, a third of it. The bound
# checked is the last figure reached; it comes down as the work does. GELU's exact
# (erf) form, and GPT-2's own tanh form (whose chain 7dd49a9 ran op by op: 43.67 GB;
# now in the GEMMs' epilogues).
if gelu == "tanh":
    before, bound = 43.67e9, 7.45e9
else:
    before, bound = 30.99e9, 10.45e9
goal = before / 3
other = report["step"]["bytes"]["other"]
print("bytes.other %.2f GB (before %.2f, goal %.2f): %.2f of before, %s %.2f GB" % (
    other / 1e9, before / 1e9, goal / 1e9, other / before,
    "within" if other <= bound else "above", bound / 1e9))
print("goal: %s" % ("met" if other <= goal else "not met"))
# Where the erf model's goal (10.33 GB) stands for this one too.
print("within the erf model's goal of %.2f GB: %s" % (
    30.99e9 / 3 / 1e9, "yes" if other <= 30.99e9 / 3 else "no"))

# Launches per step: at most 400 (406 with an AdamW kernel per parameter, 259 with
# the optimizer in one kernel).
kernels, bound = report["step"]["kernels"], 400
print("kernels %d (bound %d): %s" % (kernels, bound, "within" if kernels <= bound else "above"))

# Kernels that compute a GELU or its gradient on their own: gelu, gelu_grad,
# gelu_tanh, gelu_tanh_grad kernels, and fused elementwise programs with such an
# instruction (opcodes from zplan/FusedProgram.h: Gelu 10, GeluGrad 19, GeluTanh 20,
# GeluTanhGrad 21; five words per instruction).
gelus = len(re.findall(r"plan\.kernel gelu", plan))
for words in re.findall(r"plan\.kernel fused .*?program = array<i64: ([-0-9, ]+)>", plan):
    ops = [int(w) for w in words.split(", ")][::5]
    gelus += any(op in (10, 19, 20, 21) for op in ops)
print("kernels computing a GELU: %d" % gelus)
