#!/usr/bin/env python3
"""Checks zero-report's model-state figure against the ZeRO formula.

For each model (the MLP example and GPT-2-shaped steps from
examples/gen_gpt2.py), each ZeRO stage 0-3 and each group size N, runs

  zero-opt MODEL --pass-pipeline="builtin.module(zero-pipeline{stage=K
      ranks=N reduce-bucket-bytes=0 allgather-bucket-bytes=0 report=json
      report-output=FILE})"

and compares the report with the formula of the ZeRO paper, computed here
from the `train.param`, `train.optimizer` and `train.apply_gradient` lines of
the input model, independently of the compiler:

  Ψ   trainable elements (role `param`);
  P   bytes per parameter element, from the declared element type;
  G   bytes per gradient element: the parameter's type; with gradient
      accumulation (accumulate-steps > 1) the persistent accumulator, which
      is f32 for a 16-bit parameter;
  K   optimizer bytes per element: 4 per fp32 slot (two for Adam and AdamW,
      one for momentum SGD, none for SGD), plus 4 for the fp32 master copy of
      a 16-bit parameter (so K = 8 for f32 Adam, 12 for bf16 Adam);
  F   bytes of frozen parameters, which are stored like parameters but have
      no gradient or optimizer state.

  stage 0: (P+G+K)Ψ + F        stage 2: PΨ + (G+K)Ψ/N + F
  stage 1: (P+G)Ψ + KΨ/N + F   stage 3: ((P+G+K)Ψ + F)/N

(each term is summed per tensor, so a mix of element types is exact).

Checked per case, each within 1e-6 relative:
  * per_rank.model_state.bytes - per_rank.model_state.padding_bytes equals
    the formula;
  * the report's own formula.model_state_bytes equals the formula;
  * the padding is non-negative and below one element per rank of every
    tensor of the model state (below N elements per tensor over all ranks),
    and equals the padding of ceil-divided flat shards of the tensors that
    the stage shards (optimizer state from stage 1, gradients from stage 2,
    parameters from stage 3).

Bucketing is disabled: a bucket being filled legitimately holds full-size
gradients, which the formula does not count.

Prints one line per case and a summary; exits 1 on any mismatch.
"""

import argparse
import json
import math
import os
import re
import shlex
import subprocess
import sys
import tempfile

RTOL = 1e-6
STAGES = (0, 1, 2, 3)
RANKS = (1, 2, 3, 4, 8)
SLOTS = {"sgd": 0, "momentum": 1, "adam": 2, "adamw": 2}

PARAM_RE = re.compile(
    r"^\s*train\.param\s+@(\S+)\s+(\w+)\s+(?:of\s+@\S+\s+)?:\s*tensor<([^>]*)>")
OPTIMIZER_RE = re.compile(r"^\s*train\.optimizer\s+@(\S+)\s+(\w+)\b")
APPLY_RE = re.compile(r"train\.apply_gradient\s+%\S+\s+to\s+@(\S+)\s+with\s+@(\S+)")


def element_bytes(name):
    match = re.fullmatch(r"[fi](\d+)|bf16", name)
    if not match:
        raise ValueError(f"unknown element type {name!r}")
    bits = 16 if name == "bf16" else int(match.group(1))
    return (bits + 7) // 8


def parse_tensor(text):
    """'784x128xf32' -> (elements, bytes per element)."""
    parts = text.split("x")
    elements = math.prod(int(d) for d in parts[:-1])
    return elements, element_bytes(parts[-1])


