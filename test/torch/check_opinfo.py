"""zero.from_torch op by op against PyTorch's own samples (opinfo.test).

  check_opinfo.py [--max-samples N] [--op NAME]... [--markdown] [-v]
                  [--kinds plain,nan,inf | --nonfinite nan|inf]

For every OpInfo of PyTorch's op_db (torch.testing._internal) whose op is
one of docs/torch.md's "The ops", each of its float32 sample inputs
(`sample_inputs("cpu", torch.float32, requires_grad=True)`) is run through
a one-op module imported with zero.from_torch, and the result is held
against torch autograd:

- the sample's float tensors become the module's parameters (the importer
  trains parameters only), frozen where the sample's tensor needs no
  gradient (cross-entropy's class weights), in the sample's dtype (a
  float64 operand is the importer's to refuse); its integer tensors
  become inputs (embedding ids, cross-entropy targets), any others buffers
  (boolean masks, which the importer takes as constants);
- the module returns the op's result flattened to [1, n] (several results,
  as split's, concatenated) times a probe input of ones: exact, and it
  makes the result a batch-major value computed from an input, which
  `graph.output` requires, so that `Trainer.evaluate(..., outputs=True)`
  gives it back element by element: that is the forward checked (a
  result with no elements, which no input or output may be, is summed to
  [1, 1] instead: zero, with zero gradients);
- the loss is `(out * cotangent).sum()`, the cotangent a random input, so
  that one SGD step with lr=1 (no weight decay, one rank, stage 0) moves
  each parameter by minus its vector-Jacobian product: the gradient
  checked is the parameter before the step minus the parameter after;
- the reference is torch in float64 on the same values (forward, and
  torch.autograd.grad with the same cotangent).

Each sample is counted as
- passed: forward and every parameter's gradient within tolerance;
- refused: zero.torch.UnsupportedModuleError, from from_torch or from the
  compile, evaluate or step (a clean refusal);
- wrong: a result outside tolerance (a silent mismatch: an importer bug);
- errors: any other exception (an unclean failure: also a bug);
- skipped: left out by this harness, not by the importer: samples over
  --max-samples per op (an evenly spaced selection is run; by default
  every sample runs, about 2.5 minutes on 2 cores), and attention samples
  with dropout, whose masks are PyTorch's random draws (dropout.test
  checks dropout against PyTorch's training instead).

With --kinds, each sample runs once per kind (plain: as it is; nan, inf:
as --nonfinite writes them), imported and compiled once (run_sample); each
kind's report is a block of its own, plain's first and unprefixed, the
others' lines led by `KIND: `.

Prints `op NAME: P passed, R refused, W wrong, E errors, S skipped` per
OpInfo (variants as NAME.VARIANT; `; N of the passed with an empty result`
where a sample's result has no element, so that nothing was compared), the
gaps (`opinfo: gaps (no sample passes): ...`: OpInfos no sample of which
passes) and a final `opinfo: total ...` line;
exits 1 if any sample is wrong or errs. --markdown prints the table of
docs/torch.md ("Op by op against PyTorch's samples") instead.
"""

import argparse
import collections
import contextlib
import re
import sys
import time

import numpy as np
import torch

import zero
import zero.torch as zero_torch
from zero.torch import UnsupportedModuleError

# Tolerances, against torch in float64. An element passes if it equals
# torch's own float32 result exactly (inf and nan included: overflow and
# domain errors as PyTorch has them), or if
#   |ours - ref64| <= ATOL + RTOL * |ref64| + 10 * e32 (+ SGD slack)
# where e32 is the largest error of torch's own float32 result over the
# tensor. RTOL is some 80 float32 ulp for the forward (our exp, rsqrt and
# reductions are within 2 ulp where PyTorch's are within 1: docs/torch.md,
# "Accuracy against PyTorch"), and ten times that for the gradient, which
# compounds a few more roundings; ATOL covers results that round to about
# zero. e32 measures the sample's conditioning: a sum or a matrix product
# that cancels loses digits in any float32 order of summation, PyTorch's as
# ours, so an error ten times PyTorch's is still rounding, while a wrong
# result is wrong by about its own size.
FORWARD_RTOL, FORWARD_ATOL = 1e-5, 1e-6
GRAD_RTOL, GRAD_ATOL = 1e-4, 1e-5
TORCH_ERROR_FACTOR = 10.0
# Our gradient is before - after, after = fl(before - grad): the update's
# rounding, up to one float32 ulp of `after` (the difference is taken in
# float64, exactly).
SGD_SLACK = 2.0**-23

