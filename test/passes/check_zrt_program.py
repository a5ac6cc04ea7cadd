#!/usr/bin/env python3
"""Checks that a lowered zrt program (zero-lower-to-runtime's output) is safe
to replay, independently of the pass.

Reads the printed program (generic MLIR text from zero-opt) on stdin, runs
its step symbolically over byte ranges, and checks:

  * arena views lie inside their arena (the device arena, or the host arena
    of offloaded work: `in host`) at multiples of `align`, and the device
    arena is at least `zrt.live_bytes`;
  * no use of a transient value's bytes is clobbered: between the first and
    the last instruction that touch an arena value (through any view), no
    other arena value that shares a byte with it is touched;
  * no race between the streams: two instructions on different streams that
    touch a common byte, one of them writing, are ordered by a record / wait
    pair (happens-before, computed with vector clocks over the events);
  * nothing reads arena bytes that the same value has not written first
    (padding that is gathered or filled counts as written);
  * at the end of the step the compute stream has waited for all the work
    of the other streams, so the next replay starts clean.

Prints one summary line, `OK: ...` with counts of instructions by kind,
or `FAIL: ...` for the first violation (exit status 1).
"""

import re
import sys
from collections import Counter, defaultdict

ELEMENT_BYTES = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4,
                 "i16": 2, "i8": 1, "i1": 1}


def memref_bytes(text):
    """Bytes of `memref<2x3xf32>` (or `memref<f32>`)."""
    match = re.fullmatch(r"memref<((?:\d+x)*)(\w+)>", text.strip())
    if not match:
        raise ValueError(f"not a static memref: {text}")
    count = 1
    for dim in match.group(1).split("x")[:-1]:
        count *= int(dim)
    return count, ELEMENT_BYTES[match.group(2)]


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def main():
    text = sys.stdin.read()
    header = re.search(
        r"zrt\.program @\S+ placement .*? arena (\d+)(?: host_arena (\d+))?"
        r" align (\d+)", text)
    if not header:
        fail("no zrt.program")
    arena, align = int(header.group(1)), int(header.group(3))
    host_arena = int(header.group(2) or 0)
    live = re.search(r"zrt\.live_bytes = (\d+)", text)
    if not live:
        fail("no zrt.live_bytes")
    if arena < int(live.group(1)):
        fail(f"arena {arena} below zrt.live_bytes {live.group(1)}")

    # Each step body (the plain step; or the micro-step and the apply step
    # of gradient accumulation) is replayed on its own: a body starts with
    # every stream forked from compute and ends with all of them joined.
    bodies = [m.start() for m in re.finditer(r"zrt\.step(?: \w+)? \{", text)]
    if not bodies:
        fail("no zrt.step")
    total = 0
    streams_seen = set()
    kinds_seen = Counter()
    for at, next_at in zip(bodies, bodies[1:] + [len(text)]):
        count, streams, kinds = check_body(text[at:next_at], arena, align,
                                           host_arena)
        total += count
        streams_seen.update(streams)
        kinds_seen.update(kinds)
    summary = " ".join(f"{kind}={kinds_seen[kind]}" for kind in sorted(kinds_seen))
    print(f"OK: {total} instructions, streams "
          f"{','.join(sorted(streams_seen))}, {summary}")