class Model:
    """What the formula needs, read from the source of a training step."""

    def __init__(self, name, text):
        self.name = name
        self.trainable = []  # (name, elements, bytes per element)
        self.frozen = []
        optimizers = {}
        applied = {}
        for line in text.splitlines():
            if line.lstrip().startswith("//"):
                continue
            if match := PARAM_RE.match(line):
                symbol, role, tensor = match.groups()
                entry = (symbol,) + parse_tensor(tensor)
                if role == "param":
                    self.trainable.append(entry)
                elif role == "frozen":
                    self.frozen.append(entry)
                else:
                    raise ValueError(f"{name}: input declares {role} state @{symbol}")
            elif match := OPTIMIZER_RE.match(line):
                optimizers[match.group(1)] = match.group(2)
            elif match := APPLY_RE.search(line):
                applied[match.group(1)] = match.group(2)
        if not self.trainable:
            raise ValueError(f"{name}: no trainable parameter")
        self.slots = {}
        for symbol, _, _ in self.trainable:
            if symbol not in applied:
                raise ValueError(f"{name}: @{symbol} gets no apply_gradient")
            self.slots[symbol] = SLOTS[optimizers[applied[symbol]]]

    def optimizer_bytes_per_element(self, symbol, eb):
        return 4 * self.slots[symbol] + (4 if eb < 4 else 0)

    @property
    def psi(self):
        return sum(n for _, n, _ in self.trainable)

    @staticmethod
    def gradient_bytes(eb, accumulate):
        return 4 if accumulate > 1 else eb

    def formula(self, stage, n, accumulate=1):
        p = sum(e * eb for _, e, eb in self.trainable)
        g = sum(e * self.gradient_bytes(eb, accumulate)
                for _, e, eb in self.trainable)
        k = sum(e * self.optimizer_bytes_per_element(s, eb)
                for s, e, eb in self.trainable)
        f = sum(e * eb for _, e, eb in self.frozen)
        return {
            0: p + g + k + f,
            1: p + g + k / n + f,
            2: p + (g + k) / n + f,
            3: (p + g + k + f) / n,
        }[stage]

    def tensors(self, stage, accumulate=1):
        """(elements, bytes per element, sharded) of every model-state tensor."""
        result = []
        for symbol, e, eb in self.trainable:
            result.append((e, eb, stage >= 3))  # parameter
            result.append((e, self.gradient_bytes(eb, accumulate),
                           stage >= 2))  # gradient
            for _ in range(self.slots[symbol]):
                result.append((e, 4, stage >= 1))  # fp32 slot
            if eb < 4:
                result.append((e, 4, stage >= 1))  # fp32 master copy
        for _, e, eb in self.frozen:
            result.append((e, eb, stage >= 3))
        return result

    def padding(self, stage, n, accumulate=1):
        return sum((-(-e // n) - e / n) * eb
                   for e, eb, sharded in self.tensors(stage, accumulate)
                   if sharded)

    def padding_bound(self, stage, accumulate=1):
        return sum(eb for _, eb, _ in self.tensors(stage, accumulate))


def close(a, b):
    return abs(a - b) <= RTOL * max(abs(a), abs(b), 1.0)


def run_case(zero_opt, model, path, stage, n, accumulate, work):
    report_path = os.path.join(work, "report.json")
    if os.path.exists(report_path):
        os.remove(report_path)
    options = (f"stage={stage} ranks={n} accumulate-steps={accumulate} "
               f"reduce-bucket-bytes=0 allgather-bucket-bytes=0 "
               f"report=json report-output={report_path}")
    pipeline = f"builtin.module(zero-pipeline{{{options}}})"
    proc = subprocess.run(shlex.split(zero_opt) +
                          [path, f"--pass-pipeline={pipeline}", "-o", os.devnull],
                          capture_output=True, text=True)
    label = f"{model.name} stage={stage} N={n} accumulate-steps={accumulate}"
    if proc.returncode != 0:
        return [f"{label}: zero-opt failed ({proc.returncode}): "
                f"{proc.stderr.strip()[:2000]}"], label
    with open(report_path) as f:
        report = json.load(f)

    errors = []
    expected = model.formula(stage, n, accumulate)
    state = report["per_rank"]["model_state"]
    unpadded = state["bytes"] - state["padding_bytes"]
    if report["stage"] != stage or report["ranks"] != n:
        errors.append(f"report is for stage {report['stage']}, "
                      f"{report['ranks']} rank(s)")
    if report["formula"]["trainable_elements"] != model.psi:
        errors.append(f"report says Ψ = {report['formula']['trainable_elements']}, "
                      f"the model has {model.psi}")
    if not close(unpadded, expected):
        errors.append(f"model state {state['bytes']} B - padding "
                      f"{state['padding_bytes']} B = {unpadded} B, "
                      f"formula {expected} B (off by {unpadded - expected} B)")
    if not close(report["formula"]["model_state_bytes"], expected):
        errors.append(f"report's formula {report['formula']['model_state_bytes']} B,"
                      f" expected {expected} B")
    bound = model.padding_bound(stage, accumulate)
    if not 0 <= state["padding_bytes"] < bound:
        errors.append(f"padding {state['padding_bytes']} B outside [0, {bound}) B")
    padding = model.padding(stage, n, accumulate)
    if not close(state["padding_bytes"], padding):
        errors.append(f"padding {state['padding_bytes']} B, flat shards give "
                      f"{padding} B")
    if not errors:
        return [], (f"{label}: model state {state['bytes']} B with "
                    f"{state['padding_bytes']:g} B padding, formula "
                    f"{expected:.1f} B: ok")
    return [f"{label}: {e}" for e in errors], label


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zero-opt", required=True,
                        help="the zero-opt command (a stock mlir-opt with "
                        "the plugin's flags, in the plugin suite)")
    parser.add_argument("--examples", required=True,
                        help="the examples directory (mlp.mlir, gen_gpt2.py)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as work:
        models = []  # (Model, path, accumulate-steps values)

        def add(name, path, accumulate=(1,)):
            with open(path) as f:
                models.append((Model(name, f.read()), path, accumulate))

        add("mlp", os.path.join(args.examples, "mlp.mlir"), (1, 2))
        generator = os.path.join(args.examples, "gen_gpt2.py")
        for name, flags, accumulate in [
            ("gpt2", [], (1, 2)),
            ("gpt2-bf16-frozen-wpe", ["--dtype", "bf16", "--frozen", "wpe"], (1, 2)),
            ("gpt2-3-layers", ["--layers", "3"], (1,)),
        ]:
            path = os.path.join(work, name + ".mlir")
            subprocess.run([sys.executable, generator, *flags, "-o", path],
                           check=True)
            add(name, path, accumulate)

        failures = []
        cases = 0
        for model, path, accumulations in models:
            print(f"{model.name}: Ψ = {model.psi}, "
                  f"{len(model.trainable)} trainable and {len(model.frozen)} "
                  f"frozen tensors")
            for accumulate in accumulations:
                for stage in STAGES:
                    for n in RANKS:
                        errors, line = run_case(args.zero_opt, model, path,
                                                stage, n, accumulate, work)
                        cases += 1
                        if errors:
                            failures.extend(errors)
                            for error in errors:
                                print(f"MISMATCH {error}")
                        else:
                            print(line)

    if failures:
        print(f"{len(failures)} mismatch(es) in {cases} cases")
        return 1
    print(f"all {cases} cases match the formula")
    return 0


if __name__ == "__main__":
    sys.exit(main())
