"""Two hosts on one machine: network namespaces joined by a veth pair (iproute2),
two ranks each, launched as torchrun launches them (RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR, MASTER_PORT) and met through zero-run's TCP rendezvous across the
link. Prints one line per check for FileCheck; exits non-zero on the first that
fails. Needs root (ip netns).

  two-hosts-check.py --work DIR [--bin BIN]   (BIN: zero-opt's and zero-run's
                                              folder; default: from PATH)

1. Parity: 4 ranks over two hosts train like the 4 thread ranks of one zero-run,
   bit for bit; under mpirun (OpenMPI over TCP) flat and hybrid within 1e-6; a 2 x 2 grid (hybrid sharding, a shard group per host) within
   1e-6; the link's byte counters against the report's inter-node bytes, flat
   and hybrid, full precision and quantized (ZeRO++'s qwZ, qgZ), and the drop
   quantization brings against the report's.
2. A failed host: the link cut, or the second host's ranks killed, ends every rank
   within 60 s, each naming a rank.
3. The last checkpoint of the failed run resumes on the remaining host (2 ranks,
   the checkpoint resharded), as the same resume does in one process.
"""
import argparse
import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HOSTS = [("10.77.0.1", 0), ("10.77.0.2", 1)]

# Every rank started, killed when the check ends however it ends (a failed check,
# an exception, lit's timeout): none outlives it.
STARTED = []


def kill_started():
    for p in STARTED:
        if p.poll() is None:
            p.kill()
            p.wait()


atexit.register(kill_started)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


class TwoHosts:
    """Namespaces zh0-ID and zh1-ID, veths zv0-ID and zv1-ID, 10.77.0.1 and .2."""

    def __init__(self, folder):
        self.dir = folder
        tag = str(os.getpid() % 100000)
        self.ns = [f"zh0-{tag}", f"zh1-{tag}"]
        self.veth = [f"zv0-{tag}", f"zv1-{tag}"]

    def __enter__(self):
        for ns in self.ns:
            run(["ip", "netns", "add", ns])
        run(["ip", "link", "add", self.veth[0], "type", "veth", "peer", "name", self.veth[1]])
        for (address, h), ns, veth in zip(HOSTS, self.ns, self.veth):
            run(["ip", "link", "set", veth, "netns", ns])
            run(["ip", "-n", ns, "addr", "add", address + "/24", "dev", veth])
            run(["ip", "-n", ns, "link", "set", veth, "up"])
            run(["ip", "-n", ns, "link", "set", "lo", "up"])
        return self

    def __exit__(self, *exc):
        kill_started()
        for ns in self.ns:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)

    def mpirun(self, ranks, args, timeout=120):
        """`mpirun -np ranks ARGS` from host 0, two slots per host, the second host's
        ranks started in its namespace by an rsh agent; every byte between ranks
        over TCP on the link's subnet (no shared memory: the hosts share a kernel)."""
        agent = os.path.join(self.dir, "agent.sh")
        with open(agent, "w") as f:
            f.write("#!/bin/sh\nhost=$1; shift\ncase \"$host\" in\n")
            for (address, h), ns in zip(HOSTS, self.ns):
                f.write(f"  {address}) ns={ns} ;;\n")
            f.write("  *) echo \"unknown host $host\" >&2; exit 1 ;;\nesac\n"
                    "exec ip netns exec $ns sh -c \"$*\"\n")
        os.chmod(agent, 0o755)
        hostfile = os.path.join(self.dir, "hosts")
        with open(hostfile, "w") as f:
            f.write("".join(f"{address} slots=2\n" for address, _ in HOSTS))
        cmd = ["ip", "netns", "exec", self.ns[0], "mpirun", "--allow-run-as-root",
               "-np", str(ranks), "--hostfile", hostfile, "--mca", "plm_rsh_agent", agent,
               "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "10.77.0.0/24",
               "--mca", "oob_tcp_if_include", "10.77.0.0/24"] + args
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)

    def link_bytes(self):
        """Bytes host 0's end of the link sent and received."""
        out = run(["ip", "-n", self.ns[0], "-s", "-j", "link", "show", self.veth[0]]).stdout
        stats = json.loads(out)[0]["stats64"]
        return stats["tx"]["bytes"] + stats["rx"]["bytes"]

    def cut(self):
        run(["ip", "-n", self.ns[1], "link", "set", self.veth[1], "down"])
        run(["ip", "-n", self.ns[0], "link", "set", self.veth[0], "down"])

    def launch(self, ranks_per_host, hosts, args, work, name, port=29500):
        """Ranks 0..N-1 of `hosts` hosts, rank r on host r // ranks_per_host; its
        output in WORK/NAME.r.txt."""
        world = ranks_per_host * hosts
        procs = []
        for r in range(world):
            h = r // ranks_per_host
            env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(world),
                       LOCAL_RANK=str(r % ranks_per_host), MASTER_ADDR=HOSTS[0][0],
                       MASTER_PORT=str(port), ZERO_RUN_SECRET=JOB_SECRET)
            out = open(os.path.join(work, f"{name}.{r}.txt"), "w")
            procs.append(subprocess.Popen(["ip", "netns", "exec", self.ns[h]] + args,
                                          env=env, stdout=out, stderr=subprocess.STDOUT))
            STARTED.append(procs[-1])
        return procs


