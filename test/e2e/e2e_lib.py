"""Helpers of the end-to-end tests: run zero-run, read its metrics JSON, read
and write .safetensors and .npz files by hand, and compare results.

Python 3.11 standard library only (no numpy): tensors are kept as
(dtype, shape, raw little-endian bytes) and decoded with `struct` when a
numeric comparison is needed.
"""

import json
import math
import os
import re
import struct
import subprocess
import sys
import time
import zipfile

# ---------------------------------------------------------------------------
# Failure reporting


class CheckFailure(Exception):
    pass


class Checker:
    """Collects every failed check (instead of stopping at the first) and
    prints them all; `finish` exits non-zero when any failed."""

    def __init__(self, name):
        self.name = name
        self.failures = []
        self.passed = 0

    def check(self, ok, message):
        if ok:
            self.passed += 1
        else:
            self.failures.append(message)
            print(f"FAIL: {message}", flush=True)
        return ok

    def note(self, message):
        print(message, flush=True)

    def finish(self):
        if self.failures:
            print(
                f"{self.name}: {len(self.failures)} check(s) FAILED, "
                f"{self.passed} passed",
                flush=True,
            )
            sys.exit(1)
        print(f"{self.name}: all {self.passed} checks passed", flush=True)
        sys.exit(0)


# ---------------------------------------------------------------------------
# Running zero-run


def zero_run_path():
    """zero-run as lit substituted it (ZERO_RUN), else the build's."""
    path = os.environ.get("ZERO_RUN")
    if path:
        return path
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "..", "..", "build", "bin", "zero-run")


class RunError(Exception):
    pass


def zero_run(program, args, timeout=300, env=None):
    """Runs zero-run PROGRAM ARGS; returns (stdout+stderr, seconds). Raises
    RunError, with the command and its output, on a non-zero exit."""
    command = [zero_run_path(), program] + [str(a) for a in args]
    start = time.monotonic()
    try:
        proc = subprocess.run(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            env=env,
            text=True,
        )
    except subprocess.TimeoutExpired as error:
        raise RunError(
            f"timed out after {timeout} s: {' '.join(command)}\n{error.output}"
        )
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        raise RunError(
            f"exit status {proc.returncode}: {' '.join(command)}\n{proc.stdout}"
        )
    return proc.stdout, seconds


def train(program, workdir, tag, ranks, stage, steps, seed=1, extra=()):
    """One deterministic training run; returns (metrics dict, state path).
    It runs with --check-memory (a CUDA backend's device arena is copied
    to the host to be scanned): the metrics then hold the arena bytes the
    instructions really wrote (`written`), and zero-run fails when they
    pass the compiler's plan."""
    metrics = os.path.join(workdir, f"{tag}.json")
    state = os.path.join(workdir, f"{tag}.safetensors")
    for path in (metrics, state):
        if os.path.exists(path):
            os.remove(path)
    args = [
        "-n", ranks, "--stage", stage, "--steps", steps, "--seed", seed,
        "--deterministic", "--quiet", "--metrics-json", metrics,
        "--save-state", state, "--timeout", 60,
    ] + list(extra)
    args.append("--check-memory")
    if program in INIT_FILES:
        args += ["--init", INIT_FILES[program]]
    _, seconds = zero_run(program, args)
    with open(metrics) as f:
        data = json.load(f)
    data["_seconds"] = seconds
    return data, state


def check_same_training(checker, where, reference, run):
    """Checks that `run` ((metrics, state path) of a training run) has the
    losses and final state of `reference`, bitwise; returns whether so."""
    (ref_metrics, ref_state), (metrics, state) = reference, run
    same_losses = metrics["losses"] == ref_metrics["losses"]
    diff = bitwise_diff_states(ref_state, state)
    checker.check(same_losses,
                  f"{where}: losses {metrics['losses']} != baseline "
                  f"{ref_metrics['losses']}")
    checker.check(not diff, f"{where}: final state differs: {diff[:3]}")
    return same_losses and not diff


