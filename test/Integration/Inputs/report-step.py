# Checks report-step.test's reports against the model and the plans (see there).
import json
import os
import re
import sys

d = sys.argv[1]
load = lambda f: json.load(open(os.path.join(d, f)))
r, nv, s3 = load("r.json"), load("nv.json"), load("s3.json")

# make_gpt.py's model: per layer QKV (C x 3C), projection (C x C), MLP (C x 4C,
# 4C x C); the tied LM head (C x V).
layers, c, vocab, tokens = 2, 64, 256, 2 * 32
weights = layers * 12 * c * c + c * vocab
model = 6 * tokens * weights
got = r["step"]["flops"]["gemm"]
print("gemm flops: report %d, model 6 x %d tokens x %d weights = %d: %s" % (
    got, tokens, weights, model, "equal" if got == model else "differ"))


def launches(plan):
    kinds = re.findall(r"plan\.kernel (\w+) ", open(os.path.join(d, plan)).read())
    return sum(1 for k in kinds if k != "wait")


for label, report, plan in (("kernels", r, "p.mlir"), ("stage 3 kernels", s3, "s3.mlir")):
    n = launches(plan)
    print("%s: report %d, plan %d (but waits): %s" % (
        label, report["step"]["kernels"], n, "equal" if report["step"]["kernels"] == n else
        "differ"))

b = r["step"]["bytes"]
ok = r["step"]["flops"]["attention"] > 0 and all(b[k] > 0 for k in ("gemm", "attention", "other"))
print("attention flops %d > 0, bytes gemm %d attention %d other %d: %s" % (
    r["step"]["flops"]["attention"], b["gemm"], b["attention"], b["other"],
    "all positive" if ok else "not all positive"))
print("other bytes without views %d > with %d: %s" % (
    nv["step"]["bytes"]["other"], b["other"],
    "yes" if nv["step"]["bytes"]["other"] > b["other"] else "no"))
