# Checks gpt2-small-bytes.test's bf16 plan and report (see there).
import json
import re
import sys

report, plan = json.load(open(sys.argv[1])), open(sys.argv[2]).read()
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
# checked is the last figure reached; it comes down as the work does.
before, goal, bound = 30.99e9, 30.99e9 / 3, 10.6e9
other = report["step"]["bytes"]["other"]
print("bytes.other %.2f GB (before %.2f, goal %.2f): %.2f of before, %s %.1f GB" % (
    other / 1e9, before / 1e9, goal / 1e9, other / before,
    "within" if other <= bound else "above", bound / 1e9))

# Launches per step: at most 400 (406 with an AdamW kernel per parameter, 259 with
# the optimizer in one kernel).
kernels, bound = report["step"]["kernels"], 400
print("kernels %d (bound %d): %s" % (kernels, bound, "within" if kernels <= bound else "above"))