def train_with_options(program, workdir, tag, ranks, stage, steps, options,
                       run_args=()):
    """A deterministic run compiled with more zero-pipeline `options` (and
    more zero-run `run_args`); returns (metrics dict, state path, the
    lowered program's text)."""
    emitted = os.path.join(workdir, f"{tag}.zrt.mlir")
    extra = ["--emit-program", emitted] + list(run_args)
    if options:
        extra += ["--pipeline-options", options]
    metrics, state = train(program, workdir, tag, ranks, stage, steps,
                           extra=extra)
    with open(emitted) as f:
        return metrics, state, f.read()


# ---------------------------------------------------------------------------
# Tensors

# dtype name (safetensors spelling) -> (struct code, bytes, npy descr)
DTYPES = {
    "F32": ("f", 4, "<f4"),
    "F64": ("d", 8, "<f8"),
    "I32": ("i", 4, "<i4"),
    "I64": ("q", 8, "<i8"),
    "BF16": (None, 2, None),
    "F16": ("e", 2, "<f2"),
}


class Tensor:
    def __init__(self, dtype, shape, data):
        self.dtype = dtype
        self.shape = list(shape)
        self.data = bytes(data)

    def numel(self):
        return math.prod(self.shape)

    def values(self):
        """The elements as Python floats/ints."""
        if self.dtype == "BF16":
            count = len(self.data) // 2
            halves = struct.unpack(f"<{count}H", self.data)
            return [
                struct.unpack("<f", struct.pack("<I", h << 16))[0] for h in halves
            ]
        code, size, _ = DTYPES[self.dtype]
        return list(struct.unpack(f"<{len(self.data) // size}{code}", self.data))

    @staticmethod
    def from_values(dtype, shape, values):
        code, _, _ = DTYPES[dtype]
        return Tensor(dtype, shape, struct.pack(f"<{len(values)}{code}", *values))


def read_safetensors(path):
    """Returns {name: Tensor} of a .safetensors file, parsed by hand."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError(f"{path}: shorter than the 8-byte header length")
    (header_len,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8 : 8 + header_len])
    base = 8 + header_len
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        tensor = Tensor(entry["dtype"], entry["shape"], blob[base + begin : base + end])
        expected = tensor.numel() * DTYPES[tensor.dtype][1]
        if len(tensor.data) != expected:
            raise ValueError(
                f"{path}: tensor '{name}' has {len(tensor.data)} bytes, "
                f"its shape {tensor.shape} needs {expected}"
            )
        tensors[name] = tensor
    return tensors


def write_safetensors(path, tensors):
    """Writes {name: Tensor} as a .safetensors file."""
    header = {}
    offset = 0
    for name in sorted(tensors):
        tensor = tensors[name]
        header[name] = {
            "dtype": tensor.dtype,
            "shape": tensor.shape,
            "data_offsets": [offset, offset + len(tensor.data)],
        }
        offset += len(tensor.data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # align the data as the reference does
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name in sorted(tensors):
            f.write(tensors[name].data)


def npy_bytes(tensor):
    """One array in the .npy v1.0 format (header bytes written by hand)."""
    descr = DTYPES[tensor.dtype][2]
    shape = "(" + "".join(f"{d}, " for d in tensor.shape).rstrip(" ")
    if len(tensor.shape) > 1:
        shape = shape.rstrip(",")
    shape += ")"
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}"
    # magic (6) + version (2) + length (2) + header + '\n', padded to 64.
    total = 10 + len(header) + 1
    header += " " * (-total % 64) + "\n"
    return (
        b"\x93NUMPY\x01\x00"
        + struct.pack("<H", len(header))
        + header.encode("latin1")
        + tensor.data
    )


def write_npz(path, arrays):
    """Writes {name: Tensor} as an .npz (a zip of NAME.npy members)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for name, tensor in arrays.items():
            z.writestr(name + ".npy", npy_bytes(tensor))


class Lcg:
    """A small deterministic generator for test data (no numpy, no
    `random` module state shared with anything else)."""

    def __init__(self, seed):
        self.state = (seed * 6364136223846793005 + 1442695040888963407) % 2**64

    def next(self):
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) % 2**64
        return self.state >> 33

    def uniform(self):
        return self.next() / 2**31

    def below(self, bound):
        return self.next() % bound


