# What the check and test scripts share: tensor files, a model's weights, launching
# ranks, bundling plans for a machine without zero-opt, and small argument parsers.
# numpy and onnx only (no torch), so that every script can import it. Run the
# scripts with build/python-env/bin/python.
import os
import re
import shutil
import socket
import subprocess
import sys

import onnx
from onnx import numpy_helper


def read_tensor(path):
    """A TensorProto file (the ONNX backend-test layout's input_K.pb / output_K.pb;
    zero-run --save-outputs writes them too) as a numpy array."""
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def write_tensor(array, path, name=""):
    """`array` as a TensorProto file."""
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())


def onnx_weights(path):
    """{initializer name: numpy array} of an ONNX model (zero-run --save-weights
    writes its trained weights as one)."""
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


def forward_outputs(bin_dir, work, onnx_path, tokens, weights, output=1):
    """zero-run's forward (a --mode=inference plan) of `onnx_path` on `tokens`
    [B, T], fed as input_ids and labels, with the parameters of `weights` (a
    safetensors file or save_pretrained folder, --init): output `output` (a
    causal LM's logits)."""
    inputs = os.path.join(work, "inputs")
    os.makedirs(inputs, exist_ok=True)
    for k, name in enumerate(["input_ids", "labels"]):
        write_tensor(tokens, os.path.join(inputs, "input_%d.pb" % k), name)
    forward = os.path.join(work, "forward.zplan")
    subprocess.run([os.path.join(bin_dir, "zero-opt"), onnx_path, "--mode=inference", "-o",
                    forward], check=True, stderr=subprocess.DEVNULL)
    outputs = os.path.join(work, "outputs")
    subprocess.run([os.path.join(bin_dir, "zero-run"), forward, "--init", onnx_path,
                    "--init", weights, "--inputs", inputs, "--save-outputs", outputs,
                    "--quiet"], check=True)
    return read_tensor(os.path.join(outputs, "output_%d.pb" % output))


def launcher(world, ranks_as="mpirun"):
    """The command prefix that runs `world` ranks as mpirun processes; nothing for
    one rank, or when the ranks are threads of one zero-run (ranks_as="threads")."""
    if world <= 1 or ranks_as == "threads":
        return []
    cmd = ["mpirun", "-np", str(world), "--oversubscribe"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


def add_launcher_flag(parser):
    """--launcher mpirun|threads, for launcher(world, args.launcher)."""
    parser.add_argument("--launcher", choices=["mpirun", "threads"], default="mpirun",
                        help="ranks as mpirun processes, or as threads of one zero-run")


def bundle_files(bundle, case, folder, names):
    """Copies folder/NAME for each of `names` into bundle/CASE/: the plans a machine
    without zero-opt runs later from --prebuilt bundle."""
    dest = os.path.join(bundle, case)
    os.makedirs(dest, exist_ok=True)
    for name in names:
        shutil.copy(os.path.join(folder, name), dest)


def free_port():
    """A loopback TCP port nobody listens at now (MASTER_PORT for rank processes)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def use_deepspeed_cpu():
    """DeepSpeed on its CPU accelerator, its JIT-built ops (shared-memory all-reduce,
    cpu_adam) kept beside the Python environment (~/.cache/zero-opt/venv-HASH-
    torch-extensions), as the environment is kept: a new environment builds them
    anew, a build folder does not. Set before deepspeed is imported."""
    os.environ["DS_ACCELERATOR"] = "cpu"
    os.environ["TORCH_EXTENSIONS_DIR"] = os.path.realpath(sys.prefix) + "-torch-extensions"


def fnv1a64(data):
    """FNV-1a 64, zero-run's checksum of plans, checkpoints and manifests, over
    bytes (about 7 MB/s in Python)."""
    h = 0xCBF29CE484222325
    for b in bytes(data):
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def int_list(text):
    """"1,2,4" -> [1, 2, 4] (argparse type)."""
    return [int(v) for v in text.split(",")]


def cudnn_refusal(stderr):
    """Why zero-run's 16-bit attention ran on its own kernels rather than cuDNN's (the
    reason of its first "... not cuDNN: REASON" line), or None when it did not say."""
    for line in stderr.splitlines():
        if "not cuDNN: " in line:
            return line.split("not cuDNN: ", 1)[1]
    return None


def attention_profile_ms(profile):
    """The fused attention kernels' time per step in `zero-run --profile` output:
    {"forward": attention, "total": attention + attention_grad} in ms. Exits naming
    the problem when the profile has no such kernels."""
    kinds = dict((m.group(1), float(m.group(2)))
                 for m in re.finditer(r"^\s+(\w+)\s+([0-9.]+) ms", profile, re.M))
    if "attention" not in kinds or "attention_grad" not in kinds:
        raise SystemExit("zero-run --profile shows no fused attention kernels:\n" + profile)
    return {"forward": kinds["attention"],
            "total": kinds["attention"] + kinds["attention_grad"]}
