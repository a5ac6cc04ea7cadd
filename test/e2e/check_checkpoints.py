#!/usr/bin/env python3
"""Checks checkpoints end to end (test/e2e/checkpoint*.test).

  check_checkpoints.py resume   --src-root SRC --workdir DIR
  check_checkpoints.py consolidate --src-root SRC --workdir DIR [--reference]
  check_checkpoints.py reshard  --src-root SRC --workdir DIR
  check_checkpoints.py crash    --src-root SRC --workdir DIR [--points T,T]
  check_checkpoints.py corrupt  --src-root SRC --workdir DIR

resume: for each stage 0-3 and N in --ranks, an uninterrupted deterministic
  run of 6 steps, and a run of 3 steps that checkpoints, resumed with
  --steps 6: the losses of steps 4-6 and the final state (--save-state) are
  bitwise equal. The same with f16 and dynamic loss scaling, with the bf16
  GPT-2 (fp32 masters, a frozen parameter) and with gradient accumulation
  (K = 2), and with --checkpoint-async, whose files and manifest are
  byte-identical to a synchronous save's, and paced, whose files are too.
  Then what consolidate checks.
consolidate: `--steps 3` from the step-3 checkpoint runs nothing and saves
  the same state; `zero-ckpt consolidate` equals --save-state, loads with
  `zero-run --init` and, with --reference, with the reference safetensors
  library.
reshard: a checkpoint saved at (N, stage) is loaded at (N', stage') and
  saved again there; `zero-ckpt consolidate --optimizer` of the two gives
  the same tensors, bit for bit (4 -> 2, 2 -> 3, stage 3 -> 1, 1 -> 3, and
  an N = 3 padded stage 2 -> one rank at stage 0).
crash: ZERO_CHECKPOINT_CRASH kills one rank, or the rank that commits, at
  each point of a save; the job ends (never hangs), no partial checkpoint
  is ever loaded, and resuming from the directory continues bitwise like
  the uninterrupted run (from the previous checkpoint, or from the new one
  when it was already published); the same during an asynchronous save,
  half-way through its background write with steps training meanwhile.
full-disk: a save that fills the file system (a small tmpfs; needs root)
  fails on every rank and leaves the previous checkpoint, which resumes.
corrupt: a flipped byte, a truncated file, a missing rank file, an unknown
  format version, another model and another optimizer are each refused by
  `zero-ckpt verify` (where it applies) and by `--resume`, with a message
  naming the file or the tensor, and nothing in the checkpoint changes.
"""

import argparse
import hashlib
import json
import os
import shutil
import filecmp
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_lib as lib  # noqa: E402

STEPS, SAVE_AT = 6, 3


def tool(name):
    return os.path.join(os.path.dirname(lib.zero_run_path()), name)


def run(args, ok=True, env=None):
    """Runs a command; returns (exit status, output)."""
    proc = subprocess.run([str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300,
                          env=env)
    if ok and proc.returncode != 0:
        raise lib.RunError(f"{' '.join(map(str, args))}: exit "
                           f"{proc.returncode}\n{proc.stdout}")
    return proc.returncode, proc.stdout


def zero_run(program, ranks, stage, steps, metrics, state=None, extra=(),
             ok=True, env=None):
    args = [lib.zero_run_path(), program, "-n", ranks, "--stage", stage,
            "--steps", steps, "--deterministic", "--quiet", "--timeout", 30,
            "--metrics-json", metrics] + (["--save-state", state] if state
                                          else []) + list(extra)
    return run(args, ok=ok, env=env)


def losses(path):
    with open(path) as f:
        return json.load(f)["losses"]


def tree_digest(path):
    """A digest of every file under `path`, to show that nothing changed."""
    digest = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(path)):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(root, name)
            digest.update(full.encode())
            with open(full, "rb") as f:
                digest.update(f.read())
    return digest.hexdigest()