DEFAULT_MAX_SAMPLES = 0

# The OpInfos whose op is one of docs/torch.md's "The ops" (OpInfo name,
# variant), and a few more that are one such op by another name
# (nn.functional.linear: addmm; true_divide: div; square: pow 2; chunk:
# split; unflatten, view_as, reshape_as: view; expand_as: expand; mT:
# transpose). div's rounding-mode variants are left out: div with rounding
# is refused by design.
OPS = [
    ("add", ""), ("sub", ""), ("mul", ""), ("div", "no_rounding_mode"),
    ("true_divide", ""), ("pow", ""), ("square", ""), ("neg", ""),
    ("exp", ""), ("log", ""), ("sqrt", ""), ("rsqrt", ""), ("tanh", ""),
    ("nn.functional.relu", ""), ("sigmoid", ""), ("nn.functional.silu", ""),
    ("nn.functional.gelu", ""), ("mm", ""), ("bmm", ""), ("matmul", ""),
    ("addmm", ""), ("addmm", "decomposed"), ("nn.functional.linear", ""),
    ("permute", ""), ("t", ""), ("transpose", ""), ("mT", ""),
    ("expand", ""), ("expand_as", ""), ("reshape", ""), ("reshape_as", ""),
    ("view", ""), ("view_as", ""), ("unsqueeze", ""), ("squeeze", ""),
    ("squeeze", "multiple"), ("flatten", ""), ("unflatten", ""),
    ("nn.functional.layer_norm", ""), ("nn.functional.embedding", ""),
    ("softmax", ""), ("softmax", "with_dtype"), ("mean", ""), ("sum", ""),
    ("narrow", ""), ("slice", ""), ("select", ""), ("__getitem__", ""),
    ("split", ""), ("split", "list_args"),
    ("split_with_sizes", ""), ("chunk", ""), ("cat", ""),
    ("nn.functional.scaled_dot_product_attention", ""),
    ("nn.functional.cross_entropy", ""), ("clone", ""), ("contiguous", ""),
    ("to", ""),
]


def opinfo_name(opinfo):
    return (f"{opinfo.name}.{opinfo.variant_test_name}"
            if opinfo.variant_test_name else opinfo.name)


# -- The sample as a module --------------------------------------------------


class Slot:
    """Where a tensor of the sample goes: a parameter, an input or a
    buffer of the one-op module, by index."""

    def __init__(self, kind, index):
        self.kind, self.index = kind, index


def template(sample):
    """The sample's (input, args, kwargs) with every tensor replaced by a
    Slot, and the tensors by kind: float ones (parameters), integer ones
    (inputs), others (buffers). One tensor used twice is one slot."""
    tensors = {"param": [], "trained": [], "input": [], "buffer": []}
    slots = {}

    def visit(value):
        if isinstance(value, torch.Tensor):
            if id(value) not in slots:
                if value.is_floating_point():
                    kind = "param"
                elif value.dtype in (torch.int32, torch.int64):
                    kind = "input"
                else:
                    kind = "buffer"
                slots[id(value)] = Slot(kind, len(tensors[kind]))
                tensors[kind].append(value.detach())
                if kind == "param":
                    tensors["trained"].append(value.requires_grad)
            return slots[id(value)]
        if isinstance(value, (list, tuple)):
            return type(value)(visit(v) for v in value)
        if isinstance(value, dict):
            return {k: visit(v) for k, v in value.items()}
        return value

    shape = visit((sample.input, list(sample.args), dict(sample.kwargs)))
    return shape, tensors


def fill(shape, params, inputs, buffers):
    """The template with each Slot replaced by its tensor."""
    if isinstance(shape, Slot):
        return {"param": params, "input": inputs,
                "buffer": buffers}[shape.kind][shape.index]
    if isinstance(shape, (list, tuple)):
        return type(shape)(fill(v, params, inputs, buffers) for v in shape)
    if isinstance(shape, dict):
        return {k: fill(v, params, inputs, buffers) for k, v in shape.items()}
    return shape


