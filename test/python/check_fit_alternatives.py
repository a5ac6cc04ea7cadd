"""What the report offers when a step does not fit its machine, from
Python (fit-alternatives.test): a GPT-2 with checkpoint marks (8 sequences
a rank, stage 2, 2 ranks) on a machine of 6,000,000 bytes. The compiled
graph's text report plans each setting that moves memory off the device,
recompute=true and a smaller micro-batch with more accumulation among
them, and each is what compiling with that setting predicts: the
accumulation one is the same GPT-2 built at 4 sequences a rank with
gradient_accumulation_steps(2), recompute the same GPT-2 with
activation_checkpointing on.
"""

import json
import os
import re
import sys
import tempfile

import zero

SEQ, BATCH = 64, 8


def compile_gpt(machine, batch=BATCH, accumulate=1, recompute=False):
    graph = zero.Graph("gpt")
    inputs = [graph.input(name, [batch, SEQ], "i32")
              for name in ("tokens", "positions", "targets")]
    model = zero.nn.GPT2(graph, layers=2, vocab=128, seq=SEQ, dim=64,
                         heads=4, checkpoint="full")
    graph.minimize(model.loss(*inputs))
    graph.config.optimizer(zero.AdamW(lr=1e-3)).enable_zero(True, 2)
    graph.config.activation_checkpointing(recompute)
    if accumulate > 1:
        graph.config.gradient_accumulation_steps(accumulate)
    graph.config.zero.machine = machine
    return graph.compile(2)


def offered(text):
    """The report's 'To fit' lines: change -> (peak bytes, step ms)."""
    lines = text[text.index("To fit"):].splitlines()[1:]
    found = {}
    for line in lines:
        match = re.match(r"  (.+?) +peak +([0-9]+) B \((fits|does not fit)\), "
                         r"step ([0-9.]+) ms", line)
        if match:
            found[match.group(1)] = (int(match.group(2)),
                                     float(match.group(4)))
    return found


def direct(compiled):
    prediction = compiled.report["prediction"]
    return (prediction["peak_device_bytes"],
            round(prediction["step_seconds"] * 1e3, 4))


def main():
    with tempfile.TemporaryDirectory() as directory:
        machine = zero.machine("h100-nvlink-8")
        machine.update(name="small", device_memory=6_000_000)
        path = os.path.join(directory, "small.json")
        with open(path, "w") as file:
            json.dump(machine, file)
        alternatives = offered(compile_gpt(path).report_text())
        print("offered: " + "; ".join(alternatives), flush=True)
        for change, run in (
                ("recompute=true", compile_gpt(path, recompute=True)),
                ("accumulate-steps=2 micro-batch=4",
                 compile_gpt(path, batch=BATCH // 2, accumulate=2))):
            if alternatives.get(change) != direct(run):
                sys.exit(f"{change}: offered {alternatives.get(change)}, "
                         f"compiled {direct(run)}")
            print(f"ok: {change}: as compiled: peak {direct(run)[0]} B, "
                  f"step {direct(run)[1]} ms", flush=True)


if __name__ == "__main__":
    main()