def same_tensors(a_path, b_path, only=None):
    """Lists differences between two safetensors files (names in `only`)."""
    a, b = lib.read_safetensors(a_path), lib.read_safetensors(b_path)
    names = sorted(only if only is not None else set(a) | set(b))
    problems = []
    for name in names:
        if name not in a or name not in b:
            problems.append(f"'{name}' only in {'b' if name in b else 'a'}")
        elif (a[name].dtype, a[name].shape, a[name].data) != (
                b[name].dtype, b[name].shape, b[name].data):
            problems.append(f"'{name}' differs")
    return problems


# (program, ranks, stage, extra, save_extra) -> what `interrupted` returned:
# a pair already checked is not trained again.
_interrupted_runs = {}


def interrupted(checker, program, work, tag, ranks, stage, extra=(),
                save_extra=()):
    """The uninterrupted run and the save-and-resume pair; checks them.
    `save_extra` goes to the saving run only."""
    key = (program, ranks, stage, tuple(extra), tuple(save_extra))
    if key not in _interrupted_runs:
        _interrupted_runs[key] = _interrupted(checker, program, work, tag,
                                              ranks, stage, extra, save_extra)
    return _interrupted_runs[key]


def _interrupted(checker, program, work, tag, ranks, stage, extra,
                 save_extra):
    full_m, full_s = f"{work}/{tag}-full.json", f"{work}/{tag}-full.st"
    zero_run(program, ranks, stage, STEPS, full_m, full_s, extra)
    ckpt = f"{work}/{tag}-ckpt"
    shutil.rmtree(ckpt, ignore_errors=True)
    zero_run(program, ranks, stage, SAVE_AT, f"{work}/{tag}-first.json",
             extra=list(extra) + list(save_extra) + [
                 "--checkpoint-dir", ckpt, "--checkpoint-every", 2,
                 "--keep", 1])
    names = sorted(os.listdir(ckpt))
    checker.check(names == ["latest", "step-00000003"],
                  f"{tag}: --keep 1 left {names}")
    res_m, res_s = f"{work}/{tag}-resumed.json", f"{work}/{tag}-resumed.st"
    zero_run(program, ranks, stage, STEPS, res_m, res_s,
             list(extra) + ["--resume", ckpt])
    checker.check(losses(res_m) == losses(full_m)[SAVE_AT:],
                  f"{tag}: resumed losses {losses(res_m)} != "
                  f"{losses(full_m)[SAVE_AT:]}")
    problems = lib.bitwise_diff_states(res_s, full_s)
    checker.check(not problems, f"{tag}: resumed final state differs: "
                  f"{problems[:3]}")
    return full_s, ckpt


