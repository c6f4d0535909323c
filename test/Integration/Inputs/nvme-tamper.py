"""nvme-tamper.py ACTION DIR COMMAND...: runs COMMAND (a zero-run training with
--nvme-path DIR), waits until its NVMe offload file appears and the run has gone
on for a moment, then
  overwrite: writes other values (0.25 as f32, finite) over the whole file, its
             size unchanged, as another program might;
  SIGTERM, SIGINT, SIGHUP: sends the run that signal;
and prints how the run ended ("exit N" or "signal NAME") and the files left in DIR."""
import os
import signal
import struct
import subprocess
import sys
import time

action, folder, command = sys.argv[1], sys.argv[2], sys.argv[3:]
run = subprocess.Popen(command)
deadline = time.monotonic() + 120
files = []
while not files and run.poll() is None and time.monotonic() < deadline:
    files = [f for f in os.listdir(folder) if f.endswith(".nvme")]
    time.sleep(0.05)
if not files:
    run.kill()
    print("no NVMe file appeared")
    sys.exit(1)
time.sleep(1.0)  # a few steps in: the file holds written weights and state
if action == "overwrite":
    for name in files:
        path = os.path.join(folder, name)
        size = os.path.getsize(path)
        fd = os.open(path, os.O_WRONLY)
        # Finite values (0.25 as f32): nothing the run's non-finite check finds.
        block = struct.pack("<f", 0.25) * (1 << 14)
        done = 0
        while done < size:
            done += os.pwrite(fd, block[: min(len(block), size - done)], done)
        os.fsync(fd)
        os.close(fd)
else:
    run.send_signal(getattr(signal, action))
code = run.wait(timeout=300)
print("signal " + signal.Signals(-code).name if code < 0 else "exit %d" % code)
print("left: %s" % sorted(os.listdir(folder)))
