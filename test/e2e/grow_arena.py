#!/usr/bin/env python3
"""Edits a lowered zrt program the way a faulty lowering would use more
memory than it planned: the arena in the program's header grows by its own
size, and the first arena view of the chosen pool (the device arena, or the
host arena of an offloaded program) moves past the planned end, while the
compiler's record of its plan (`zrt.planned_arena`, `zrt.planned_host_arena`)
stays as compiled. The program still loads and trains, and gives the same
results: only `zero-run --check-memory`, which measures the bytes the
instructions write, can tell (test/e2e/check-memory.test).

  grow_arena.py IN.mlir OUT.mlir [--pool device|host]
"""

import argparse
import re
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("source")
    parser.add_argument("target")
    parser.add_argument("--pool", choices=["device", "host"], default="device")
    args = parser.parse_args()
    text = open(args.source).read()
    header = re.compile(r" arena (\d+)" if args.pool == "device"
                        else r" host_arena (\d+)")
    found = header.search(text)
    if not found:
        sys.exit(f"grow_arena.py: no {args.pool} arena in {args.source}")
    planned = int(found.group(1))
    text = text[:found.start(1)] + str(2 * planned) + text[found.end(1):]
    suffix = r" in host" if args.pool == "host" else r"(?! in host)"
    view = re.compile(r"zrt\.arena_view \[(\d+)\]" + suffix)
    moved = view.search(text)
    if not moved:
        sys.exit(f"grow_arena.py: no {args.pool} arena view in {args.source}")
    offset = planned + int(moved.group(1))
    text = text[:moved.start(1)] + str(offset) + text[moved.end(1):]
    open(args.target, "w").write(text)
    print(f"grow_arena.py: {args.pool} arena {planned} -> {2 * planned} "
          f"bytes, one view moved to offset {offset}")


if __name__ == "__main__":
    main()