def check_resume(checker, args):
    work = args.workdir
    mlp = lib.mlp_program(args.src_root, 32, work)
    for ranks in [int(n) for n in args.ranks.split(",")]:
        for stage in range(4):
            interrupted(checker, mlp, work, f"mlp-n{ranks}-s{stage}", ranks,
                        stage)
        checker.note(f"N={ranks}: resumed runs bitwise equal to uninterrupted "
                     "ones at stages 0-3")

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from check_accumulation import mlp_f16_program  # noqa: E402
    f16 = mlp_f16_program(args.src_root, 32, work)
    interrupted(checker, f16, work, "f16-n2-s2", 2, 2)
    checker.note("f16 with dynamic loss scaling: resumed bitwise")
    bf16 = lib.gpt2_bf16_program(args.src_root, lib.GPT2_LOCAL_BATCH, work)
    interrupted(checker, bf16, work, "bf16-n2-s1", 2, 1)
    checker.note("bf16 GPT-2 (fp32 masters, a frozen parameter): resumed "
                 "bitwise")
    interrupted(checker, mlp, work, "acc-n2-s3", 2, 3, ["--accumulate", 2])
    checker.note("accumulation (K = 2): resumed bitwise")

    # An asynchronous save writes the same bytes as a synchronous one: the
    # copy is taken at the step boundary, whatever the next steps change.
    _, sync_ckpt = interrupted(checker, mlp, work, "sync-n3-s3", 3, 3)
    _, async_ckpt = interrupted(checker, mlp, work, "async-n3-s3", 3, 3,
                                save_extra=["--checkpoint-async"])
    step = "step-00000003"
    names = sorted(os.listdir(os.path.join(sync_ckpt, step)))
    differ = [name for name in names if not filecmp.cmp(
        os.path.join(sync_ckpt, step, name),
        os.path.join(async_ckpt, step, name), shallow=False)]
    checker.check(names == sorted(os.listdir(os.path.join(async_ckpt, step)))
                  and not differ, f"async and sync saves differ: {differ}")
    checker.note("--checkpoint-async: resumed bitwise; its files and "
                 "manifest byte-identical to a synchronous save's")

    # A paced save (--checkpoint-write-mibps) writes the same bytes, in
    # pieces of 64 KiB here, no faster than the rate: each of the two saves
    # of a rank file of B bytes takes at least (B - 64 KiB) / rate longer
    # than at the disk's speed. (With one save, the two runs' start-up
    # times, which differ by tenths of a second under the sanitizers, left
    # too little margin.)
    rate = 0.1
    largest = max(os.path.getsize(os.path.join(sync_ckpt, step, name))
                  for name in names if name.endswith(".safetensors"))
    least = (largest - (64 << 10)) / (rate * (1 << 20))
    seconds = {}
    for pace in (0, rate):
        ckpt = f"{work}/paced-{pace}-ckpt"
        shutil.rmtree(ckpt, ignore_errors=True)
        began = time.monotonic()
        zero_run(mlp, 3, 3, SAVE_AT, f"{work}/paced.json",
                 extra=["--checkpoint-dir", ckpt, "--checkpoint-every", 2,
                        "--checkpoint-async", "--checkpoint-write-mibps",
                        pace])
        seconds[pace] = time.monotonic() - began
    differ = [name for name in names if not filecmp.cmp(
        os.path.join(sync_ckpt, step, name),
        os.path.join(f"{work}/paced-{rate}-ckpt", step, name), shallow=False)]
    checker.check(not differ, f"paced and sync saves differ: {differ}")
    checker.check(seconds[rate] - seconds[0] >= least,
                  f"paced at {rate} MiB/s, two saves of {largest} B took "
                  f"{seconds[rate] - seconds[0]:.2f} s more than unpaced, "
                  f"not {least:.2f}")
    checker.note(f"--checkpoint-write-mibps {rate}: the same bytes, and at "
                 f"least {least:.1f} s more per save of {largest} B")

    check_consolidate(checker, args)


def check_consolidate(checker, args):
    work = args.workdir
    mlp = lib.mlp_program(args.src_root, 32, work)
    # --steps at the checkpoint's step runs nothing; --save-state then writes
    # the loaded state, which consolidate writes too.
    _, ckpt = interrupted(checker, mlp, work, "mlp-n2-s1", 2, 1)
    out, state = f"{work}/none.json", f"{work}/none.st"
    zero_run(mlp, 2, 1, SAVE_AT, out, state, ["--resume", ckpt])
    checker.check(losses(out) == [], "--steps 3 from step 3 trained")
    cons = f"{work}/consolidated.safetensors"
    run([tool("zero-ckpt"), "consolidate", ckpt, "-o", cons])
    problems = same_tensors(cons, state, only=lib.read_safetensors(cons).keys())
    checker.check(not problems, f"consolidate differs from --save-state: "
                  f"{problems[:3]}")
    # Another program takes it with --init.
    zero_run(mlp, 1, 0, 1, f"{work}/init.json", extra=["--init", cons])
    if args.reference:
        import safetensors
        with open(cons, "rb") as f:
            loaded = dict(safetensors.deserialize(f.read()))
        mine = lib.read_safetensors(cons)
        checker.check(
            sorted(loaded) == sorted(mine) and all(
                bytes(loaded[n]["data"]) == mine[n].data and
                list(loaded[n]["shape"]) == mine[n].shape for n in mine),
            "the safetensors library reads other tensors from consolidate's "
            "file")
        checker.note("consolidate's file loads with the safetensors library")
    checker.note("consolidate equals --save-state and loads with --init")


