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

--waste PERCENT edits it instead the way a planner that wastes memory
would, consistently: every device view moves up by a gap per distinct
offset below it (so that no two views come to overlap), the gaps adding up
to PERCENT of the arena, and the header and `zrt.planned_arena` grow by as
much. Held against its own plan the program is fine; held against the
bytes its instructions keep live at once it is not. With --live-bytes the
compiler's own lower bound (`zrt.live_bytes`) grows by as much too, as it
does when the planner's lifetimes are too long: the check derives its
bound from the instructions, so it still fails.

--overlap moves the first device arena view onto the second's offset, the
way a planner with too short a lifetime would let two values live at once
share bytes: the check refuses the program before it runs.
"""

import argparse
import re
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("source")
    parser.add_argument("target")
    parser.add_argument("--pool", choices=["device", "host"], default="device")
    parser.add_argument("--waste", type=float, metavar="PERCENT")
    parser.add_argument("--live-bytes", action="store_true")
    parser.add_argument("--overlap", action="store_true")
    args = parser.parse_args()
    text = open(args.source).read()
    if args.waste is not None:
        waste(text, args.waste, args.live_bytes, args.target)
        return
    if args.overlap:
        overlap(text, args.target)
        return
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


def overlap(text, target):
    view = re.compile(r"zrt\.arena_view \[(\d+)\](?! in host)")
    views = list(view.finditer(text))
    if len(views) < 2:
        sys.exit("grow_arena.py: fewer than two device arena views")
    first, second = views[0], views[1]
    text = (text[:first.start(1)] + second.group(1) + text[first.end(1):])
    open(target, "w").write(text)
    print(f"grow_arena.py: the view at offset {first.group(1)} moved onto "
          f"the one at {second.group(1)}")


def waste(text, percent, live_bytes, target):
    header = re.search(r" arena (\d+)", text)
    planned = re.search(r"zrt\.planned_arena = (\d+)", text)
    if not header or not planned:
        sys.exit("grow_arena.py: no device arena or zrt.planned_arena")
    arena = int(header.group(1))
    view = re.compile(r"zrt\.arena_view \[(\d+)\](?! in host)")
    offsets = sorted({int(m.group(1)) for m in view.finditer(text)})
    if not offsets:
        sys.exit("grow_arena.py: no device arena view")
    gap = -(-int(arena * percent / 100) // len(offsets))
    gap = -(-gap // 64) * 64
    rank = {offset: index for index, offset in enumerate(offsets)}
    text = view.sub(lambda m: "zrt.arena_view [%d]" % (
        int(m.group(1)) + (rank[int(m.group(1))] + 1) * gap), text)
    grown = arena + len(offsets) * gap
    text = re.sub(r" arena \d+", f" arena {grown}", text, count=1)
    text = re.sub(r"zrt\.planned_arena = \d+",
                  f"zrt.planned_arena = {grown}", text, count=1)
    if live_bytes:
        live = re.search(r"zrt\.live_bytes = (\d+)", text)
        if not live:
            sys.exit("grow_arena.py: no zrt.live_bytes")
        stretched = int(live.group(1)) + grown - arena
        text = (text[:live.start(1)] + str(stretched) + text[live.end(1):])
    open(target, "w").write(text)
    print(f"grow_arena.py: device arena {arena} -> {grown} bytes "
          f"({100 * (grown - arena) / arena:.1f} % more), "
          f"{len(offsets)} offsets moved")


if __name__ == "__main__":
    main()
