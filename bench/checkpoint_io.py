#!/usr/bin/env python3
"""Checkpoint I/O of GPT-2 124M with AdamW (fp32: parameters, m and v, about
1.5 GB of state) at ZeRO stage 3 on N = 1, 2, 4 ranks, against the disk's
own sequential bandwidth measured in the same run.

For each N: `gpt2_train --size 124M --steps 1 --checkpoint-dir D` saves
after one step (the time gpt2_train prints covers the collective save: each
rank's copy to host memory, its file written and synced, its CRC-32, the
manifest, the renames); then the files are evicted from the page cache
(posix_fadvise DONTNEED: the load reads the disk, not memory) and
`gpt2_train --resume D --steps 1` loads them (checks, checksums, each rank's
ranges) and trains nothing. The disk's bandwidth, honestly: `dd` copying a
file of random bytes of the checkpoint's size (read into the page cache
first) with oflag=direct conv=fdatasync, so that every byte reaches the
disk and none is a cached page rewritten; then reading it back with
iflag=direct.

Asynchronous saves: `gpt2_train --steps 48 --checkpoint-every 4
--checkpoint-async` at each N (twelve saves), at the disk's speed and paced
with `--checkpoint-write-mibps` so that the N ranks, which share the disk,
write --paced-mibps (512) together: what the steps waited
for each save (the copy to host memory and the commit), the background
write's bandwidth, and the mean time of the steps that started while a
background write was going against the others (how many of each in the
table).

Also: resharding 4 -> 2 (the N = 4 checkpoint loaded on 2 ranks) against a
same-N load on 2 ranks, and the peak resident memory of
`zero-ckpt consolidate` against the model's parameter bytes.

  bench/checkpoint_io.py [--ranks 1,2,4] [--workdir /tmp/zero-ckpt-bench]
                         [--paced-mibps 512] [--no-async] [--build DIR]

--no-async leaves out the asynchronous saves (the longest part); --build
names the build directory whose bin/ is timed (default: build/).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

BIN = os.path.join(benchlib.ROOT, "build", "bin")
MODEL = ["--size", "124M", "--stage", "3", "--seq", "32", "--deterministic",
         "--log-every", "0"]
IO_RE = re.compile(r"(\d+) files?, ([\d.]+) MiB in ([\d.]+) s")


def evict(path):
    """Drops `path`'s (or every file under it) pages from the page cache."""
    paths = [path] if os.path.isfile(path) else [
        os.path.join(root, name) for root, _, names in os.walk(path)
        for name in names]
    for name in paths:
        fd = os.open(name, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def gpt2(ranks, extra):
    command = [os.path.join(BIN, "gpt2_train"), "-n", str(ranks),
               "--batch", str(ranks)] + MODEL + list(extra)
    proc = subprocess.run(command, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{proc.stdout}")
    return proc.stdout


def io_figures(output, verb):
    for line in output.splitlines():
        if line.startswith(verb):
            match = IO_RE.search(line)
            if match:
                mib, seconds = float(match.group(2)), float(match.group(3))
                return mib, seconds
    sys.exit(f"no '{verb}' line with I/O figures in:\n{output}")


def dd_bandwidth(path, mib):
    """Sequential write and read MiB/s of `mib` MiB at `path`, through
    O_DIRECT: the source is random bytes already in the page cache, so
    that dd measures the disk, not /dev/zero or cached pages."""
    count = max(1, int(mib / 8))
    source = path + ".random"
    with open(source, "wb") as f:
        for _ in range(count):
            f.write(os.urandom(8 << 20))
    with open(source, "rb") as f:
        while f.read(8 << 20):
            pass
    start = time.monotonic()
    subprocess.run(["dd", f"if={source}", f"of={path}", "bs=8M",
                    f"count={count}", "oflag=direct", "conv=fdatasync"],
                   check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    write = count * 8 / (time.monotonic() - start)
    evict(path)
    start = time.monotonic()
    subprocess.run(["dd", f"if={path}", "of=/dev/null", "bs=8M",
                    "iflag=direct"], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    read = count * 8 / (time.monotonic() - start)
    os.remove(path)
    os.remove(source)
    return write, read


ASYNC_RE = re.compile(r"in ([\d.]+) s .*in the background; the steps waited "
                      r"([\d.]+) s")
OVERLAP_RE = re.compile(r"asynchronous saves: (\d+) steps during a save at "
                        r"([\d.]+) ms/step, (\d+) steps without at "
                        r"([\d.]+) ms/step")


def async_figures(output, mib):
    """(mean wait per save s, mean background write MiB/s, ms/step during a
    save, ms/step without, steps during, steps without)."""
    saves = [ASYNC_RE.search(line) for line in output.splitlines()
             if line.startswith("saved")]
    saves = [m for m in saves if m]
    overlap = OVERLAP_RE.search(output)
    if not saves or not overlap:
        sys.exit(f"no asynchronous save figures in:\n{output}")
    wait = sum(float(m.group(2)) for m in saves) / len(saves)
    write = sum(mib / float(m.group(1)) for m in saves) / len(saves)
    return (wait, write, float(overlap.group(2)), float(overlap.group(4)),
            int(overlap.group(1)), int(overlap.group(3)))


def peak_rss_mib(command):
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        sys.exit(f"{' '.join(command)} failed")
    return usage.ru_maxrss / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", default="1,2,4")
    parser.add_argument("--workdir", default="/tmp/zero-ckpt-bench")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--paced-mibps", type=float, default=512)
    parser.add_argument("--no-async", action="store_true")
    parser.add_argument("--build", default=os.path.join(benchlib.ROOT, "build"))
    args = parser.parse_args()
    global BIN
    BIN = os.path.join(os.path.abspath(args.build), "bin")
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    rows, loads, async_rows = [], {}, []
    ranks_list = [int(n) for n in args.ranks.split(",")]
    for ranks in ranks_list:
        ckpt = os.path.join(args.workdir, f"n{ranks}")
        saved = gpt2(ranks, ["--steps", "1", "--checkpoint-dir", ckpt])
        save_mib, save_s = io_figures(saved, "saved")
        evict(ckpt)
        loaded = gpt2(ranks, ["--steps", "1", "--resume", ckpt])
        load_mib, load_s = io_figures(loaded, "resumed")
        loads[ranks] = load_s
        write, read = dd_bandwidth(os.path.join(args.workdir, "dd.bin"),
                                   save_mib)
        rows.append([str(ranks), f"{save_mib:.0f}", f"{save_s:.2f}",
                     f"{save_mib / save_s:.0f}", f"{write:.0f}",
                     f"{100 * save_mib / save_s / write:.0f}%",
                     f"{load_s:.2f}", f"{load_mib / load_s:.0f}",
                     f"{read:.0f}", f"{100 * load_mib / load_s / read:.0f}%"])
        for pace in () if args.no_async else (0, args.paced_mibps):
            overlapped = gpt2(ranks, [
                "--steps", "48", "--checkpoint-every", "4",
                "--checkpoint-async",
                "--checkpoint-write-mibps", str(pace / ranks),
                "--checkpoint-dir", os.path.join(args.workdir, f"a{ranks}")])
            shutil.rmtree(os.path.join(args.workdir, f"a{ranks}"))
            wait, bandwidth, during, without, n_during, n_without = \
                async_figures(overlapped, save_mib)
            async_rows.append([str(ranks), f"{pace:.0f}" if pace else "disk",
                               f"{save_s:.2f}", f"{wait:.2f}",
                               f"{bandwidth:.0f}",
                               f"{100 * bandwidth / write:.0f}%",
                               f"{without:.0f} ({n_without})",
                               f"{during:.0f} ({n_during})",
                               f"{during / without:.2f}x"])
    print(benchlib.machine())
    print(benchlib.table(
        ["N", "MiB", "save s", "save MiB/s", "dd write MiB/s", "save/dd",
         "load s", "load MiB/s", "dd read MiB/s", "load/dd"], rows,
        args.markdown))
    if async_rows:
        print(benchlib.table(
            ["N", "pace MiB/s (all ranks)", "sync save s",
             "async: step waits s", "write MiB/s", "write/dd",
             "ms/step without (steps)", "ms/step during (steps)", "ratio"],
            async_rows, args.markdown))
    if 4 in ranks_list and 2 in ranks_list:
        source = os.path.join(args.workdir, "n4")
        evict(source)
        resharded = gpt2(2, ["--steps", "1", "--resume", source])
        _, reshard_s = io_figures(resharded, "resumed")
        print(f"reshard 4 -> 2: {reshard_s:.2f} s, same-N load on 2 ranks "
              f"{loads[2]:.2f} s: {reshard_s / loads[2]:.2f}x")
    source = os.path.join(args.workdir, f"n{ranks_list[-1]}")
    out = os.path.join(args.workdir, "consolidated.safetensors")
    rss = peak_rss_mib([os.path.join(BIN, "zero-ckpt"), "consolidate", source,
                        "-o", out])
    model = os.path.getsize(out) / (1 << 20)
    print(f"zero-ckpt consolidate: peak RSS {rss:.0f} MiB for a "
          f"{model:.0f} MiB model ({100 * rss / model:.0f}% of it)")
    shutil.rmtree(args.workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