# ---------------------------------------------------------------------------
# Models


MLP_ADAM = "train.optimizer @adam adam lr 1.0e-03 betas(0.9, 0.999) eps 1.0e-08"
# Momentum SGD is linear in the gradient, unlike Adam, whose update does not
# change when every gradient is scaled: with it, a gradient averaged over
# the wrong number of ranks shows in the parameters.
MLP_MOMENTUM = "train.optimizer @adam momentum lr 1.0e-01 momentum 0.9"


def mlp_program(src_root, batch, workdir, optimizer=None, name="mlp"):
    """examples/mlp.mlir with its batch of 32 rewritten to `batch` (and its
    optimizer declaration replaced by `optimizer`, when given).

    Only the step function's tensor types whose leading dimension is the
    batch change: `tensor<32x784xf32>`, `tensor<32x128xf32>`,
    `tensor<32x10xf32>` and `tensor<32xi32>`. The parameter declarations
    (784x128, 128, 128x10, 10) are left alone, and the number of rewrites is
    checked so that an edit of the example cannot silently break this."""
    source_path = os.path.join(src_root, "examples", "mlp.mlir")
    with open(source_path) as f:
        text = f.read()
    if batch == 32 and optimizer is None:
        return source_path
    head, sep, body = text.partition("func.func @step")
    if not sep:
        raise ValueError(f"{source_path}: no func.func @step")
    pattern = re.compile(r"tensor<32x(784xf32|128xf32|10xf32|i32)>")
    body, count = pattern.subn(lambda m: f"tensor<{batch}x{m.group(1)}>", body)
    if batch != 32 and "tensor<32x" in body:
        raise ValueError(f"{source_path}: a batch-32 type was not rewritten")
    if count < 10:
        raise ValueError(
            f"{source_path}: only {count} batch-32 types rewritten; "
            "the example changed, update mlp_program"
        )
    if optimizer is not None:
        if head.count(MLP_ADAM) != 1:
            raise ValueError(f"{source_path}: no '{MLP_ADAM}' to replace")
        head = head.replace(MLP_ADAM, optimizer)
    path = os.path.join(workdir, f"{name}-b{batch}.mlir")
    with open(path, "w") as f:
        f.write(head + sep + body)
    return path


def mlp_momentum_program(src_root, batch, workdir):
    return mlp_program(src_root, batch, workdir, MLP_MOMENTUM, "mlp-momentum")


# The GPT-2-shaped model of the e2e tests: small enough for well under a
# second per step with 4 ranks on 2 cores. The vocabulary (100) differs from
# the sequence length (12) so that the synthetic data generator tells the
# token ids from the position ids (it takes an embedding input whose id
# bound equals its last dimension for positions). At N = 3 the sharded state
# is padded (reduce-scatter bytes 116412 for 116224 bytes of gradients); the
# MLP's is padded at N = 3 and N = 4.
GPT2_ARGS = ["--layers", "2", "--vocab", "100", "--seq", "12", "--dim", "32",
             "--heads", "4"]
GPT2_LOCAL_BATCH = 2


def gpt2_program(src_root, batch, workdir, extra=(), name="gpt2"):
    path = os.path.join(workdir, f"{name}-b{batch}.mlir")
    subprocess.run(
        [sys.executable, os.path.join(src_root, "examples", "gen_gpt2.py")]
        + GPT2_ARGS
        + list(extra)
        + ["--batch", str(batch), "-o", path],
        check=True,
    )
    return path


# The same model in bf16 with the position embedding frozen: 16-bit
# parameters with fp32 master copies (the `masters` of the report), and a
# frozen parameter (no gradient, no slots, no master).
GPT2_BF16_ARGS = ["--dtype", "bf16", "--frozen", "wpe"]


def gpt2_bf16_program(src_root, batch, workdir):
    return gpt2_program(src_root, batch, workdir, GPT2_BF16_ARGS, "gpt2-bf16")


