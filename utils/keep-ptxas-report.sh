#!/bin/sh
# A compiler launcher for the CUDA backend (runtime/CMakeLists.txt): runs the
# compile it is given (ccache, nvcc and its arguments) and keeps what ptxas said
# about the kernels' resources (-Xptxas=-v: registers, stack frame, spills) beside
# the object, as OBJECT.ptxas.txt, for the ctest that holds the attention kernels
# to no local memory (utils/check-cuda-build.py --ptxas-reports). The report's
# lines stay out of the build's log; anything else the compiler says goes through.
out=
prev=
for a in "$@"; do
  [ "$prev" = "-o" ] && out=$a
  prev=$a
done
if [ -z "$out" ]; then
  exec "$@"
fi
"$@" 2> "$out.ptxas.part"
rc=$?
grep -v -e '^ptxas info' -e '^    [0-9]* bytes stack frame' "$out.ptxas.part" >&2
if [ $rc -eq 0 ]; then
  mv "$out.ptxas.part" "$out.ptxas.txt"
else
  rm -f "$out.ptxas.part" "$out.ptxas.txt"
fi
exit $rc
