"""under-load.py N COMMAND...: runs COMMAND while N other processes keep a core busy
each (a machine shared with other work), and exits with COMMAND's status. The busy
processes end with it."""
import multiprocessing
import subprocess
import sys
import time


def spin(stop_at):
    x = 0
    while time.monotonic() < stop_at:
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF


if __name__ == "__main__":
    count = int(sys.argv[1])
    # Bounded: a busy process never outlives the test's own time limit.
    stop_at = time.monotonic() + 600
    spinners = [multiprocessing.Process(target=spin, args=(stop_at,), daemon=True)
                for _ in range(count)]
    for p in spinners:
        p.start()
    try:
        code = subprocess.run(sys.argv[2:]).returncode
    finally:
        for p in spinners:
            p.terminate()
            p.join()
    sys.exit(code)