# What every rank of one launch shares (zero-run refuses a launch without one).
JOB_SECRET = os.urandom(16).hex()


def losses(path):
    return [json.loads(line)["loss"] for line in open(path)]


def steps(path):
    return [json.loads(line)["step"] for line in open(path)]


def check(ok, message):
    print(("" if ok else "FAILED: ") + message, flush=True)
    if not ok:
        sys.exit(1)


def wait_all(procs, limit):
    """Exit codes, waiting at most `limit` seconds for each (None: still running)."""
    end = time.time() + limit
    codes = []
    for p in procs:
        try:
            codes.append(p.wait(timeout=max(0.1, end - time.time())))
        except subprocess.TimeoutExpired:
            codes.append(None)
    return codes


def read(work, name, r):
    return open(os.path.join(work, f"{name}.{r}.txt")).read()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", default=os.path.dirname(shutil.which("zero-run") or ""))
    p.add_argument("--work", required=True)
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    zero_run = os.path.join(a.bin, "zero-run")
    zero_opt = os.path.join(a.bin, "zero-opt")
    here = os.path.dirname(os.path.abspath(__file__))
    utils = os.path.join(here, "..", "..", "..", "utils")
    gpt = os.path.join(a.work, "gpt.onnx")
    run([sys.executable, os.path.join(utils, "make_gpt.py"), gpt, "--layers", "1",
         "--hidden", "32", "--seq", "16", "--vocab", "64"])
    plans = {}
    for world in (4, 2):
        plans[world] = os.path.join(a.work, f"step{world}.zplan")
        run([zero_opt, gpt, "--zero-stage=3", f"--world-size={world}", "-o", plans[world]])
    tokens = os.path.join(a.work, "tokens.u8")
    with open(tokens, "wb") as f:
        f.write(bytes(i * 7 % 64 for i in range(8192)))
    common = ["--device=cpu", "--init", gpt, "--data", tokens, "--threads", "1"]

    hybrid = os.path.join(a.work, "hybrid.zplan")
    run([zero_opt, gpt, "--zero-stage=3", "--world-size=4", "--zero-shard-group-size=2",
         "-o", hybrid])
    # ZeRO++'s quantized collectives: qwZ and qgZ on the flat world, qgZ on the grid.
    qflat_flags = ["--zero-quantized-weights", "--zero-quantized-gradients"]
    qgrid_flags = ["--zero-shard-group-size=2", "--zero-quantized-gradients"]
    qflat = os.path.join(a.work, "quantized.zplan")
    qgrid = os.path.join(a.work, "quantized-grid.zplan")
    run([zero_opt, gpt, "--zero-stage=3", "--world-size=4", "-o", qflat] + qflat_flags)
    run([zero_opt, gpt, "--zero-stage=3", "--world-size=4", "-o", qgrid] + qgrid_flags)

    # 1. Parity with the thread ranks of one process.
    ref = os.path.join(a.work, "threads.json")
    run([zero_run, plans[4]] + common + ["--steps", "6", "--log-json", ref, "--save-weights",
                                         os.path.join(a.work, "threads.onnx"), "--quiet"])
    with TwoHosts(a.work) as hosts:
        before = hosts.link_bytes()
        log = os.path.join(a.work, "hosts.json")
        procs = hosts.launch(2, 2, [zero_run, plans[4]] + common +
                             ["--steps", "6", "--log-json", log, "--save-weights",
                              os.path.join(a.work, "hosts.onnx")], a.work, "parity")
        codes = wait_all(procs, 120)
        check(codes == [0, 0, 0, 0], f"two hosts: ranks exit {codes}")
        same = open(os.path.join(a.work, "hosts.onnx"), "rb").read() == \
            open(os.path.join(a.work, "threads.onnx"), "rb").read()
        check(losses(log) == losses(ref) and same,
              f"two hosts: {len(losses(ref))} steps' losses and the trained weights are "
              "one process's, bit for bit")
        crossed = hosts.link_bytes() - before
        check(crossed > 0, "two hosts: the link carried the ranks' traffic")
        check("TCP (4 ranks, met at 10.77.0.1:29500)" in read(a.work, "parity", 0),
              "two hosts: rank 0 met the others at 10.77.0.1:29500")
        # OpenMPI over TCP between the hosts: flat and hybrid, within 1e-6 of flat
        # stage 3 in one process.
        for name, plan in (("flat", plans[4]), ("2 x 2 grid", hybrid)):
            log3 = os.path.join(a.work, f"mpi-{name[0]}.json")
            before = hosts.link_bytes()
            r = hosts.mpirun(4, [zero_run, plan] + common +
                             ["--steps", "6", "--log-json", log3, "--quiet"])
            check(r.returncode == 0, f"mpirun, {name}: 4 ranks on two hosts exit 0 "
                  f"({r.returncode}: {r.stderr.strip()[-300:]})")
            worst = max(abs(x - y) / abs(y) for x, y in zip(losses(log3), losses(ref)))
            check(len(losses(log3)) == 6 and worst <= 1e-6 and
                  hosts.link_bytes() - before > 0,
                  f"mpirun, {name}: 6 steps within 1e-6 of flat stage 3 in one process, "
                  "over the link")
        # Hybrid sharding, one shard group per host: like flat stage 3 in one
        # process, within 1e-6.
        log2 = os.path.join(a.work, "hosts-hybrid.json")
        procs = hosts.launch(2, 2, [zero_run, hybrid] + common +
                             ["--steps", "6", "--log-json", log2], a.work, "hybrid")
        check(wait_all(procs, 120) == [0, 0, 0, 0], "2 x 2 grid: ranks exit 0")
        worst = max(abs(x - y) / abs(y) for x, y in zip(losses(log2), losses(ref)))
        check(len(losses(log2)) == 6 and worst <= 1e-6,
              "2 x 2 grid on two hosts: 6 steps within 1e-6 of flat stage 3 in one process")
        # The bytes steps 3-8 put on the link (a run of 8 steps less one of 2: the
        # rendezvous and set-up cancel) against the report's inter-node bytes for
        # direct exchange on nodes of 2 ranks, both nodes' (each direction of the
        # link), within what TCP/IP, Ethernet and zero-run's message headers add.
        machine = os.path.join(a.work, "hosts-machine.json")
        with open(machine, "w") as f:
            json.dump({"name": "two hosts", "ranks_per_node": 2,
                       "collective_algorithm": "direct"}, f)
        measured_of, predicted_of = {}, {}
        for name, plan, flags in (("flat", plans[4], []),
                                  ("2 x 2 grid", hybrid, ["--zero-shard-group-size=2"]),
                                  ("flat, qwZ + qgZ", qflat, qflat_flags),
                                  ("2 x 2 grid, qgZ", qgrid, qgrid_flags)):
            carried = {}
            for n in (2, 8):
                before = hosts.link_bytes()
                procs = hosts.launch(2, 2, [zero_run, plan] + common + ["--steps", str(n)],
                                     a.work, f"bytes{n}")
                check(wait_all(procs, 120) == [0, 0, 0, 0], f"{name}: {n} steps ran")
                carried[n] = hosts.link_bytes() - before
            report = json.loads(run([zero_opt, gpt, "--zero-stage=3", "--world-size=4",
                                     "--machine=" + machine, "--report=json"] +
                                    flags).stdout)
            links = report["link_bytes_per_step"]
            predicted = 6 * links["nodes"] * links["inter_node_per_node"]
            measured = carried[8] - carried[2]
            ratio = measured / predicted
            print(f"{name}: the link carried {measured} bytes in 6 steps; the report's "
                  f"inter-node bytes: {predicted:.0f} (x {ratio:.3f})", flush=True)
            if "Z" not in name:
                check(1.0 <= ratio <= 1.15, f"{name}: the link's bytes are the report's "
                      "inter-node bytes, plus headers (1 to 1.15 times)")
            measured_of[name], predicted_of[name] = measured, predicted
        # Quantization's drop on the link, measured, against the report's. A
        # quantized run sends as many messages as its full-precision twin, so the
        # headers (zero-run's, TCP/IP's, Ethernet's, the ACKs) are the same bytes
        # and the payload saved must be the report's.
        for quantized, full in (("flat, qwZ + qgZ", "flat"),
                                ("2 x 2 grid, qgZ", "2 x 2 grid")):
            drop = measured_of[quantized] / measured_of[full]
            stated = predicted_of[quantized] / predicted_of[full]
            saved = measured_of[full] - measured_of[quantized]
            saved_stated = predicted_of[full] - predicted_of[quantized]
            print(f"{quantized}: the link's bytes dropped to x {drop:.3f} of {full}'s "
                  f"({saved} bytes fewer); the report states x {stated:.3f} "
                  f"({saved_stated:.0f} fewer)", flush=True)
            check(abs(saved / saved_stated - 1) <= 0.02, f"{quantized}: the link saved "
                  "the bytes the report states, within 2%")
            headers = measured_of[quantized] - predicted_of[quantized]
            full_headers = measured_of[full] - predicted_of[full]
            check(abs(headers / full_headers - 1) <= 0.1, f"{quantized}: beyond the report's "
                  "bytes, the link carried the headers of full precision's messages, within 10%")

    # 2. A failed host, twice: its link cut, its ranks killed. The first run
    # checkpoints every 10 steps; its last checkpoint is resumed below.
    ckpt = os.path.join(a.work, "ckpt")
    for failure in ("cut", "killed"):
        with TwoHosts(a.work) as hosts:
            extra = ["--save-checkpoint", ckpt, "--checkpoint-every", "10"] \
                if failure == "cut" else []
            procs = hosts.launch(2, 2, [zero_run, plans[4]] + common +
                                 ["--steps", "1000000"] + extra, a.work, failure)
            time.sleep(4)
            check(all(p.poll() is None for p in procs), f"{failure}: all 4 ranks train")
            start = time.time()
            if failure == "cut":
                hosts.cut()
            else:
                for p in procs[2:]:
                    p.send_signal(signal.SIGKILL)
            codes = wait_all(procs, 60)
            took = time.time() - start
            for q in procs:
                if q.poll() is None:
                    q.kill()
            check(all(c not in (0, None) for c in codes),
                  f"{failure}: every rank ended, non-zero, within 60 s ({codes})")
            print(f"{failure}: ended in {took:.0f} s", flush=True)
            survivors = (0, 1, 2, 3) if failure == "cut" else (0, 1)
            for r in survivors:
                text = read(a.work, failure, r)
                named = [line for line in text.splitlines()
                         if line.startswith(f"zero-run: error (rank {r}): ") and "rank " in
                         line.split("): ", 1)[1]]
                check(bool(named), f"{failure}: rank {r}'s error names a rank")
                print(f"{failure}: {named[0]}", flush=True)

    # 3. The last checkpoint resumes on the remaining host: 2 ranks there, and the
    # same resume as threads of one process, bit for bit.
    latest = open(os.path.join(ckpt, "latest")).read().strip()
    step = int(latest.rsplit("-", 1)[1])
    check(step >= 10, f"resume: the failed run's last checkpoint is step {step} (>= 10)")
    until = str(step + 4)
    ref = os.path.join(a.work, "resumed-threads.json")
    run([zero_run, plans[2]] + common + ["--steps", until, "--resume", ckpt, "--log-json",
                                         ref, "--save-weights",
                                         os.path.join(a.work, "resumed-threads.onnx"),
                                         "--quiet"])
    with TwoHosts(a.work) as hosts:
        log = os.path.join(a.work, "resumed-host.json")
        procs = hosts.launch(2, 1, [zero_run, plans[2]] + common +
                             ["--steps", until, "--resume", ckpt, "--log-json", log,
                              "--save-weights", os.path.join(a.work, "resumed-host.onnx")],
                             a.work, "resume")
        codes = wait_all(procs, 120)
        check(codes == [0, 0], f"resume: the remaining host's 2 ranks exit {codes}")
    check(steps(log) == [step + i for i in range(1, 5)],
          f"resume: steps {step + 1}-{step + 4} ran on the remaining host")
    same = open(os.path.join(a.work, "resumed-host.onnx"), "rb").read() == \
        open(os.path.join(a.work, "resumed-threads.onnx"), "rb").read()
    check(losses(log) == losses(ref) and same,
          "resume: the same losses and weights as the resume in one process, bit for bit")


if __name__ == "__main__":
    main()