def check_reshard(checker, args):
    work = args.workdir
    mlp = lib.mlp_program(args.src_root, 32, work)
    gpt = lib.gpt2_program(args.src_root, lib.GPT2_LOCAL_BATCH, work,
                           ["--dtype", "bf16"], "gpt2-bf16-all")
    cases = [(mlp, 4, 2, 2, 2), (mlp, 2, 2, 3, 2), (mlp, 2, 3, 2, 1),
             (mlp, 2, 1, 2, 3), (mlp, 3, 2, 1, 0), (gpt, 3, 3, 2, 1)]
    for program, n, s, n2, s2 in cases:
        name = "mlp" if program == mlp else "gpt2-bf16"
        tag = f"{name}-{n}s{s}-to-{n2}s{s2}"
        source, target = f"{work}/{tag}-a", f"{work}/{tag}-b"
        for path in (source, target):
            shutil.rmtree(path, ignore_errors=True)
        zero_run(program, n, s, 2, f"{work}/{tag}-a.json",
                 extra=["--checkpoint-dir", source])
        zero_run(program, n2, s2, 2, f"{work}/{tag}-b.json",
                 extra=["--resume", source, "--checkpoint-dir", target])
        a, b = f"{work}/{tag}-a.st", f"{work}/{tag}-b.st"
        for ckpt, out in ((source, a), (target, b)):
            run([tool("zero-ckpt"), "consolidate", ckpt, "-o", out,
                 "--optimizer"])
        problems = same_tensors(a, b)
        count = len(lib.read_safetensors(a))
        checker.check(not problems, f"{tag}: the state loaded at N={n2} "
                      f"stage {s2} differs from the saved one: {problems[:3]}")
        checker.note(f"{name} N={n} stage {s} -> N={n2} stage {s2}: "
                     f"{count} tensors bitwise equal")


# (point, whether the step-4 checkpoint was published, asynchronous). The
# asynchronous runs save at steps 4 and 6 with the step-4 write in flight
# during steps 5 and 6: async-writing kills a rank half-way through its
# background write, and the step-4 commit happens when the step-6 save
# starts.
CRASH_POINTS = [("before-rank-file:1", False, False),
                ("after-rank-file:0", False, False),
                ("after-rank-file", False, False),
                ("before-publish", False, False), ("before-latest", True, False),
                ("before-retention", True, False),
                ("async-writing:1", False, True), ("async-writing", False, True),
                ("after-rank-file:0", False, True),
                ("before-latest", True, True)]


def check_crash(checker, args):
    work = args.workdir
    mlp = lib.mlp_program(args.src_root, 32, work)
    full_m, full_s = f"{work}/full.json", f"{work}/full.st"
    zero_run(mlp, 2, 2, STEPS, full_m, full_s)
    for point, published, asynchronous in CRASH_POINTS:
        tag = point.replace(":", "-rank") + ("-async" if asynchronous else "")
        if args.points and tag not in args.points.split(","):
            continue
        ckpt = f"{work}/{tag}"
        shutil.rmtree(ckpt, ignore_errors=True)
        mode = ["--checkpoint-async"] if asynchronous else []
        # A good checkpoint at step 2, then a save at step 4 that dies.
        zero_run(mlp, 2, 2, 2, f"{work}/{tag}-a.json",
                 extra=["--checkpoint-dir", ckpt] + mode)
        env = dict(os.environ, ZERO_CHECKPOINT_CRASH=point)
        steps = ["--checkpoint-every", 4] if asynchronous else []
        status, output = zero_run(mlp, 2, 2, 6 if asynchronous else 4,
                                  f"{work}/{tag}-b.json",
                                  extra=["--resume", ckpt, "--checkpoint-dir",
                                         ckpt, "--keep", 1] + mode + steps,
                                  ok=False, env=env)
        checker.check(status != 0 and "ZERO_CHECKPOINT_CRASH" in output,
                      f"{tag}: the save was not killed (exit {status})")
        run([tool("zero-ckpt"), "verify", ckpt])
        _, inspected = run([tool("zero-ckpt"), "inspect", ckpt])
        expected = 4 if published else 2
        checker.check(f"step {expected} (" in inspected,
                      f"{tag}: the checkpoint to resume is not step "
                      f"{expected}:\n{inspected}")
        res_m, res_s = f"{work}/{tag}-c.json", f"{work}/{tag}-c.st"
        zero_run(mlp, 2, 2, STEPS, res_m, res_s,
                 ["--resume", ckpt, "--checkpoint-dir", ckpt])
        checker.check(losses(res_m) == losses(full_m)[expected:],
                      f"{tag}: losses after the crash differ")
        problems = lib.bitwise_diff_states(res_s, full_s)
        checker.check(not problems, f"{tag}: final state differs after the "
                      f"crash: {problems[:3]}")
        leftovers = [n for n in os.listdir(ckpt) if n.endswith(".tmp")]
        checker.check(not leftovers, f"{tag}: {leftovers} survived a save")
        during = " during an asynchronous save" if asynchronous else ""
        checker.note(f"killed at {point}{during}: resumed from step "
                     f"{expected}, bitwise like the uninterrupted run")


