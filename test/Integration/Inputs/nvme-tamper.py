"""nvme-tamper.py ACTION DIR COMMAND...: runs COMMAND (a zero-run training with
--nvme-path DIR, printing its steps), waits until it has trained two steps, then
  overwrite: writes other values (0.25 as f32, finite) over the whole file, its
             size unchanged, as another program might;
  SIGTERM, SIGINT, SIGHUP: sends the run that signal;
and prints how the run ended ("exit N" or "signal NAME") and the files left in DIR."""
import os
import signal
import struct
import subprocess
import sys
import threading

action, folder, command = sys.argv[1], sys.argv[2], sys.argv[3:]
# The run's progress lines ("step 2/100000 ...") say when it has trained: by then
# every block of its file has been written and read back.
run = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
trained = False
for line in run.stdout:
    if "step 2/" in line:
        trained = True
        break
threading.Thread(target=lambda: [None for _ in run.stdout], daemon=True).start()
files = [f for f in os.listdir(folder) if f.endswith(".nvme")]
if not trained or not files:
    run.kill()
    print("the run did not train with an NVMe file")
    sys.exit(1)
if action == "overwrite":
    for name in files:
        path = os.path.join(folder, name)
        size = os.path.getsize(path)
        # Finite values (0.25 as f32): nothing the run's non-finite check finds.
        block = struct.pack("<f", 0.25) * (1 << 14)
        try:
            fd = os.open(path, os.O_WRONLY)
            try:
                done = 0
                while done < size:
                    done += os.pwrite(fd, block[: min(len(block), size - done)], done)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError:
            pass  # the run found the change and removed its file mid-write (fsync: EIO)
else:
    run.send_signal(getattr(signal, action))
code = run.wait(timeout=300)
print("signal " + signal.Signals(-code).name if code < 0 else "exit %d" % code)
print("left: %s" % sorted(os.listdir(folder)))