# Where a program's initial state comes from when not from the seed: the
# module's weights for an imported one (zero-run --init).
INIT_FILES = {}


def llama_import_program(src_root, batch, workdir):
    """test/torch/tiny_llama.py imported with python3 -m zero.import_torch
    (needs torch and transformers: test/torch)."""
    path = os.path.join(workdir, f"llama-import-b{batch}.mlir")
    init = os.path.join(workdir, "llama-import.safetensors")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(src_root, "test", "torch")]
        + [p for p in [env.get("PYTHONPATH")] if p])
    subprocess.run(
        [sys.executable, "-m", "zero.import_torch", "tiny_llama:make_model",
         "--example-shape", f"{batch}x16", "-o", path, "--init", init],
        check=True, env=env, stdout=subprocess.DEVNULL)
    INIT_FILES[path] = init
    return path


MODELS = {
    "llama-import": (llama_import_program, 2),
    "mlp": (mlp_program, 32),
    "mlp-momentum": (mlp_momentum_program, 32),
    "gpt2": (gpt2_program, GPT2_LOCAL_BATCH),
    "gpt2-bf16": (gpt2_bf16_program, GPT2_LOCAL_BATCH),
}


def model_program(model, src_root, ranks, workdir):
    """(program with the local batch, program with the global batch)."""
    make, local = MODELS[model]
    return make(src_root, local, workdir), make(src_root, local * ranks, workdir)


# ---------------------------------------------------------------------------
# Comparisons


def bitwise_diff_states(a_path, b_path):
    """Lists how two saved states differ bitwise (empty when identical)."""
    a = read_safetensors(a_path)
    b = read_safetensors(b_path)
    problems = []
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            problems.append(f"tensor '{name}' only in {a_path if name in a else b_path}")
            continue
        ta, tb = a[name], b[name]
        if ta.dtype != tb.dtype or ta.shape != tb.shape:
            problems.append(
                f"tensor '{name}': {ta.dtype}{ta.shape} vs {tb.dtype}{tb.shape}"
            )
            continue
        if ta.data != tb.data:
            va, vb = ta.values(), tb.values()
            size = DTYPES[ta.dtype][1]
            diffs = [i for i in range(ta.numel())
                     if ta.data[i * size:(i + 1) * size] != tb.data[i * size:(i + 1) * size]]
            first = diffs[0] if diffs else 0
            problems.append(
                f"tensor '{name}': {len(diffs)} of {len(va)} elements differ, "
                f"first at flat index {first}: {va[first]!r} vs {vb[first]!r}"
            )
    return problems


TINY = 1e-30


def tensor_errors(a_values, b_values):
    """(relative L2, relative max, index of the largest difference):

    relative L2  = ||a - b||_2 / max(||b||_2, TINY)
    relative max = max_i |a_i - b_i| / max(max_i |b_i|, TINY)

    The parameter comparison against a one-rank run fails on the relative
    L2. Why not the max norm: Adam's update m / (sqrt(v) + eps) is
    scale-free per element, so an element whose gradient is a sum that
    (nearly) cancels, where rounding decides its sign and size, moves by a
    rounding-dependent fraction of lr each step. Summing the gradient over
    N ranks instead of over one batch reorders those sums, and one or two
    of the MLP's 100352 fc1.w elements then end ~2e-5 apart after 10 steps
    (1e-4 of the tensor's largest element), while all the others agree to
    ~1e-7. The relative L2 weighs such an element by its share of the
    tensor (~2e-6) and still fails on any systematic error (a wrong shard,
    scale or slice of the batch moves every element: errors of order 1).
    Both figures are printed."""
    diff2 = 0.0
    ref2 = 0.0
    worst = 0.0
    worst_index = 0
    scale = 0.0
    for index, (x, y) in enumerate(zip(a_values, b_values)):
        if not (math.isfinite(x) and math.isfinite(y)):
            return math.inf, math.inf, index
        d = abs(x - y)
        diff2 += d * d
        ref2 += y * y
        if d > worst:
            worst, worst_index = d, index
        scale = max(scale, abs(y))
    return (math.sqrt(diff2) / max(math.sqrt(ref2), TINY),
            worst / max(scale, TINY), worst_index)