def refused(checker, what, command, needle, ckpt):
    before = tree_digest(ckpt)
    status, output = run(command, ok=False)
    checker.check(status == 1 and needle in output,
                  f"{what}: expected exit 1 and '{needle}', got exit "
                  f"{status}:\n{output}")
    checker.check(tree_digest(ckpt) == before, f"{what}: the checkpoint "
                  "changed")
    return output


def check_corrupt(checker, args):
    work = args.workdir
    mlp = lib.mlp_program(args.src_root, 32, work)
    good = f"{work}/good"
    shutil.rmtree(good, ignore_errors=True)
    zero_run(mlp, 2, 2, 2, f"{work}/good.json",
             extra=["--checkpoint-dir", good])
    step = f"{good}/step-00000002"
    rank1 = f"{step}/rank-00001-of-00002.safetensors"

    def resume(ckpt, program=mlp, ranks=2):
        return [lib.zero_run_path(), program, "-n", ranks, "--stage", 2,
                "--steps", 4, "--quiet", "--timeout", 30, "--resume", ckpt]

    def damaged(tag, change):
        path = f"{work}/{tag}"
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(good, path)
        change(f"{path}/step-00000002")
        return path

    def flip(step_dir):
        name = f"{step_dir}/rank-00001-of-00002.safetensors"
        with open(name, "r+b") as f:
            f.seek(os.path.getsize(name) - 100)
            byte = f.read(1)
            f.seek(-1, 1)
            f.write(bytes([byte[0] ^ 0x10]))

    def truncate(step_dir):
        name = f"{step_dir}/rank-00001-of-00002.safetensors"
        with open(name, "r+b") as f:
            f.truncate(os.path.getsize(name) - 8)

    def remove(step_dir):
        os.remove(f"{step_dir}/rank-00000-of-00002.safetensors")

    def version(step_dir):
        path = f"{step_dir}/manifest.json"
        with open(path) as f:
            manifest = json.load(f)
        manifest["format_version"] = 99
        with open(path, "w") as f:
            json.dump(manifest, f)

    for tag, change, needle in [
            ("flipped", flip, "CRC-32"), ("truncated", truncate, "bytes, the manifest says"),
            ("missing", remove, "missing"), ("version", version, "format version 99")]:
        path = damaged(tag, change)
        refused(checker, f"{tag}: verify", [tool("zero-ckpt"), "verify", path],
                needle, path)
        refused(checker, f"{tag}: --resume", resume(path), needle, path)
        checker.note(f"{tag}: refused by verify and --resume")

    # Another model: the GPT-2 model's checkpoint into the MLP.
    gpt = lib.gpt2_program(args.src_root, lib.GPT2_LOCAL_BATCH, work)
    other = f"{work}/gpt2"
    shutil.rmtree(other, ignore_errors=True)
    zero_run(gpt, 2, 2, 1, f"{work}/gpt2.json", extra=["--checkpoint-dir", other])
    output = refused(checker, "another model", resume(other), "another model",
                     other)
    checker.check("tensor 'fc1.b'" in output or "tensor 'h0" in output,
                  f"another model: no tensor named in:\n{output}")
    checker.note("another model's checkpoint: refused, naming tensors")
    # Another optimizer: the same MLP with another learning rate.
    with open(mlp) as f:
        text = f.read()
    faster = f"{work}/mlp-lr2.mlir"
    with open(faster, "w") as f:
        f.write(text.replace("lr 1.0e-03", "lr 2.0e-03"))
    refused(checker, "another optimizer", resume(good, faster),
            "another optimizer", good)
    checker.note("another optimizer: refused")

    rank1_size = os.path.getsize(rank1)
    checker.check(rank1_size > 0, "the good checkpoint lost a file")


