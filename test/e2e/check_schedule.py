#!/usr/bin/env python3
"""Checks learning-rate schedules end to end (test/e2e/schedule.test).

How a step's rate is measured. Every update here has the form
p_t = p_(t-1) - lr(t) * d_t, where d_t can be computed from the optimizer
state the same step leaves behind, with no access to the gradient:

  momentum SGD (no weight decay):  d_t = b_t, the momentum buffer
                                   (b_t = mu * b_(t-1) + g_t)
  Adam (no weight decay):          d_t = (m_t / (1 - beta1^t))
                                         / (sqrt(v_t / (1 - beta2^t)) + eps)

(This needs no second program: a constant-rate program cannot take step t
from the same state to compare with, since a checkpoint resumes only into a
program with the same update kernels and hyper-parameters, schedule
included, and --init restarts at step 1.)

The runs save a checkpoint after every optimizer step; `zero-ckpt
consolidate --optimizer` turns checkpoint t into p_t and its slots (m_t, v_t
or b_t). For each checked step t and each parameter tensor, with
dp = p_(t-1) - p_t computed exactly in double from the two f32 tensors:

* the measured rate sum(dp * d_t) / sum(d_t * d_t) is the closed form lr(t)
  within LR_RTOL (1e-3) relative, and
* every element agrees: |dp_i - lr(t) * d_i| <= 2^-23 * |p_i| +
  ELEMENT_RTOL * |lr(t) * d_i| with ELEMENT_RTOL 1e-4 (|p_i| the larger of
  p_(t-1) and p_t). The first term is the f32 rounding of p - update (at
  most half of it); the second covers the f32 arithmetic of the update,
  mostly beta2 = 0.999 held as an f32 in the kernel, which moves
  1 - beta2^t by up to 1.3e-5 relative at t = 1.

The closed forms are computed here, independently of the project's code,
with t the 1-based optimizer step (W warmup, T total):

  t <= W:       lr * t / W
  W < t < T:    cosine  min_lr + (lr - min_lr) * (1 + cos(pi * p)) / 2
                linear  min_lr + (lr - min_lr) * (1 - p),  p = (t - W) / (T - W)
  t >= T:       min_lr

Checked steps lie inside the warmup, at its end, just after it, early, in the
middle of and late in the decay, at T and after T; a kernel that ignored the
decay, the warmup or the floor, or read another step, fails them.

1. Adam, cosine (inputs/mlp-schedule.mlir: warmup 10, total 30, lr 1e-3,
   min_lr 1e-4), 40 deterministic steps on 2 ranks from one initial state
   (--init, written here): stages 0 and 3 give bitwise equal losses and
   final parameters (each step's rate comes from the runtime's step, which
   every rank shares); the stage-3 run's rates (each rank updates its own
   shard) are the closed form at 11 steps.
2. Momentum SGD (lr 0.1, momentum 0.9), linear (warmup 4, total 12,
   min_lr 0.01), with gradient accumulation (--accumulate 2) at stage 2 on
   2 ranks, 14 steps: the rates are the closed form of the optimizer step,
   not of the micro-step (which would give lr(2t) or lr(2t - 1)), at 10
   steps.
3. Resumed from the step-6 checkpoint of run 2 (--resume, `--steps 14`):
   losses of steps 7-14 and the final parameters are run 2's, bitwise, and
   the resumed run's own checkpoints give the closed-form rates of steps 7
   onwards: the checkpoint restores the step that the schedule reads
   (zero-run's first step is the checkpoint's step + 1).
4. --init from the same state (the step-6 checkpoint consolidated with its
   momentum buffers) does not restore the step: its one step takes lr(1) =
   lr / 4, not lr(7).

  check_schedule.py --src-root SRC --workdir DIR
"""

import argparse
import math
import operator
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_lib  # noqa: E402

LR_RTOL = 1e-3
ELEMENT_RTOL = 1e-4
RANKS = 2

# inputs/mlp-schedule.mlir's optimizer, checked to be in the file.
ADAM_LINE = ("train.optimizer @adam adam lr 1.0e-03 betas(0.9, 0.999) "
             "eps 1.0e-08 schedule cosine warmup 10 total 30 min_lr 1.0e-04")