def results(value):
    """The tensors of an op's result, in order."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in results(v)]
    return []


def flat_result(op, process, call, empty=False):
    """The op's result as one [1, n] tensor (several results
    concatenated); an integer result stays integer. An `empty` result (no
    elements: a graph input or output needs positive extents) becomes its
    sum, [1, 1]: zero, and a zero gradient for every operand."""
    parts = results(process(op(call[0], *call[1], **call[2])))
    if empty:
        return sum(p.sum() for p in parts).reshape(1, 1)
    # Empty parts (split's size-0 pieces) have nothing to compare.
    flats = [p.reshape(1, -1) for p in parts if p.numel()]
    if not flats:
        return torch.zeros(1, 0)
    return flats[0] if len(flats) == 1 else torch.cat(flats, dim=1)


class OneOp(torch.nn.Module):
    """One sample of one op: its float tensors are parameters t0, t1, ...,
    its neither float nor integer ones buffers b0, ...; the forward takes
    the probe (ones [1, n]) and the integer tensors, and returns the
    result times the probe."""

    def __init__(self, opinfo, sample, shape, tensors, empty):
        super().__init__()
        self.op = opinfo.op
        self.empty = empty
        self.process = sample.output_process_fn_grad
        self.shape = shape
        self.count = len(tensors["param"])
        for i, (t, trained) in enumerate(zip(tensors["param"],
                                             tensors["trained"])):
            # In the sample's dtype: a float64 operand (to's `other`) is
            # for the importer to refuse, not for us to round.
            self.register_parameter(f"t{i}", torch.nn.Parameter(
                t.clone(), requires_grad=trained))
        self.buffer_count = len(tensors["buffer"])
        for i, t in enumerate(tensors["buffer"]):
            self.register_buffer(f"b{i}", t.clone())

    def forward(self, probe, *args):
        params = [getattr(self, f"t{i}") for i in range(self.count)]
        buffers = [getattr(self, f"b{i}") for i in range(self.buffer_count)]
        call = fill(self.shape, params, list(args), buffers)
        return flat_result(self.op, self.process, call, self.empty) * probe


def dot_loss(out, cotangent):
    """The loss whose gradient is the vector-Jacobian product."""
    return (out * cotangent).sum()


# -- The reference -----------------------------------------------------------


def reference(opinfo, sample, shape, tensors, cotangent, dtype,
              empty=False):
    """torch's forward ([1, n]) and the gradient of every parameter for
    the cotangent, computing in `dtype`."""
    params = [t.clone().to(dtype).requires_grad_(trained)
              for t, trained in zip(tensors["param"], tensors["trained"])]
    call = fill(shape, params, tensors["input"], tensors["buffer"])
    out = flat_result(opinfo.op, sample.output_process_fn_grad, call, empty)
    trained = [p for p in params if p.requires_grad]
    grads = [None] * len(trained)
    if trained and out.requires_grad:
        grads = torch.autograd.grad((out * cotangent.to(out.dtype)).sum(),
                                    trained, allow_unused=True)
    grads = iter(grads)
    # A frozen operand's gradient is zero: the step leaves it as it is.
    return out.detach(), [
        next(grads) if p.requires_grad else None for p in params
    ]


# The largest error of a passing result, as a fraction of ATOL + RTOL *
# |ref64| (PyTorch's own error not counted), forward and gradient, per
# kind of run: how much of the stated tolerance is used.
WORST = collections.defaultdict(lambda: {"forward": 0.0, "gradient": 0.0})


def mismatch(ours, ref64, ref32, rtol, atol, slack=None, what="forward",
             kind="plain"):
    """None when `ours` is within tolerance of the float64 reference (see
    the tolerances above), else what differs, for the report."""
    ours = np.asarray(ours, dtype=np.float64).reshape(-1)
    ref = ref64.double().numpy().reshape(-1)
    r32 = ref32.double().numpy().reshape(-1)
    if ours.shape != ref.shape:
        return f"{ours.size} values, expected {ref.size}"
    with np.errstate(invalid="ignore", over="ignore"):
        finite = np.isfinite(ref) & np.isfinite(r32)
        e32 = float(np.max(np.abs(r32 - ref)[finite], initial=0.0))
        bound = atol + rtol * np.abs(ref) + TORCH_ERROR_FACTOR * e32
        if slack is not None:
            bound = bound + slack
        # Equal to PyTorch's float32 or float64 result: where the two
        # differ in kind (gelu(inf): NaN in float32, inf in float64),
        # either is PyTorch's.
        same32 = (ours == r32) | (np.isnan(ours) & np.isnan(r32)) | \
            (ours == ref) | (np.isnan(ours) & np.isnan(ref))
        near = np.abs(ours - ref) <= bound
        good = same32 | (near & np.isfinite(ours))
    if good.all():
        with np.errstate(invalid="ignore"):
            used = np.abs(ours - ref) / (atol + rtol * np.abs(ref))
        used = used[np.isfinite(used) & ~same32]
        WORST[kind][what] = max(WORST[kind][what],
                                float(np.max(used, initial=0.0)))
        return None
    bad = np.flatnonzero(~good)
    worst = bad[np.argmax(np.nan_to_num(np.abs(ours - ref)[bad], nan=np.inf,
                                        posinf=np.inf))]
    return (f"{bad.size} of {ref.size} values off; element {worst}: ours "
            f"{float(ours[worst])!r}, float64 {float(ref[worst])!r}, torch "
            f"float32 {float(r32[worst])!r} (bound {bound[worst]:.3g})")


# -- One sample --------------------------------------------------------------


class Recorder(zero_torch.Importer):
    """The importer, kept after the import: the harness reads the Live
    value of the module's result from it, to make it a graph output."""

    last = None

    def run(self):
        Recorder.last = self
        return super().run()


