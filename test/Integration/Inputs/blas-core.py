# Checks blas-core.test's run: OUT ERR. The kernels zero-run names must be what
# this CPU's instructions allow (AVX-512: SkylakeX or Cooperlake; AVX2 and FMA:
# Haswell or newer), never the generic Prescott kernels on such a CPU; a switch
# is announced on stderr.
import re
import sys

out, err = open(sys.argv[1]).read(), open(sys.argv[2]).read()
core = re.search(r"matrix products: OpenBLAS, its (\S+) kernels", out).group(1)
flags = set()
for line in open("/proc/cpuinfo"):
    if line.startswith("flags"):
        flags = set(line.split(":", 1)[1].split())
        break
vector = {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags or {"avx2", "fma"} <= flags
switched = "running with OPENBLAS_CORETYPE=%s" % core in err
ok = not (vector and core == "Prescott") and (switched or "OPENBLAS_CORETYPE" not in err)
print("kernels for this CPU: %s (%s%s)" % ("ok" if ok else "generic", core,
                                          ", switched" if switched else ""))