ADAM = {"kind": "cosine", "lr": 1e-3, "warmup": 10, "total": 30,
        "min_lr": 1e-4, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8}
ADAM_STEPS_RUN = 40
ADAM_CHECKED = [1, 5, 10, 11, 15, 20, 25, 29, 30, 31, 40]

LINEAR_LINE = ("train.optimizer @adam momentum lr 1.0e-01 momentum 0.9 "
               "schedule linear warmup 4 total 12 min_lr 1.0e-02")
LINEAR = {"kind": "linear", "lr": 0.1, "warmup": 4, "total": 12,
          "min_lr": 0.01}
LINEAR_STEPS_RUN = 14
LINEAR_CHECKED = [1, 2, 4, 5, 6, 8, 11, 12, 13, 14]
ACCUMULATE = 2
RESUME_AT = 6

PARAMS = {"fc1.w": [784, 128], "fc1.b": [128], "fc2.w": [128, 10],
          "fc2.b": [10]}


def expected_rate(s, t):
    """The closed form of the schedule `s` at the 1-based step t."""
    lr, warmup, total, floor = s["lr"], s["warmup"], s["total"], s["min_lr"]
    if warmup > 0 and t <= warmup:
        return lr * t / warmup
    if t >= total:
        return floor
    progress = (t - warmup) / (total - warmup)
    if s["kind"] == "cosine":
        return floor + (lr - floor) * (1 + math.cos(math.pi * progress)) / 2
    return floor + (lr - floor) * (1 - progress)


def phase(s, t):
    if t < s["warmup"]:
        return "warmup"
    if t == s["warmup"]:
        return "warmup end"
    if t < s["total"]:
        return "decay"
    return "at total" if t == s["total"] else "after total"


# Relative spacing of f32 values: the f32 rounding of p - update is at most
# F32_EPS * |p| / 2 (and one ulp of p is at most F32_EPS * |p|).
F32_EPS = 2.0 ** -23


def initial_state(path):
    """The common initial parameters: uniform, of about the standard
    deviations of examples/mlp.mlir's initializers."""
    rng = e2e_lib.Lcg(7)
    scales = {"fc1.w": 0.062, "fc1.b": 0.01, "fc2.w": 0.152, "fc2.b": 0.01}
    tensors = {}
    for name, shape in PARAMS.items():
        count = math.prod(shape)
        tensors[name] = e2e_lib.Tensor.from_values(
            "F32", shape,
            [(rng.uniform() * 2 - 1) * scales[name] for _ in range(count)])
    e2e_lib.write_safetensors(path, tensors)
    return path