def check_body(step, arena, align, host_arena):
    """Replays one step body; fails at the first violation, else returns
    its instruction count, streams and instruction kinds."""
    # value -> (memory, first byte, byte count, element bytes); memory is
    # ("arena", root value) or ("buffer", symbol).
    values = {}
    # Instructions: (kind, stream, reads, writes) with reads and writes as
    # lists of values.
    instructions = []
    kinds = Counter()
    for line in step.splitlines()[1:]:
        line = line.strip()
        if not line or line == "}" or line.startswith("//"):
            continue
        if m := re.fullmatch(
                r"(%\S+) = zrt\.arena_view \[(\d+)\]( in host)? : (.*)", line):
            offset = int(m.group(2))
            count, element = memref_bytes(m.group(4))
            kind, size = ("host-arena", host_arena) if m.group(3) else ("arena", arena)
            if offset % align:
                fail(f"{line}: offset not a multiple of {align}")
            if offset + count * element > size:
                fail(f"{line}: past the end of the {size}-byte {kind}")
            values[m.group(1)] = ((kind, m.group(1)), offset, count * element,
                                  element)
            continue
        if m := re.fullmatch(r"(%\S+) = zrt\.buffer_ref (@\S+) : (.*)", line):
            count, element = memref_bytes(m.group(3))
            values[m.group(1)] = (("buffer", m.group(2)), 0, count * element,
                                  element)
            continue
        if m := re.fullmatch(
                r"(%\S+) = zrt\.view (%\S+)\[(\d+)\] : .* to (.*)", line):
            memory, base, _, element = values[m.group(2)]
            count, _ = memref_bytes(m.group(4))
            values[m.group(1)] = (memory, base + int(m.group(3)) * element,
                                  count * element, element)
            continue
        if m := re.fullmatch(r"zrt\.launch \"([^\"]+)\" on (@\S+) (.*)", line):
            ins = re.search(r"ins\(([^:]*):", m.group(3))
            outs = re.search(r"outs\(([^:]*):", m.group(3))
            split = lambda group: [v.strip() for v in group.group(1).split(",")] if group else []
            instructions.append(("launch", m.group(2), split(ins), split(outs)))
            kinds["launch"] += 1
            continue
        if m := re.fullmatch(r"zrt\.copy on (@\S+) (%\S+) to (%\S+) : .*", line):
            instructions.append(("copy", m.group(1), [m.group(2)], [m.group(3)]))
            kinds["copy"] += 1
            continue
        if m := re.fullmatch(
                r"zrt\.(all_reduce|reduce_scatter|all_gather|broadcast|all_to_all)"
                r" .*?on (@\S+) (%\S+) to (%\S+) : .*", line):
            instructions.append((m.group(1), m.group(2), [m.group(3)], [m.group(4)]))
            kinds[m.group(1)] += 1
            continue
        if m := re.fullmatch(r"zrt\.(record|wait) (@\S+) on (@\S+)", line):
            instructions.append((m.group(1), m.group(3), m.group(2), None))
            kinds[m.group(1)] += 1
            continue
        fail(f"unexpected line in the step: {line}")

    # Vector clocks: clock[s][t] is how many instructions of stream t stream
    # s has waited for (its own count for t == s).
    streams = sorted({stream for _, stream, _, _ in instructions})
    clock = {s: Counter() for s in streams}
    events = {}
    # Byte accesses: per memory, list of (first, end, stream, seq, write,
    # value root or symbol, instruction index).
    accesses = defaultdict(list)
    # Program-order interval of each arena value.
    interval = {}
    written = defaultdict(list)  # arena root -> disjoint sorted [first, end)

    def add_range(ranges, first, end):
        merged = []
        for a, b in ranges + [(first, end)]:
            merged.append((a, b))
        merged.sort()
        result = []
        for a, b in merged:
            if result and a <= result[-1][1]:
                result[-1] = (result[-1][0], max(result[-1][1], b))
            else:
                result.append((a, b))
        return result

    def first_unwritten(ranges, first, end):
        """The first byte of [first, end) not in ranges, or None."""
        at = first
        for a, b in ranges:
            if a <= at < b:
                at = b
        return at if at < end else None

    def touch(index, stream, seq, value, write):
        memory, first, size, _ = values[value]
        end = first + size
        if memory[0] in ("arena", "host-arena"):
            root = memory[1]
            begin, _ = interval.get(root, (index, index))
            interval[root] = (begin, index)
            if not write:
                missing = first_unwritten(written[root], first, end)
                if missing is not None:
                    fail(f"instruction {index} reads byte {missing} of "
                         f"{root} (through {value}) before it is written")
            else:
                written[root] = add_range(written[root], first, end)
            key = memory[0]
        else:
            key = memory
        for (a_first, a_end, a_stream, a_seq, a_write, a_value, a_index) in accesses[key]:
            if a_first >= end or first >= a_end or not (write or a_write):
                continue
            if a_stream != stream and clock[stream][a_stream] < a_seq:
                fail(f"race: instruction {a_index} on {a_stream} and "
                     f"{index} on {stream} touch bytes of {a_value} and "
                     f"{value} unordered")
        accesses[key].append((first, end, stream, seq, write, value, index))

    for index, (kind, stream, reads, writes) in enumerate(instructions):
        clock[stream][stream] += 1
        seq = clock[stream][stream]
        if kind == "record":
            events[reads] = Counter(clock[stream])
            continue
        if kind == "wait":
            for s, n in events[reads].items():
                clock[stream][s] = max(clock[stream][s], n)
            continue
        for value in reads:
            touch(index, stream, seq, value, False)
        for value in writes:
            touch(index, stream, seq, value, True)

    # Values of one arena whose program-order lifetimes overlap must not
    # share bytes (values on other streams are covered by the race check).
    roots = sorted(interval)
    for i, a in enumerate(roots):
        for b in roots[i + 1:]:
            (a_begin, a_end), (b_begin, b_end) = interval[a], interval[b]
            if a_begin > b_end or b_begin > a_end:
                continue
            a_memory, a_first, a_size, _ = values[a]
            b_memory, b_first, b_size, _ = values[b]
            if a_memory[0] != b_memory[0]:
                continue
            if a_first < b_first + b_size and b_first < a_first + a_size:
                fail(f"{a} [{a_first}, {a_first + a_size}) live over "
                     f"instructions [{a_begin}, {a_end}] and {b} "
                     f"[{b_first}, {b_first + b_size}) over "
                     f"[{b_begin}, {b_end}] share bytes")

    if "@compute" in clock:
        for s in streams:
            if s != "@compute" and clock["@compute"][s] < clock[s][s]:
                fail(f"the step ends with work on {s} the compute stream "
                     "has not waited for")

    return len(instructions), streams, kinds


if __name__ == "__main__":
    main()
