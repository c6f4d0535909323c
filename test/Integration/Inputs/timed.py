"""timed.py LIMIT_S COMMAND...: runs COMMAND, passing its stdout and stderr on, and
says how much CPU time (user + system) and wall time it took; exits non-zero when
the command fails or its CPU time is over LIMIT_S. CPU time, not wall time, is what
the limit checks: a test runner sharing the cores slows the wall clock, not the
work."""
import resource
import subprocess
import sys
import time

limit = float(sys.argv[1])
start = time.monotonic()
code = subprocess.run(sys.argv[2:]).returncode
wall = time.monotonic() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = usage.ru_utime + usage.ru_stime
print(f"took {cpu:.1f} s of CPU ({wall:.1f} s wall)", file=sys.stderr)
if code:
    sys.exit(code)
if cpu > limit:
    print(f"over the limit of {limit:g} s of CPU", file=sys.stderr)
    sys.exit(1)
print(f"within {limit:g} s of CPU", file=sys.stderr)