def check_full_disk(checker, args):
    """A file system that fills up in the middle of a save: a 1.5 MiB tmpfs
    holding a 1.2 MiB checkpoint of step 2. The save of step 4 fails on
    every rank with the system's message; step 2 stays loadable, and a
    resume from it on a disk with room continues bitwise."""
    work = args.workdir
    mlp = lib.mlp_program(args.src_root, 32, work)
    disk = f"{work}/disk"
    os.makedirs(disk, exist_ok=True)
    run(["mount", "-t", "tmpfs", "-o", "size=1500k", "tmpfs", disk])
    try:
        zero_run(mlp, 2, 2, 2, f"{work}/a.json",
                 extra=["--checkpoint-dir", disk])
        before = tree_digest(f"{disk}/step-00000002")
        status, output = zero_run(mlp, 2, 2, 4, f"{work}/b.json",
                                  extra=["--resume", disk, "--checkpoint-dir",
                                         disk], ok=False)
        checker.check(status == 1 and "No space left on device" in output,
                      f"expected exit 1 and 'No space left on device', got "
                      f"exit {status}:\n{output}")
        checker.check(tree_digest(f"{disk}/step-00000002") == before,
                      "the previous checkpoint changed")
        run([tool("zero-ckpt"), "verify", disk])
        _, inspected = run([tool("zero-ckpt"), "inspect", disk])
        checker.check("step 2 (" in inspected, f"not step 2:\n{inspected}")
        copy = f"{work}/copied"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(disk, copy)
    finally:
        run(["umount", disk], ok=False)
    full_m, full_s = f"{work}/full.json", f"{work}/full.st"
    zero_run(mlp, 2, 2, 4, full_m, full_s)
    res_m, res_s = f"{work}/res.json", f"{work}/res.st"
    zero_run(mlp, 2, 2, 4, res_m, res_s, ["--resume", copy])
    checker.check(losses(res_m) == losses(full_m)[2:] and
                  not lib.bitwise_diff_states(res_s, full_s),
                  "resumed from step 2 after the failed save: not bitwise")
    checker.note("a full disk: the save fails on every rank, step 2 stays "
                 "and resumes bitwise")


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("part", choices=["resume", "consolidate", "reshard",
                                         "crash", "corrupt", "full-disk"])
    parser.add_argument("--ranks", default="1,2,3")
    parser.add_argument("--points", default="",
                        help="crash: only these kill points, by tag "
                        "(after-rank-file-rank0, before-latest-async, ...)")
    parser.add_argument("--reference", action="store_true",
                        help="also read consolidate's file with the "
                             "safetensors library")
    parser.add_argument("--src-root", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    checker = lib.Checker(f"checkpoints {args.part}")
    try:
        {"resume": check_resume, "consolidate": check_consolidate,
         "reshard": check_reshard,
         "crash": check_crash, "corrupt": check_corrupt,
         "full-disk": check_full_disk}[args.part](checker, args)
    except (lib.RunError, subprocess.CalledProcessError, ValueError) as error:
        checker.check(False, str(error))
    checker.finish()


if __name__ == "__main__":
    main()
