# lit configuration for zero-opt's regression tests.
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "zero-opt"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
# .onnxtxt files are ONNX models in ONNX's text syntax, with RUN lines in # comments.
config.suffixes = [".mlir", ".onnxtxt", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.zero_obj_root, "test")

# %python: fixtures run in the tests' Python environment (utils/setup.sh makes it).
# It comes before lit's defaults, whose %python is lit's own interpreter.
config.substitutions.append(
    ("%python", os.path.join(config.zero_obj_root, "python-env", "bin", "python")))
llvm_config.use_default_substitutions()
# %mlir_opt_zero: upstream mlir-opt (Debian's mlir-opt-22) with the project's
# dialects and passes loaded from ZeroPlugin.so (lib/Plugin), as MLIR's
# examples/standalone tests its plugin. A plugin's passes are registered after the
# command line is parsed, so tests name them in --pass-pipeline, not as flags.
_plugin = os.path.join(config.zero_obj_root, "lib", "ZeroPlugin.so")
config.substitutions.append(("%zero_plugin", _plugin))
config.substitutions.append(
    ("%mlir_opt_zero", "%s --load-dialect-plugin=%s --load-pass-plugin=%s"
     % (os.path.join(config.llvm_tools_dir, "mlir-opt"), _plugin, _plugin)))
config.substitutions.append(("%utils", os.path.join(config.zero_src_root, "utils")))
config.substitutions.append(("%zero_include", os.path.join(config.zero_src_root, "include")))
# Where the build writes generated .td files (the plan dialect's enums).
config.substitutions.append(("%zero_build_include", os.path.join(config.zero_obj_root, "include")))
# mlir-tblgen's -I flags for MLIR's own .td files (the ODS examples test).
config.substitutions.append(("%mlir_tblgen_includes",
                             " ".join("-I " + d for d in config.mlir_include_dirs.split(";"))))
llvm_config.with_environment("PATH", config.zero_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(["zero-opt", "zero-run", "zero-run-cuda-emulated"], [config.zero_tools_dir])
# %zero_bin: the folder of the tools, for scripts that run them.
config.substitutions.append(("%zero_bin", config.zero_tools_dir))

# A full disk is a small tmpfs mounted in a mount namespace of the test's own
# (gone when the test's command ends): that needs the right to make one (root,
# as on CI's machines). Where it is missing those tests report UNSUPPORTED.
import subprocess
import tempfile

with tempfile.TemporaryDirectory() as probe:
    if subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=4k tmpfs " + probe],
                      capture_output=True).returncode == 0:
        config.available_features.add("mount-namespace")

# Hosts of their own (test/Integration/Inputs/two-hosts-check.py) are network
# namespaces joined by a veth pair (iproute2's ip): that needs the right to make
# them (root, as on CI's machines); without it those tests report UNSUPPORTED.
import shutil

_probe = "zero-probe-%d" % os.getpid()
if shutil.which("ip") and subprocess.run(["ip", "netns", "add", _probe],
                                         capture_output=True).returncode == 0:
    subprocess.run(["ip", "netns", "del", _probe], capture_output=True)
    config.available_features.add("net-namespace")

# Device nodes of a test's own (mknod, a private /dev/null and /dev/zero in %t):
# that needs the right to make them (root, as on CI's machines).
with tempfile.TemporaryDirectory() as probe:
    if subprocess.run(["mknod", os.path.join(probe, "null"), "c", "1", "3"],
                      capture_output=True).returncode == 0:
        config.available_features.add("device-nodes")
