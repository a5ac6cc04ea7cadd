#!/usr/bin/env python3
"""Samples/s of zero-run at ZeRO stages 0-3 against PyTorch and DeepSpeed.

One GPT-2-shaped model (examples/gen_gpt2.py: embeddings, pre-LN blocks with
causal attention and a GELU MLP, LM head tied to wte, AdamW, fp32) is trained
for STEPS steps on N ranks by

* zero-run at `--stage 0,1,2,3` (`--blas-threads 1`: one BLAS thread per
  rank, what zero-run's default also picks when ranks >= cores);
* the peers named by `--peers`, all bench/torch_gpt2.py (the same model,
  initial distributions, AdamW and synthetic task), over gloo, N processes
  with one thread each:
  - `ddp113`, `zero113`: Debian's /usr/bin/python3 with python3-torch 1.13
    (`--torch-python`): DistributedDataParallel with torch.optim.AdamW, and
    DDP with torch.distributed.optim.ZeroRedundancyOptimizer (ZeRO-1);
  - `ddp`, `zero`: the same two on PyTorch 2.x (`--torch2-python`, the
    virtual environment scripts/setup-bench.sh makes);
  - `fsdp2-stage3`, `fsdp2-stage2`: FSDP2 `fully_shard` per block and root,
    reshard_after_forward=True (ZeRO-3) and False (ZeRO-2 traffic);
  - `ds1`, `ds2`, `ds3`: DeepSpeed ZeRO stages 1-3 (fp32, torch AdamW, its
    CPU accelerator on the gloo group), same interpreter, DeepSpeed's
    defaults otherwise; `ds3-partition-all`: ZeRO-3 with
    stage3_param_persistence_threshold 0 (its default keeps parameters of
    under 100,000 elements, here all of them, whole on every rank).
  The default, `ddp113,zero113`, is the comparison of the earlier entries of
  docs/benchmarks.md; `--peers all` names every peer. Before the timed runs
  each peer is tried once (3 steps at the first N); one that fails is left
  out with its error printed (`--strict`: stop instead), so that a peer that
  cannot run here says why.

Both sides time each step on rank 0 without the batch preparation, and drop
the first step; samples/s = global batch x (STEPS - 1) / time. The runs are
interleaved: each repetition runs every configuration of one N once (in an
order rotated per repetition) while holding the build lock (`--lock`; a few
minutes at a time with every peer, so builds get in between), and the table
gives the median over repetitions. Ratios are of those medians, with the
range of the per-repetition ratios; the targets printed beside them are
issue 17's: stages 1 and 2 >= 0.95 x stage 0, stage 3 >= 0.97 x stage 0 at
N = 4, and each of our stages >= 1.3 x its peer (stage 0 / DDP, stage 2 /
FSDP2 reshard_after_forward=False, stage 3 / FSDP2, stage K / DeepSpeed
ZeRO-K). zero-run is copied once at the start, so a rebuild during the
benchmark does not mix two binaries; its sha256 is printed.

The build lock keeps compiles out, not test suites: each run also measures
the CPU time other processes took meanwhile (/proc/stat less this program's
children) and is run again when that exceeds `--noise-threshold` of the
machine (default 5 %), up to `--max-reruns` times; the table shows the worst
share kept ("others' CPU").

    scripts/setup-bench.sh        # once: python3-torch, and the venv of torch 2.x + DeepSpeed
    python3 bench/runtime_vs_pytorch.py --lock /tmp/zero-build.lock --markdown
        [--ranks 2,4] [--stages 0,1,2,3] [--steps 30] [--repeats 5]
        [--layers 2 --dim 128 --heads 4 --seq 64 --vocab 512 --batch 8]
        [--zero-run build/bin/zero-run] [--torch-python /usr/bin/python3]
        [--peers ddp113,zero113 | --peers all | --peers ddp113,ddp,fsdp2-stage2,...]
        [--torch2-python /opt/zero-bench-venv/bin/python] [--strict]
        [--torch-bucket-view] [--no-torch] [--keep DIR]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

ROOT = benchlib.ROOT
DIMS = ("layers", "dim", "heads", "seq", "vocab", "batch")
DEFAULT_TORCH2_PYTHON = os.path.join(
    os.environ.get("ZERO_BENCH_VENV", "/opt/zero-bench-venv"), "bin", "python")

# name: (interpreter: "torch1" = --torch-python, "torch2" = --torch2-python,
#        torch_gpt2.py arguments, label; {torch} and {deepspeed} are the versions)
PEERS = {
    "ddp113": ("torch1", ["--mode", "ddp"], "PyTorch {torch} DDP"),
    "zero113": ("torch1", ["--mode", "zero"],
                "PyTorch {torch} DDP + ZeroRedundancyOptimizer"),
    "ddp": ("torch2", ["--mode", "ddp"], "PyTorch {torch} DDP"),
    "zero": ("torch2", ["--mode", "zero"], "PyTorch {torch} DDP + ZeroRedundancyOptimizer"),
    "fsdp2-stage2": ("torch2", ["--mode", "fsdp2", "--reshard-after-forward", "false"],
                     "PyTorch {torch} FSDP2, reshard_after_forward=False"),
    "fsdp2-stage3": ("torch2", ["--mode", "fsdp2", "--reshard-after-forward", "true"],
                     "PyTorch {torch} FSDP2 (fully_shard)"),
    "ds1": ("torch2", ["--mode", "deepspeed", "--ds-stage", "1"], "DeepSpeed {deepspeed} ZeRO-1"),
    "ds2": ("torch2", ["--mode", "deepspeed", "--ds-stage", "2"], "DeepSpeed {deepspeed} ZeRO-2"),
    "ds3": ("torch2", ["--mode", "deepspeed", "--ds-stage", "3"], "DeepSpeed {deepspeed} ZeRO-3"),
    "ds3-partition-all": ("torch2", ["--mode", "deepspeed", "--ds-stage", "3",
                                     "--ds-param-persistence-threshold", "0"],
                          "DeepSpeed {deepspeed} ZeRO-3, every parameter partitioned"),
}
# The pairs the ratios are printed for: (our stage, peer, target or None).
PEER_RATIOS = [
    (0, "ddp113", 1.3), (0, "ddp", 1.3),
    (1, "zero113", None), (1, "zero", None), (1, "ds1", 1.3),
    (2, "fsdp2-stage2", 1.3), (2, "ds2", 1.3),
    (3, "fsdp2-stage3", 1.3), (3, "ds3", 1.3), (3, "ds3-partition-all", None),
]


def torch_command(python, peer_args, ranks, steps, dims, json_path):
    cmd = [python, os.path.join(ROOT, "bench", "torch_gpt2.py"), *peer_args,
           "-n", str(ranks), "--steps", str(steps), "--metrics-json", json_path]
    for key in DIMS:
        cmd += ["--" + key, str(dims[key])]
    return cmd


def run_torch(python, peer_args, ranks, steps, dims, json_path, policy):
    cmd = torch_command(python, peer_args, ranks, steps, dims, json_path)
    for attempt in (1, 2):
        result, share = benchlib.run_quiet(cmd, policy)
        if result.returncode == 0:
            break
        # Seen once in many runs before the barrier before teardown: a gloo
        # process aborting at exit ("terminate called without an active
        # exception"). Run it again, and say so.
        print("warning: %s failed (%d), attempt %d:\n%s" % (
            " ".join(cmd), result.returncode, attempt, result.stderr[-2000:]),
            file=sys.stderr)
    return benchlib.read_metrics(cmd, result, json_path, share)


def probe_versions(python):
    """{"torch": version, "deepspeed": version or None} of an interpreter,
    or the error text when it cannot import torch."""
    code = ("import json, os, warnings; warnings.filterwarnings('ignore'); "
            "os.environ.setdefault('DS_ACCELERATOR', 'cpu'); import torch\n"
            "try:\n import deepspeed; ds = deepspeed.__version__\n"
            "except Exception:\n ds = None\n"
            "print(json.dumps({'torch': torch.__version__, 'deepspeed': ds}))")
    result = subprocess.run([python, "-c", code], capture_output=True, text=True)
    if result.returncode != 0:
        return (result.stderr.strip().splitlines() or ["exit %d" % result.returncode])[-1]
    return json.loads(result.stdout.strip().splitlines()[-1])


def try_peer(python, peer_args, ranks, dims, json_path):
    """None when 3 steps of the peer run, else why not (its last error lines)."""
    cmd = torch_command(python, peer_args, ranks, 3, dims, json_path)
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode == 0:
        return None
    lines = [x for x in (result.stderr + result.stdout).splitlines() if x.strip()]
    errors = [x for x in lines if "Error" in x or "error" in x]
    return "exit %d: %s" % (result.returncode, " | ".join((errors or lines)[-3:]))


def ratio_text(num, den, results, n):
    """'1.02 (0.99-1.04)': ratio of medians, then per-repetition range."""
    a, b = results[(n, num)], results[(n, den)]
    med = benchlib.median(a["sps"]) / benchlib.median(b["sps"])
    pairs = [x / y for x, y in zip(a["sps"], b["sps"])]
    return med, "%.3f (per repetition %.3f-%.3f)" % (med, min(pairs), max(pairs))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zero-run", default=benchlib.DEFAULT_ZERO_RUN)
    parser.add_argument("--torch-python", default="/usr/bin/python3",
                        help="an interpreter with torch 1.13 (Debian's python3-torch): "
                             "the peers ddp113 and zero113")
    parser.add_argument("--torch2-python", default=DEFAULT_TORCH2_PYTHON,
                        help="an interpreter with torch 2.x and DeepSpeed "
                             "(scripts/setup-bench.sh's venv): the other peers")
    parser.add_argument("--peers", default="ddp113,zero113",
                        help="comma-separated, of %s; or 'all'" % ",".join(PEERS))
    parser.add_argument("--strict", action="store_true",
                        help="stop when a peer cannot run instead of leaving it out")
    parser.add_argument("--ranks", default="2,4")
    parser.add_argument("--stages", default="0,1,2,3")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--blas-threads", type=int, default=1)
    parser.add_argument("--no-torch", action="store_true", help="zero-run only (no peers)")
    parser.add_argument("--torch-bucket-view", action="store_true",
                        help="ZeroRedundancyOptimizer(parameters_as_bucket_view=True) "
                             "instead of its default (one broadcast per parameter): "
                             "the peers zero113 and zero")
    benchlib.add_run_arguments(parser)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--keep", metavar="DIR", help="keep every metrics JSON here")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--vocab", type=int, default=512)
    parser.add_argument("--batch", type=int, default=8, help="batch per rank")
    args = parser.parse_args()
    dims = {key: getattr(args, key) for key in DIMS}
    ranks_list = [int(x) for x in args.ranks.split(",")]
    stages = [int(x) for x in args.stages.split(",")]

    peers = [] if args.no_torch else (
        list(PEERS) if args.peers == "all" else [x for x in args.peers.split(",") if x])
    for peer in peers:
        if peer not in PEERS:
            sys.exit("error: unknown peer %r; known: %s" % (peer, ", ".join(PEERS)))
    pythons = {"torch1": args.torch_python, "torch2": args.torch2_python}
    versions = {}
    for key in sorted({PEERS[p][0] for p in peers}):
        versions[key] = probe_versions(pythons[key])
        if isinstance(versions[key], str):
            sys.exit("error: %s cannot import torch (%s); run scripts/setup-bench.sh "
                     "(python3-torch; the venv of torch 2.x and DeepSpeed)"
                     % (pythons[key], versions[key]))

    def peer_args(peer):
        extra = list(PEERS[peer][1])
        if args.torch_bucket_view and extra == ["--mode", "zero"]:
            extra.append("--bucket-view")
        return extra

    configs = [("zero", s) for s in stages] + [("torch", p) for p in peers]
    names = {("zero", s): "zero-run stage %d" % s for s in stages}
    for peer in peers:
        version = versions[PEERS[peer][0]]
        names[("torch", peer)] = PEERS[peer][2].format(
            torch=version["torch"], deepspeed=version["deepspeed"]) + (
            " (bucket view)" if args.torch_bucket_view and "zero" in peer else "")

    policy = benchlib.Interference(args.noise_threshold, args.max_reruns)
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = args.keep or tmp
        os.makedirs(out_dir, exist_ok=True)
        program = os.path.join(tmp, "gpt2.mlir")
        gen = [sys.executable, os.path.join(ROOT, "examples", "gen_gpt2.py"),
               "--output", program]
        for key in DIMS:
            gen += ["--" + key, str(dims[key])]
        subprocess.run(gen, check=True)
        with open(program) as f:
            header = [next(f).strip("/ \n") for _ in range(2)]

        with benchlib.build_lock(args.lock):
            zero_run, digest = benchlib.snapshot_zero_run(args.zero_run, tmp)

        # Each peer once, outside the timing: one that cannot run here is
        # left out and says why (it also loads the libraries into the page
        # cache and builds what DeepSpeed compiles on first use).
        failed = {}
        for peer in peers:
            why = try_peer(pythons[PEERS[peer][0]], peer_args(peer), ranks_list[0], dims,
                           os.path.join(tmp, "try-%s.json" % peer))
            if why:
                print("warning: peer %s (%s) cannot run: %s" % (peer, names[("torch", peer)], why),
                      file=sys.stderr)
                if args.strict:
                    sys.exit(1)
                failed[peer] = why
        configs = [c for c in configs if c[1] not in failed]

        results = {}
        for rep in range(args.repeats):
            for n in ranks_list:
                with benchlib.build_lock(args.lock) as waited:
                    shift = rep % len(configs)
                    for config in configs[shift:] + configs[:shift]:
                        kind, what = config
                        path = os.path.join(out_dir, "%s-%s-n%d-rep%d.json" % (kind, what, n, rep))
                        if kind == "zero":
                            metrics = benchlib.run_zero(
                                zero_run, program, n, what, args.steps, path,
                                ["--blas-threads", str(args.blas_threads)], policy)
                        else:
                            metrics = run_torch(
                                pythons[PEERS[what][0]], peer_args(what), n, args.steps,
                                dims, path, policy)
                        entry = results.setdefault((n, config), {"sps": [], "ms": [], "noise": [],
                                                                 "losses": None})
                        entry["noise"].append(metrics["interference"])
                        entry["sps"].append(metrics["samples_per_second"])
                        entry["ms"].append(1000 * benchlib.median(benchlib.timed_seconds(metrics)))
                        entry["losses"] = entry["losses"] or metrics["losses"]
                        entry["batch"] = metrics["global_batch"]
                print("repetition %d/%d, N=%d done (waited %.0f s for the lock)"
                      % (rep + 1, args.repeats, n, waited), file=sys.stderr)

    print("Model: %s %s." % (header[0], header[1].rstrip(".")))
    print("%d steps, the first excluded; median of %d interleaved repetitions; "
          "zero-run %s (sha256 %s) with --blas-threads %d." % (
              args.steps, args.repeats, args.zero_run, digest, args.blas_threads))
    for key in sorted(versions):
        print("Peers by %s: torch %s%s; gloo, 1 thread per process." % (
            pythons[key], versions[key]["torch"],
            ", deepspeed %s" % versions[key]["deepspeed"] if versions[key]["deepspeed"] else ""))
    for peer, why in failed.items():
        print("Peer %s (%s) left out, it cannot run here: %s" % (peer, names[("torch", peer)], why))
    print("Runs during which other processes took over %.0f%% of the CPU were run "
          "again (at most %d times): %d reruns, %d noisy runs kept."
          % (100 * args.noise_threshold, args.max_reruns, policy.reruns, policy.kept_noisy))
    print("Machine: %s\n" % benchlib.machine())

    head = ("N", "system", "global batch", "samples/s", "min-max", "ms/step",
            "vs stage 0", "others' CPU", "loss 1st -> last")
    rows = []
    for n in ranks_list:
        base = benchlib.median(results[(n, ("zero", stages[0]))]["sps"])
        for config in configs:
            e = results[(n, config)]
            sps = benchlib.median(e["sps"])
            rows.append((str(n), names[config], str(e["batch"]), "%.1f" % sps,
                         "%.1f-%.1f" % (min(e["sps"]), max(e["sps"])),
                         "%.1f" % benchlib.median(e["ms"]), "%.3f" % (sps / base),
                         "%.0f%%" % (100 * max(e["noise"])),
                         "%.4f -> %.4f" % (e["losses"][0], e["losses"][-1])))
    print(benchlib.table(head, rows, args.markdown))
    print()

    head = ("N", "ratio", "value", "target")
    rows = []
    for n in ranks_list:
        if 0 in stages:
            for s in (1, 2, 3):
                if s in stages:
                    value, text = ratio_text(("zero", s), ("zero", 0), results, n)
                    target = 0.95 if s in (1, 2) else (0.97 if n == 4 else None)
                    rows.append(ratio_row(n, "stage %d / stage 0" % s, value, text, target))
        for stage, peer, target in PEER_RATIOS:
            if stage in stages and ("torch", peer) in configs:
                value, text = ratio_text(("zero", stage), ("torch", peer), results, n)
                rows.append(ratio_row(n, "stage %d / %s" % (stage, names[("torch", peer)]),
                                      value, text, target))
    if rows:
        print("Ratios of the medians (in brackets the range of the per-repetition ratios):\n")
        print(benchlib.table(head, rows, args.markdown))


def ratio_row(n, what, value, text, target):
    return (str(n), what, text.replace("per repetition ", ""),
            "none" if target is None else ">= %.2f: %s" % (
                target, "met" if value >= target else "MISSED"))


if __name__ == "__main__":
    main()