zero_torch.Importer = Recorder


def module_output(importer):
    """The Live value the wrapped module returns: the product with the
    probe, the exported graph's only mul reading the probe input."""
    program = importer.program
    probe = next(node for node in program.graph.nodes
                 if node.op == "placeholder"
                 and node.name in program.graph_signature.user_inputs)
    for node in program.graph.nodes:
        if node.op == "call_function" and probe in node.args and \
                node.target in (torch.ops.aten.mul.Tensor,):
            return importer.values[node]
    raise RuntimeError("the harness found no product with the probe")


def draws_at_random(sample):
    """Attention with dropout_p > 0: PyTorch draws its mask from its own
    generator, so no sample of it can be compared element by element (the
    forward here runs through evaluate, without dropout, as well).
    test/torch/dropout.test holds dropout to PyTorch's training instead."""
    return float(sample.kwargs.get("dropout_p", 0.0) or 0.0) > 0.0


# Where --nonfinite puts its values in a float operand (flat index from the
# element count): a NaN in the middle; +inf first and -inf last.
SPECIAL = {
    "nan": lambda n: [(n // 2, float("nan"))],
    "inf": lambda n: [(0, float("inf"))] + ([(n - 1, -float("inf"))]
                                            if n > 1 else []),
}


def inject(tensors, special):
    """The sample's float operands with `special`'s values written in
    (copies); False when no operand has an element to take them."""
    changed = False
    for i, t in enumerate(tensors["param"]):
        if t.numel() == 0:
            continue
        t = t.clone()
        for index, value in SPECIAL[special](t.numel()):
            t[np.unravel_index(index, t.shape)] = value
        tensors["param"][i] = t
        changed = True
    return changed


def pattern(values):
    """Each element's class: 0 finite, 1 NaN, 2 +inf, 3 -inf."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    return np.select([np.isnan(values), values == np.inf,
                      values == -np.inf], [1, 2, 3], 0)


def nonfinite_mismatch(new, old, g32):
    """None when the parameter after the step has the non-finite elements
    PyTorch's float32 SGD step (old - g) gives, else what differs."""
    expected = (old.float() - g32.float()).numpy().reshape(-1)
    ours, theirs = pattern(new.numpy()), pattern(expected)
    bad = np.flatnonzero(ours != theirs)
    if bad.size == 0:
        return None
    names = ["finite", "nan", "inf", "-inf"]
    first = bad[0]
    return (f"{bad.size} of {ours.size} elements after the step differ in "
            f"kind; element {first}: ours {names[ours[first]]}, torch "
            f"{names[theirs[first]]}")


def reference_backend(special):
    """With non-finite operands, attention's reference is PyTorch's math
    backend: its CPU flash kernel gives a query row with a NaN zeros (the
    NaN hidden), where the math backend, like ours, gives NaN."""
    if not special:
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel
    return sdpa_kernel(SDPBackend.MATH)


def masks_attention(opinfo, sample):
    """Attention with a causal or explicit mask. PyTorch's own backends
    disagree where a non-finite score meets the mask: the math backend adds
    -inf to it (NaN + -inf and inf + -inf are NaN, spread over the row and
    into the masked keys' gradients), its CPU flash kernel skips the masked
    keys but zeroes a query row holding a NaN. We select (train.causal_mask
    and train.key_mask write the fill), as the flash kernels do, and keep a
    NaN row NaN, as the math backend does; so --nonfinite leaves these
    samples out rather than pick one backend per element."""
    if opinfo.name != "nn.functional.scaled_dot_product_attention":
        return False
    # sdpa(query, key, value, attn_mask, dropout_p, is_causal, ...)
    mask = sample.kwargs.get(
        "attn_mask", sample.args[2] if len(sample.args) > 2 else None)
    causal = sample.kwargs.get(
        "is_causal", sample.args[4] if len(sample.args) > 4 else False)
    return mask is not None or bool(causal)


def prepare(opinfo, sample, shape, base, seed, special):
    """One kind's operands, cotangent and references, or the reason it is
    skipped (a string)."""
    tensors = {k: list(v) for k, v in base.items()}
    if special and masks_attention(opinfo, sample):
        return "masked attention (see masks_attention)"
    if special and not inject(tensors, special):
        return "no float operand to carry the values"
    torch.manual_seed(seed)
    with torch.no_grad():
        call = fill(shape, tensors["param"], tensors["input"],
                    tensors["buffer"])
        size = flat_result(opinfo.op, sample.output_process_fn_grad,
                           call).shape
    empty = size.numel() == 0
    cotangent = torch.randn((1, 1) if empty else size)
    with reference_backend(special):
        ref64, grads64 = reference(opinfo, sample, shape, tensors, cotangent,
                                   torch.float64, empty)
        ref32, grads32 = reference(opinfo, sample, shape, tensors, cotangent,
                                   torch.float32, empty)
    return dict(special=special, tensors=tensors, empty=empty,
                cotangent=cotangent, ref64=ref64, ref32=ref32,
                grads64=grads64, grads32=grads32)


def build(opinfo, sample, shape, case):
    """The one-op module of `case`'s operands, imported, compiled for one
    rank and made a trainer: (graph, trainer)."""
    module = OneOp(opinfo, sample, shape, case["tensors"], case["empty"])
    probe = torch.ones(case["cotangent"].shape)
    try:
        graph = zero.from_torch(module, (probe, *case["tensors"]["input"]),
                                loss=dot_loss,
                                example_targets=(case["cotangent"],))
        graph.output("out", module_output(Recorder.last).tensor)
    finally:
        Recorder.last = None
    graph.config.optimizer(zero.SGD(lr=1.0, weight_decay=0.0))
    return graph, graph.trainer(graph.compile(1))


def load_operands(graph, trainer, case):
    """Writes `case`'s float operands into the trainer's parameters, as a
    fresh import of them would hold them (SGD without momentum keeps no
    other state); False where an operand is not a parameter of ours (then
    the case is imported on its own)."""
    state = trainer.state_dict()
    for i, tensor in enumerate(case["tensors"]["param"]):
        name = graph._state_owner.get(f"t{i}")
        if name is None or name not in state:
            return False
        state[name] = np.ascontiguousarray(tensor.numpy())
    trainer.load_state_dict(state)
    return True


def check_case(graph, trainer, case):
    """('passed' | 'wrong', detail) for one trained case. With a
    `special` ('nan' or 'inf'), the float operands carry those values
    (SPECIAL), and what is held is that every non-finite element of the
    result and of the updated parameters is where PyTorch has it, of the
    same kind, the finite ones within tolerance as always."""
    special, tensors = case["special"], case["tensors"]
    probe = torch.ones(case["cotangent"].shape)
    batch = [probe.numpy()] + [t.numpy() for t in tensors["input"]] + \
        [case["cotangent"].numpy()]
    _, outputs = trainer.evaluate(batch, outputs=True)
    trainer.step(batch)
    after = graph.state_dict(trainer)
    kind = special or "plain"
    wrong = mismatch(outputs["out"], case["ref64"], case["ref32"],
                     FORWARD_RTOL, FORWARD_ATOL, kind=kind)
    if wrong:
        return "wrong", f"forward: {wrong}"
    for i, (g64, g32) in enumerate(zip(case["grads64"], case["grads32"])):
        name = f"t{i}"
        old = tensors["param"][i].detach().double()
        new = after[name].double()
        g64 = torch.zeros_like(old) if g64 is None else g64.detach()
        g32 = torch.zeros_like(old) if g32 is None else g32.detach()
        if special:
            wrong = nonfinite_mismatch(new, old, g32)
            if wrong:
                return "wrong", f"{name}: {wrong}"
            # The finite elements' gradients: where the step stays finite.
            keep = torch.isfinite(old) & torch.isfinite(new) & \
                torch.isfinite(g32.double())
            old, new, g64, g32 = (torch.where(keep, t, torch.zeros_like(t))
                                  for t in (old, new, g64.double(),
                                            g32.double()))
        wrong = mismatch((old - new).numpy(), g64, g32, GRAD_RTOL, GRAD_ATOL,
                         SGD_SLACK * np.abs(new.numpy().reshape(-1)),
                         "gradient", kind)
        if wrong:
            return "wrong", f"gradient of {name}: {wrong}"
    # An empty result passes with nothing compared: said, not hidden.
    return "passed", "empty result" if case["empty"] else ""


def run_sample(opinfo, sample, seed, kinds):
    """{kind: ('passed' | 'refused' | 'wrong' | 'error' | 'skipped',
    detail)} for each of `kinds` ('plain', 'nan', 'inf'). The sample is
    imported and compiled once, with the first kind's operands; each later
    kind loads its operands into the same trainer (load_operands), which is
    what a fresh import of them would train: the import does not depend on
    the operands' values, only on their shapes and dtypes."""
    shape, base = template(sample)
    cases = {kind: prepare(opinfo, sample, shape, base, seed,
                           None if kind == "plain" else kind)
             for kind in kinds}
    outcomes = {kind: ("skipped", case) for kind, case in cases.items()
                if isinstance(case, str)}
    graph = trainer = None
    for kind, case in cases.items():
        if kind in outcomes:
            continue
        try:
            if trainer is None or not load_operands(graph, trainer, case):
                graph, trainer = build(opinfo, sample, shape, case)
            outcomes[kind] = check_case(graph, trainer, case)
        except UnsupportedModuleError as error:
            outcomes[kind] = ("refused", str(error))
        except Exception as error:  # an unclean failure: reported as such
            outcomes[kind] = ("error", f"{type(error).__name__}: {error}")
        if trainer is None:
            # Refused (or failed) at the import or the compile: so is
            # every kind, whose import is the same.
            for other in cases:
                outcomes.setdefault(other, outcomes[kind])
            break
    return {kind: outcomes[kind] for kind in kinds}


def describe(value):
    """A sample's arguments, for reports: tensors as dtype[shape]."""
    if isinstance(value, torch.Tensor):
        text = f"{str(value.dtype).replace('torch.', '')}{list(value.shape)}"
        return text if value.is_contiguous() else text + "(noncontiguous)"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(describe(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={describe(v)}"
                               for k, v in value.items()) + "}"
    return repr(value)


def sample_text(sample):
    parts = [describe(sample.input)] + [describe(a) for a in sample.args]
    parts += [f"{k}={describe(v)}" for k, v in sample.kwargs.items()]
    return ", ".join(parts)


# Refusals, grouped under a short reason for the table.
REASONS = [
    (r"has shape \(\); the importer takes parameters of rank",
     "rank-0 float operand"),
    (r"has shape .*positive extents", "empty tensor operand"),
    (r"input \d+ is a scalar", "rank-0 integer operand"),
    (r"has dtype torch\.float64", "float64 result or operand"),
    (r"dtype torch\.(complex|bool|uint8|int8|int16)", "non-float dtype"),
    (r"cast from", "cast to or from an integer type"),
    (r"softmax over dim", "softmax not over the last dim"),
    (r"layer_norm over", "layer_norm over several dims"),
    (r"argument '(\w+)'", None),
    (r"pow with exponent", "pow exponent outside 0.5, -0.5, 1, 2, 3"),
    (r"indexing by \d+ index tensors at once", "several index tensors"),
    (r"indexing by ids computed in the step", "index tensor an input"),
    (r"indexing by a torch\.bool tensor", "boolean-mask index"),
    (r"mask that is neither the constant causal mask",
     "attention mask neither causal nor allowing all"),
    (r"attention with q", "q, k, v with different leading dims"),
    (r"targets that are not integer", "class-probability targets"),
    (r"ATen op '([\w.]+)' has no mapping", None),
    (r"a scalar operand with no tensor beside it", "scalar-only operands"),
    (r"Pending unbacked symbols", "tensor-valued start: torch.export fails"),
    (r"torch\.export could not export", "torch.export fails"),
]


def reason(message):
    for pattern, label in REASONS:
        found = re.search(pattern, message)
        if found:
            if label is not None:
                return label
            if pattern.startswith("argument"):
                return f"`{found.group(1)}` argument"
            return f"`{found.group(1)}` unmapped"
    return message.split(";")[0][:70]


# -- The run -----------------------------------------------------------------


def selected(samples, cap):
    """At most `cap` samples, evenly spaced over the list."""
    if cap <= 0 or len(samples) <= cap:
        return list(range(len(samples)))
    if cap == 1:
        return [0]
    return sorted({round(i * (len(samples) - 1) / (cap - 1))
                   for i in range(cap)})


KINDS = ["plain"] + sorted(SPECIAL)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-samples", type=int,
                        default=DEFAULT_MAX_SAMPLES,
                        help="samples run per OpInfo, evenly spaced (0: all)")
    parser.add_argument("--op", action="append", default=[],
                        help="only this OpInfo (NAME or NAME.VARIANT)")
    parser.add_argument("--markdown", action="store_true",
                        help="print the table of docs/torch.md (one kind)")
    parser.add_argument("--nonfinite", choices=sorted(SPECIAL),
                        help="write NaN ('nan') or +inf and -inf ('inf') "
                        "into each float operand first, and hold where the "
                        "results are non-finite against PyTorch (the same "
                        "as --kinds nan or --kinds inf)")
    parser.add_argument("--kinds", default=None,
                        help="comma-separated kinds of run, each sample "
                        "imported and compiled once for all of them: plain "
                        "(the sample as it is), nan, inf (as --nonfinite); "
                        "default plain")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="a line per sample")
    options = parser.parse_args()
    if options.kinds is not None and options.nonfinite:
        parser.error("--nonfinite and --kinds: give one of them")
    kinds = (options.kinds.split(",") if options.kinds is not None else
             [options.nonfinite or "plain"])
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds or len(set(kinds)) != len(kinds):
        parser.error(f"--kinds takes distinct kinds of {KINDS}, not "
                     f"{options.kinds!r}")
    if options.markdown and len(kinds) != 1:
        parser.error("--markdown prints the table of one kind of run")

    from torch.testing._internal.common_methods_invocations import op_db
    wanted = set(OPS)
    opinfos = [o for o in op_db if (o.name, o.variant_test_name) in wanted]
    found = {(o.name, o.variant_test_name) for o in opinfos}
    missing = sorted(wanted - found)
    if missing:
        print(f"opinfo: not in op_db: {missing}", file=sys.stderr)
        return 2
    order = {key: i for i, key in enumerate(OPS)}
    opinfos.sort(key=lambda o: order[(o.name, o.variant_test_name)])
    if options.op:
        opinfos = [o for o in opinfos if o.name in options.op
                   or opinfo_name(o) in options.op]

    # Each kind's report is printed as one block, plain's first and
    # unprefixed, the others' lines led by the kind ("nan: op add: ..."),
    # so that one run's output is checked kind by kind.
    prefix = {k: "" if k == "plain" or len(kinds) == 1 else f"{k}: "
              for k in kinds}
    start = time.time()
    rows = {k: [] for k in kinds}
    totals = {k: collections.Counter() for k in kinds}
    failures = []
    for opinfo in opinfos:
        name = opinfo_name(opinfo)
        torch.manual_seed(0)
        samples = list(opinfo.sample_inputs("cpu", torch.float32,
                                            requires_grad=True))
        chosen = selected(samples, options.max_samples)
        counts = {k: collections.Counter(skipped=len(samples) - len(chosen))
                  for k in kinds}
        reasons = {k: collections.Counter() for k in kinds}
        for index in chosen:
            sample = samples[index]
            if draws_at_random(sample):
                for k in kinds:
                    counts[k]["skipped"] += 1
                continue
            outcomes = run_sample(opinfo, sample, seed=index, kinds=kinds)
            for kind, (outcome, detail) in outcomes.items():
                counts[kind][outcome] += 1
                if outcome == "passed" and detail == "empty result":
                    counts[kind]["empty"] += 1
                if outcome == "refused":
                    reasons[kind][reason(detail)] += 1
                if outcome in ("wrong", "error"):
                    failures.append(f"{prefix[kind]}{outcome}: {name} sample "
                                    f"{index} ({sample_text(sample)}): "
                                    f"{detail}")
                if options.verbose:
                    print(f"  {prefix[kind]}{name} #{index} {outcome}: "
                          f"{sample_text(sample)}"
                          + (f": {detail}" if detail else ""), flush=True)
        for kind in kinds:
            totals[kind].update(counts[kind])
            rows[kind].append((name, counts[kind], reasons[kind]))
        if len(kinds) == 1 and not options.markdown:
            print(f"op {name}: {line(counts[kinds[0]])}", flush=True)
    elapsed = time.time() - start
    for failure in failures:
        print(failure, flush=True)
    if options.markdown:
        print_markdown(rows[kinds[0]], totals[kinds[0]], options)
    for kind in kinds:
        lead = prefix[kind]
        if len(kinds) > 1:
            for name, counts, _ in rows[kind]:
                print(f"{lead}op {name}: {line(counts)}", flush=True)
        # The gaps: OpInfos of which no sample passes (each refused for
        # the reasons the table gives), so that the op's import is tested
        # by no PyTorch sample at all.
        gaps = [name for name, counts, _ in rows[kind]
                if counts["passed"] == 0]
        print(f"{lead}opinfo: gaps (no sample passes): "
              f"{', '.join(gaps) or 'none'}", flush=True)
        worst = WORST[kind]
        print(f"{lead}opinfo: worst passing error: forward "
              f"{worst['forward']:.2g}, gradient {worst['gradient']:.2g} of "
              "the tolerance", flush=True)
        print(f"{lead}opinfo: total {len(rows[kind])} ops: "
              f"{line(totals[kind])}", flush=True)
    print(f"opinfo: {len(opinfos)} OpInfos, kinds {', '.join(kinds)}, in "
          f"{elapsed:.0f} s", flush=True)
    failed = any(t["wrong"] or t["error"] for t in totals.values())
    return 1 if failed else 0


def line(counts):
    empty = (f"; {counts['empty']} of the passed with an empty result "
             "(nothing compared)" if counts["empty"] else "")
    return (f"{counts['passed']} passed, {counts['refused']} refused, "
            f"{counts['wrong']} wrong, {counts['error']} errors, "
            f"{counts['skipped']} skipped{empty}")


def print_markdown(rows, totals, options):
    print("| OpInfo | passed | refused (why) | wrong | errors | skipped |")
    print("|---|---|---|---|---|---|")
    for name, counts, reasons in rows:
        why = ", ".join(f"{label} {n}" for label, n in reasons.most_common())
        refused = f"{counts['refused']}" + (f" ({why})" if why else "")
        print(f"| `{name}` | {counts['passed']} | {refused} | "
              f"{counts['wrong']} | {counts['error']} | "
              f"{counts['skipped']} |")
    print(f"| total | {totals['passed']} | {totals['refused']} | "
          f"{totals['wrong']} | {totals['error']} | {totals['skipped']} |")


if __name__ == "__main__":
    sys.exit(main())