class States:
    """Consolidated checkpoints (parameters and slots), by path."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.cache = {}
        self.tool = os.path.join(os.path.dirname(e2e_lib.zero_run_path()),
                                 "zero-ckpt")

    def file(self, ckpt_root, step):
        path = os.path.join(ckpt_root, f"step-{step:08d}")
        out = os.path.join(self.workdir, "consolidated",
                           f"{os.path.basename(ckpt_root)}-{step:08d}"
                           ".safetensors")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        if not os.path.exists(out):
            proc = subprocess.run(
                [self.tool, "consolidate", path, "-o", out, "--optimizer"],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                timeout=120)
            if proc.returncode != 0:
                raise e2e_lib.RunError(f"zero-ckpt consolidate {path}: exit "
                                       f"{proc.returncode}\n{proc.stdout}")
        return out

    def load(self, path):
        if path not in self.cache:
            self.cache = {path: {name: tensor.values() for name, tensor in
                                 e2e_lib.read_safetensors(path).items()}}
        return self.cache[path]


def directions(kind, state, t, hyper):
    """{param: d_t} from the slots of the state after step t."""
    out = {}
    for name in PARAMS:
        if kind == "momentum":
            out[name] = state[f"{name}.momentum"]
            continue
        c1 = 1 - hyper["beta1"] ** t
        c2 = math.sqrt(1 - hyper["beta2"] ** t)
        eps = hyper["eps"]
        out[name] = [(m / c1) / (math.sqrt(v) / c2 + eps)
                     for m, v in zip(state[f"{name}.m"], state[f"{name}.v"])]
    return out


def measure(checker, states, label, kind, schedule, t, before_path,
            after_path):
    """Checks the update from the state at `before_path` (p_(t-1)) to the
    one at `after_path` (p_t and its slots) against lr(t)."""
    want = expected_rate(schedule, t)
    before = {name: states.load(before_path)[name] for name in PARAMS}
    after = states.load(after_path)
    worst_rate, worst_element, bad = 0.0, 0.0, []
    for name, d in directions(kind, after, t, schedule).items():
        old, new = before[name], after[name]
        dp = [p0 - p1 for p0, p1 in zip(old, new)]
        norm2 = sum(map(operator.mul, d, d))
        measured = (sum(map(operator.mul, dp, d)) / norm2 if norm2 > 0
                    else math.nan)
        error = abs(measured / want - 1.0)
        worst_rate = max(worst_rate, error) if error == error else math.inf
        checker.check(error <= LR_RTOL,
                      f"{label} step {t}: {name} took rate {measured:.6e}, "
                      f"the closed form is {want:.6e} (relative error "
                      f"{error:.2e} > {LR_RTOL:g})")
        worst = 0.0
        for i, (p0, p1, step, di) in enumerate(zip(old, new, dp, d)):
            update = want * di
            a, b = abs(p0), abs(p1)  # the bound of the docstring
            bound = F32_EPS * (a if a > b else b) + ELEMENT_RTOL * abs(update)
            excess = abs(step - update) / bound if bound > 0 else abs(step)
            if excess > worst:
                worst = excess
                if excess > 1.0 and len(bad) < 3:
                    bad.append(f"{name}[{i}]: p {p0!r} -> {p1!r}, expected a "
                               f"step of {update!r} (d {di!r})")
        worst_element = max(worst_element, worst)
    checker.check(worst_element <= 1.0,
                  f"{label} step {t}: elements off lr(t) * d by more than "
                  f"2^-23 |p| + {ELEMENT_RTOL:g} |lr(t) d|: {bad}")
    checker.note(f"{label} step {t} ({phase(schedule, t)}): lr {want:.6e}, "
                 f"measured within {worst_rate:.1e} in every tensor, every "
                 f"element within {worst_element:.2f} of its tolerance")
    return worst_rate


def fresh(path):
    shutil.rmtree(path, ignore_errors=True)
    return path


def checkpointing(root):
    return ["--checkpoint-dir", root, "--checkpoint-every", 1, "--keep", 0]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--src-root", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    work = args.workdir
    checker = e2e_lib.Checker("schedule")
    states = States(work)
    here = os.path.dirname(os.path.abspath(__file__))
    start = initial_state(os.path.join(work, "start.safetensors"))

    # 1. Adam with warmup and cosine decay: stages 0 and 3, then the rates.
    adam = os.path.join(here, "inputs", "mlp-schedule.mlir")
    with open(adam) as f:
        if ADAM_LINE not in f.read():
            raise SystemExit(f"FAIL: {adam} has no '{ADAM_LINE}': update "
                             "ADAM and ADAM_LINE with it")
    init = ["--init", start]
    adam_ckpt = fresh(os.path.join(work, "adam-ckpt"))
    runs = {0: e2e_lib.train(adam, work, "adam-s0", RANKS, 0, ADAM_STEPS_RUN,
                             extra=init),
            3: e2e_lib.train(adam, work, "adam-s3", RANKS, 3, ADAM_STEPS_RUN,
                             extra=init + checkpointing(adam_ckpt))}
    losses0, losses3 = runs[0][0]["losses"], runs[3][0]["losses"]
    checker.check(len(losses0) == ADAM_STEPS_RUN,
                  f"{len(losses0)} losses at stage 0")
    same = [i + 1 for i, (a, b) in enumerate(zip(losses0, losses3)) if a != b]
    checker.check(not same and len(losses0) == len(losses3),
                  f"stage 0 and 3 losses differ at steps {same[:5]}")
    problems = e2e_lib.bitwise_diff_states(runs[0][1], runs[3][1])
    checker.check(not problems, f"stage 0 and 3 states differ: {problems[:3]}")
    checker.note(f"adam cosine: stages 0 and 3: {len(losses0)} losses and "
                 f"the final parameters bitwise equal (loss {losses0[0]:.6f} "
                 f"-> {losses0[-1]:.6f})")
    for t in ADAM_CHECKED:
        before = start if t == 1 else states.file(adam_ckpt, t - 1)
        measure(checker, states, "adam cosine", "adam", ADAM, t, before,
                states.file(adam_ckpt, t))

    # 2. Momentum SGD with warmup and linear decay, accumulating 2
    #    micro-batches per optimizer step.
    linear = e2e_lib.mlp_program(args.src_root, 32, work, LINEAR_LINE,
                                 "mlp-linear")
    accumulate = ["--accumulate", ACCUMULATE]
    full_ckpt = fresh(os.path.join(work, "linear-ckpt"))
    full = e2e_lib.train(linear, work, "linear", RANKS, 2, LINEAR_STEPS_RUN,
                         extra=init + accumulate + checkpointing(full_ckpt))
    checker.check(full[0]["accumulate_steps"] == ACCUMULATE,
                  f"linear: {full[0]['accumulate_steps']} micro-batches per "
                  f"step, expected {ACCUMULATE}")
    label = f"momentum linear K={ACCUMULATE}"
    for t in LINEAR_CHECKED:
        before = start if t == 1 else states.file(full_ckpt, t - 1)
        measure(checker, states, label, "momentum", LINEAR, t, before,
                states.file(full_ckpt, t))

    # 3. Resumed from the step-6 checkpoint.
    resumed_ckpt = fresh(os.path.join(work, "linear-resumed-ckpt"))
    saved = os.path.join(full_ckpt, f"step-{RESUME_AT:08d}")
    resumed = e2e_lib.train(linear, work, "linear-resumed", RANKS, 2,
                            LINEAR_STEPS_RUN,
                            extra=accumulate + ["--resume", saved]
                            + checkpointing(resumed_ckpt))
    checker.check(resumed[0]["losses"] == full[0]["losses"][RESUME_AT:],
                  f"resumed losses {resumed[0]['losses']} != steps "
                  f"{RESUME_AT + 1}-{LINEAR_STEPS_RUN} of the whole run "
                  f"{full[0]['losses'][RESUME_AT:]}")
    problems = e2e_lib.bitwise_diff_states(resumed[1], full[1])
    checker.check(not problems, f"resumed final state differs: {problems[:3]}")
    checker.note(f"resumed at step {RESUME_AT}: losses of steps "
                 f"{RESUME_AT + 1}-{LINEAR_STEPS_RUN} and the final "
                 "parameters bitwise those of the whole run")
    for t in [t for t in LINEAR_CHECKED if t > RESUME_AT]:
        before = (states.file(full_ckpt, t - 1) if t - 1 == RESUME_AT else
                  states.file(resumed_ckpt, t - 1))
        measure(checker, states, f"resumed {label}", "momentum", LINEAR, t,
                before, states.file(resumed_ckpt, t))

    # 4. --init from the same state restarts the schedule at step 1.
    init_ckpt = fresh(os.path.join(work, "linear-init-ckpt"))
    loaded = states.file(full_ckpt, RESUME_AT)
    e2e_lib.train(linear, work, "linear-init", RANKS, 2, 1,
                  extra=accumulate + ["--init", loaded]
                  + checkpointing(init_ckpt))
    measure(checker, states, f"--init from step {RESUME_AT} {label}",
            "momentum", LINEAR, 1, loaded, states.file(init_ckpt, 1))
    checker.note(f"--init does not restore the step: its first step takes "
                 f"lr(1) = {expected_rate(LINEAR, 1):g}, not lr("
                 f"{RESUME_AT + 1}) = {expected_rate(LINEAR, RESUME_AT + 1):g}")
    if not checker.failures:
        # ~100 MB of checkpoints, kept only to look into a failure.
        for root in (adam_ckpt, full_ckpt, resumed_ckpt, init_ckpt,
                     os.path.join(work, "consolidated")):
            shutil.rmtree(root, ignore_errors=True)
    checker.finish()


if __name__ == "__main__":
    main()
