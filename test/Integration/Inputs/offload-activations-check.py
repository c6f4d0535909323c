# Compares offload-activations.test's plans, reports and runs (see the test).
import json
import os
import sys

work = sys.argv[1]


def load(name):
    report = json.load(open(os.path.join(work, name + ".json")))
    steps = [json.loads(l) for l in open(os.path.join(work, name + ".log"))]
    weights = open(os.path.join(work, name + ".safetensors"), "rb").read()
    return report, steps, weights


moved = {}
for r in ("none", "blocks"):
    base, base_steps, base_weights = load(r + "-none")
    off, off_steps, off_weights = load(r + "-cpu")
    host = off["host_bytes"]
    acts = host["activations"]
    moved[r] = acts
    lower = off["per_rank_bytes"]["total_peak"] < base["per_rank_bytes"]["total_peak"]
    copies = acts > 0 and host["to_host_per_step"] == acts and host["to_device_per_step"] == acts
    measured = all((s["copied_bytes"]["to_host"], s["copied_bytes"]["to_device"]) ==
                   (acts, acts) for s in off_steps)
    same = [s["loss"] for s in base_steps] == [s["loss"] for s in off_steps]
    print("%s: device peak lower %s, host activations = copies %s, measured copies = report "
          "%s, losses same %s, weights same %s" % (r, lower, copies, measured, same,
                                                   base_weights == off_weights))
print("blocks moves less than none", 0 < moved["blocks"] < moved["none"])
