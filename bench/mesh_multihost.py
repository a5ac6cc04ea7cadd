#!/usr/bin/env python3
"""Plain ZeRO-3 against the mesh schemes on two "hosts" joined by a slow link.

Two network namespaces made here stand for two nodes of 2 ranks each (the
helpers of test/runtime/check_multihost.py: a bridge, a veth per host, an
rsh agent for mpirun). Ranks on one host talk through shared memory, the
hosts through TCP over their veths, whose egress is throttled to --rate with
tc's token bucket (tbf; this VM's kernel has no netem, so no added delay).
gpt2_train trains GPT-2 124M at a short sequence on the 4 ranks, in turn:

  * zero3:   ZeRO-3 over one axis of 4 ranks (every collective a 4-rank
             ring that crosses the link);
  * hybrid3: --mesh 2x2 --stage 3 (sharded within a host, the shards'
             average across hosts);
  * full3:   --mesh-scheme full (sharded over all 4, gathered across hosts
             first);
  * hpz:     full3 with --hpz (the backward gathers within the host);
  * zeropp8: hpz with --qwz --qgz --qgz-bits 8 (int8 weights and
             gradients across hosts);
  * zeropp:  hpz with --qwz --qgz (int8 weights, int4 gradients across
             hosts: ZeRO++);
  * ddp:     --mesh 2x2 --stage 0 (plain data parallelism on the mesh);

and reports, per step, the bytes that crossed the link (the namespaces'
eth0 tx counters: TCP/IP and MPI overhead included, read around the whole
run and divided by its steps, startup excluded by a 0-step run's count) and
the median step time after the first. One configuration at a time, in one
run, side by side.

  mesh_multihost.py [--gpt2-train build/bin/gpt2_train] [--steps 4]
                    [--rate 1gbit] [--markdown]
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "test", "runtime"))
import benchlib  # noqa: E402
import check_multihost as hosts  # noqa: E402

FULL = ["--mesh", "2x2", "--mesh-scheme", "full", "--stage", "3"]
CONFIGS = [
    ("zero3", ["-n", "4", "--stage", "3"]),
    ("hybrid3", ["--mesh", "2x2", "--stage", "3"]),
    ("full3", FULL),
    ("hpz", FULL + ["--hpz"]),
    ("zeropp8", FULL + ["--hpz", "--qwz", "--qgz", "--qgz-bits", "8"]),
    ("zeropp", FULL + ["--hpz", "--qwz", "--qgz"]),
    ("ddp", ["--mesh", "2x2", "--stage", "0"]),
]
MODEL = ["--size", "124M", "--seq", "64", "--batch", "4"]


def tx_bytes():
    total = 0
    for ns in hosts.NAMESPACES[:2]:
        out = hosts.sh("ip", "netns", "exec", ns, "cat",
                       "/sys/class/net/eth0/statistics/tx_bytes").stdout
        total += int(out.strip())
    return total


def mpirun(agent, hostfile):
    # Shared memory within a host, TCP across: a two-level machine.
    return [shutil.which("mpirun"), "--allow-run-as-root", "--hostfile",
            hostfile, "-n", "4", "--bind-to", "none",
            "--mca", "plm_rsh_agent", agent,
            "--mca", "oob_tcp_if_include", hosts.SUBNET,
            "--mca", "btl", "self,vader,tcp",
            "--mca", "btl_vader_single_copy_mechanism", "none",
            "--mca", "btl_tcp_if_include", hosts.SUBNET]


def train(command):
    """Runs one training; returns (stdout, bytes that crossed the link)."""
    before = tx_bytes()
    done = subprocess.run(command, capture_output=True, text=True,
                          timeout=1800)
    after = tx_bytes()
    if done.returncode != 0:
        sys.exit(f"error: {' '.join(command)} failed ({done.returncode}):\n"
                 f"{done.stdout}\n{done.stderr}")
    return done.stdout, after - before


def main():
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpt2-train", default=os.path.join(
        benchlib.ROOT, "build", "bin", "gpt2_train"))
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--rate", default="1gbit")
    parser.add_argument("--workdir", default="/tmp/zero-mesh-bench")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    program, digest = benchlib.snapshot(args.gpt2_train, args.workdir)
    rows = []
    try:
        agent = hosts.setup(args.workdir)
        for ns in hosts.NAMESPACES[:2]:
            hosts.sh("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev",
                     "eth0", "root", "tbf", "rate", args.rate, "burst",
                     "256kb", "latency", "100ms")
        hostfile = os.path.join(args.workdir, "hosts")
        with open(hostfile, "w") as f:
            f.write(f"{hosts.HOSTS[0]} slots=2\n{hosts.HOSTS[1]} slots=2\n")
        launch = mpirun(agent, hostfile)
        for name, flags in CONFIGS:
            # Startup alone (launch, compile, initial state): subtracted.
            _, startup = train(launch + [program] + MODEL + flags +
                               ["--plan-only"])
            out, crossed = train(launch + [program] + MODEL + flags +
                                 ["--steps", str(args.steps),
                                  "--log-every", "1"])
            times = [float(m) for m in re.findall(
                r"step +\d+/\d+ +loss \S+ +\(([0-9.]+) ms/step", out)]
            sent = re.search(r"sent ([0-9.]+ \S+) per step", out)
            per_step = (crossed - startup) / args.steps
            rows.append((name, per_step, statistics.median(times[1:]),
                         sent.group(1) if sent else "?"))
            print(f"{name}: {per_step / 2**20:.1f} MiB across the link per "
                  f"step, {statistics.median(times[1:]):.0f} ms/step",
                  flush=True)
    finally:
        hosts.teardown()
    zero3 = rows[0]
    table = [[name, f"{crossed / 2**20:.1f}", f"{crossed / zero3[1]:.2f}",
              f"{ms:.0f}", f"{ms / zero3[2]:.2f}", sent]
             for name, crossed, ms, sent in rows]
    print(benchlib.table(
        ["config", "MiB across link/step", "x zero3", "ms/step", "x zero3",
         "sent/rank/step (runtime)"], table, args.markdown))
    print(f"GPT-2 124M, seq 64, global batch 4, 2 hosts x 2 ranks, link "
          f"{args.rate} (tbf), {args.steps} steps, gpt2_train {digest}; "
          f"{benchlib.machine()}")


if __name__ == "__main__":
    main()