# Tensors whose gradient is zero in exact arithmetic, so that their values
# are rounding noise amplified by Adam (whose update is scale-free): the
# attention key bias adds q_i . b to every score of query i alike, and the
# softmax over the keys does not change. Compared with another run's noise
# their relative error is of order 1 whatever the runtime does, so they are
# checked to have stayed at noise level instead (|x| <= NOISE_BOUND in both
# runs; they hold ~1e-6 after 10 steps at lr 3e-4).
NOISE_ONLY = re.compile(r"h[0-9]+\.attn\.k\.b(\.master)?")
NOISE_BOUND = 1e-4


def close_states(a_path, b_path, tolerance):
    """(problems, worst relative L2, worst relative max) of two saved states
    compared per tensor (see tensor_errors), except the NOISE_ONLY ones."""
    a = read_safetensors(a_path)
    b = read_safetensors(b_path)
    problems = []
    worst_l2 = 0.0
    worst_max = 0.0
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            problems.append(f"tensor '{name}' only in {a_path if name in a else b_path}")
            continue
        ta, tb = a[name], b[name]
        if ta.dtype != tb.dtype or ta.shape != tb.shape:
            problems.append(
                f"tensor '{name}': {ta.dtype}{ta.shape} vs {tb.dtype}{tb.shape}"
            )
            continue
        va, vb = ta.values(), tb.values()
        if NOISE_ONLY.fullmatch(name):
            largest = max(max(map(abs, va)), max(map(abs, vb)))
            if not largest <= NOISE_BOUND:
                problems.append(
                    f"tensor '{name}' has a zero gradient in exact arithmetic "
                    f"but holds {largest:.3e} > {NOISE_BOUND:g}"
                )
            continue
        l2, largest, index = tensor_errors(va, vb)
        worst_l2 = max(worst_l2, l2)
        worst_max = max(worst_max, largest)
        if not l2 <= tolerance:
            problems.append(
                f"tensor '{name}': ||a-b||/||b|| = {l2:.3e} > {tolerance:g} "
                f"(max|a-b|/max|b| = {largest:.3e}, largest difference at flat "
                f"index {index}: {va[index]!r} vs {vb[index]!r})"
            )
    return problems, worst_l2, worst_max


PARAM_DECL = re.compile(
    r"^\s*train\.param @([\w.]+) (param|frozen) : tensor<((?:\d+x)*)(f32|bf16|f16)>",
    re.M)


def declared_params(program):
    """{name: (safetensors dtype, shape)} of what --save-state must write
    for a training step: every train.param, and for every trainable 16-bit
    one its fp32 master copy NAME.master."""
    with open(program) as f:
        text = f.read()
    dtypes = {"f32": "F32", "bf16": "BF16", "f16": "F16"}
    params = {}
    for m in PARAM_DECL.finditer(text):
        name, role, dims, dtype = m.groups()
        shape = [int(d) for d in dims.split("x") if d]
        params[name] = (dtypes[dtype], shape)
        if role == "param" and dtype != "f32":
            params[name + ".master"] = ("F32", shape)
    return params


def check_saved_params(program, state_path):
    """Problems of a saved state against the program's declarations."""
    want = declared_params(program)
    got = read_safetensors(state_path)
    problems = []
    if not want:
        problems.append(f"{program}: no train.param declarations found")
    for name in sorted(set(want) | set(got)):
        if name not in got:
            problems.append(f"{state_path} has no tensor '{name}'")
        elif name not in want:
            problems.append(f"{state_path} has tensor '{name}' that {program} does not declare")
        elif (got[name].dtype, got[name].shape) != want[name]:
            problems.append(f"{state_path}: '{name}' is {got[name].dtype}{got[name].shape}, "
                            f"declared {want[name][0]}{want[name][1]}")
    return problems


def relative_error(a, b):
    return abs(a - b) / max(abs(b), TINY)
