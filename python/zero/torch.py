"""Import a PyTorch module through torch.export (docs/torch.md).

    graph = zero.from_torch(model, (ids,))        # a zero.Graph
    graph.config.optimizer(zero.AdamW(lr=1e-3)).enable_zero(True, 3)
    compiled = graph.compile(zero.world_size())
    trainer = graph.trainer(compiled)             # starts from model's weights
    trainer.step([ids, labels])
    model.load_state_dict(graph.state_dict(trainer))

The module is exported with `torch.export`, decomposed to core ATen with
scaled_dot_product_attention kept whole, and each node becomes one or a few
ops of our builder (`zero.Graph`), so that everything a graph can do
(ZeRO stages, precision, offload, accumulation, checkpoints) works on it.
The forward is imported; `train-autodiff` differentiates it. Subgraphs that
depend on no input and no parameter (Hugging Face's causal-mask builder,
position ids, rotary tables) are evaluated once here with torch.
"""

import atexit
import collections.abc
import inspect
import itertools
import os
import tempfile

import numpy as np
import torch

from zero import _torch_values, _zero
from zero._torch_importer import decomposition_table, Importer
from zero._torch_state import ModuleSnapshot
from zero._torch_values import (DTYPES, UnsupportedModuleError, Live,
                                dtype_name)

__all__ = ["TorchGraph", "UnsupportedModuleError", "from_torch"]


class _Wrapper(torch.nn.Module):
    """The user's module, returning one tensor: logits, or the loss."""

    def __init__(self, module, forward_kwargs, loss_fn, num_args,
                 keywords=None):
        super().__init__()
        self.m = module
        self.forward_kwargs = dict(forward_kwargs)
        self.loss_fn = loss_fn
        self.num_args = num_args
        # The names the inputs are passed by, when given as a mapping.
        self.keywords = keywords

    def forward(self, *args):
        inputs = args[:self.num_args]
        if self.keywords:
            out = self.m(**dict(zip(self.keywords, inputs)),
                         **self.forward_kwargs)
        else:
            out = self.m(*inputs, **self.forward_kwargs)
        if self.loss_fn is not None:
            return self.loss_fn(out, *args[self.num_args:])
        return _pick_logits(out)


def _pick_logits(out):
    if isinstance(out, torch.Tensor):
        return out
    logits = getattr(out, "logits", None)
    if isinstance(logits, torch.Tensor):
        return logits
    if isinstance(out, (tuple, list)) and out and isinstance(
            out[0], torch.Tensor):
        return out[0]
    raise UnsupportedModuleError(
        f"the module returned {type(out).__name__}; from_torch takes a "
        "tensor of logits (or an output with .logits, or a tuple whose "
        "first element is the logits), or pass loss=fn to compute the loss")


class TorchGraph(_zero.Graph):
    """A zero.Graph imported from a PyTorch module (zero.from_torch).

    Besides the Graph API it keeps what ties it to the module:
    `input_names` (the step's inputs, in order: the module's arguments,
    then `labels` or the loss function's targets), `parameter_paths` (our
    parameter name -> every module path holding that tensor: tied weights
    share one parameter), `constants` (frozen parameters the importer made
    of constant tensors), and `init_path`, a .safetensors file of the
    module's weights from which `trainer()` starts (None for a module on
    the meta device, which is planned from its shapes alone).
    """

    def trainer(self, compiled, seed=1):
        """A zero.Trainer starting from the module's weights as they are
        now, as PyTorch trains the module it is given: weights changed
        since the import (an edit, load_state_dict, a re-init) are read
        again; a parameter frozen or unfrozen, re-shaped, re-typed, tied or
        untied since, or a buffer the import computed constants from, is
        refused, naming it (import again). Every rank starts from rank 0's
        weights, as DDP does. A graph imported from a module on the meta
        device has none: it plans (compile, report) and refuses to
        train."""
        if self.init_path is None:
            raise RuntimeError(
                "this graph was imported from a module on the meta device: "
                "it compiles and plans (compile(n).report, report_text()) "
                "but has no weights to train from; import the module built "
                "on the CPU (or with its weights loaded) to train it")
        from zero.trainer import Trainer
        # PyTorch trains the module as it is now: edits since the import
        # are read again (or refused where the step depends on them).
        weights = self._snapshot.changed_weights()
        if weights is not None:
            _write_init(weights, self.init_path)
        return Trainer(compiled, seed=seed, init=self.init_path,
                       input_names=self.input_names,
                       module_names=self._ours_from_module_state,
                       pad_batch=self._pad_batch)

    # What a batch shorter than the compiled one is padded with, per input.
    _PADDING = {"input_ids": 0, "attention_mask": 0, "labels": -100}

    def _padding_refusal(self):
        """Why padding a short batch would change what it trains, or None
        where it is exact: our causal-LM loss (labels of -100 take no part,
        the mean over the real ones across every rank) and an attention
        mask (padded keys take no part), and no other input whose padding
        value zero cannot tell."""
        if not getattr(self, "_causal_lm", False):
            return ("the loss is a function of yours, and zero cannot tell "
                    "which labels it ignores")
        if "attention_mask" not in self.input_names:
            return ("the graph has no attention_mask input to mask the "
                    "padded keys (import the module with one among its "
                    "example inputs)")
        others = [n for n in self.input_names if n not in self._PADDING]
        if others:
            return (f"zero cannot tell what pads {others} exactly (only "
                    "input_ids, attention_mask and labels)")
        return None

    def _pad_batch(self, arrays, compiled, method):
        """A batch of fewer rows or positions than compiled, padded at the
        end as a user would pad it by hand (ids 0, mask 0, labels -100),
        where that is exact (_padding_refusal); with the user's (rows,
        positions). As it is where it has the compiled shape, or a shape
        padding cannot make (the runtime's error says what is wrong)."""
        want = [[shape[0] * compiled.ranks] + list(shape[1:])
                for shape, _ in compiled.input_types]
        given = [list(a.shape) for a in arrays]
        if len(arrays) != len(want) or given == want:
            return arrays, None
        first = given[0]
        if any(len(g) != 2 or len(w) != 2 or g != first or g[0] > w[0] or
               g[1] > w[1] for g, w in zip(given, want)):
            return arrays, None
        rows, seq = want[0]
        reason = self._padding_refusal()
        if reason is not None:
            raise ValueError(
                f"{method}: the batch is {first[0]} x {first[1]} and the "
                f"graph is compiled for {rows} x {seq}; padding it would "
                f"not be exact: {reason}. Give batches of the compiled "
                "shape")
        padded = []
        for name, array in zip(self.input_names, arrays):
            full = np.full((rows, seq), self._PADDING[name],
                           dtype=array.dtype)
            full[:first[0], :first[1]] = array
            padded.append(full)
        return padded, tuple(first)

    def _ours_from_module_state(self, state, trainer):
        """`state` under our parameter names: as it is where it is not
        wholly under the module's names (our own state_dict(), or a mix for
        the strict load to name), else renamed from the module's
        (`module.state_dict()`). Tied names give one parameter and must
        agree; a buffer, or a parameter the step does not read, must equal
        the module's (the step holds it as it was imported, or not at all);
        the importer's own constants keep the trainer's values."""
        from zero.trainer import _as_array
        if not state or not all(key in self._module_state for key in state):
            return state
        ours, first, unknown = {}, {}, []
        for key, value in state.items():
            given = _as_array(value, f"load_state_dict: '{key}'",
                              bf16_bits=True)
            owner = self._state_owner.get(key)
            if owner is None:
                held = _as_array(self._module_state[key], key, bf16_bits=True)
                if given.shape != held.shape or given.dtype != held.dtype or \
                        np.ascontiguousarray(given).tobytes() != \
                        np.ascontiguousarray(held).tobytes():
                    raise ValueError(
                        f"load_state_dict: '{key}' is a buffer of the module "
                        "or a parameter the step does not read, which the "
                        "step holds as it was when imported (or not at "
                        "all); the state gives it another value: load it "
                        "into the module and import again")
                continue
            if owner in ours:
                if given.shape != ours[owner].shape or \
                        np.ascontiguousarray(given).tobytes() != \
                        np.ascontiguousarray(ours[owner]).tobytes():
                    raise ValueError(
                        f"load_state_dict: '{key}' and '{first[owner]}' are "
                        f"one tied parameter here ('{owner}'), but the state "
                        "gives them different values")
                continue
            ours[owner], first[owner] = given, key
        missing = [paths[0] for owner, paths in self.parameter_paths.items()
                   if owner not in ours]
        if missing:
            raise ValueError(
                f"load_state_dict: the module's state lacks {missing} (a "
                "strict load: every parameter of the module the step "
                "trains)")
        if self.constants:
            current = trainer.state_dict()
            for name in self.constants:
                ours[name] = current[name]
        return ours

    def state_dict(self, source):
        """The trained state as the module's own state_dict: torch tensors
        under the module's names (tied names share values), buffers as the
        module had them, for `module.load_state_dict`.

        `source` is a zero.Trainer (collective: every rank must call it),
        or a mapping of our parameter names to arrays or tensors, such as a
        checkpoint consolidated by `zero-ckpt consolidate` and read with
        `safetensors.torch.load_file`."""
        ours = source if isinstance(source, dict) else source.state_dict()
        result = {}
        for name, value in self._module_state.items():
            our_name = self._state_owner.get(name)
            if our_name is None:
                result[name] = value.detach().clone()
                continue
            if our_name not in ours:
                raise KeyError(f"no '{our_name}' (the module's '{name}') in "
                               "the state given")
            stored = ours[our_name]
            if isinstance(stored, torch.Tensor):
                tensor = stored.detach()
            else:
                array = np.ascontiguousarray(stored)
                tensor = torch.from_numpy(array)
                if value.dtype == torch.bfloat16 and array.dtype == np.uint16:
                    tensor = tensor.view(torch.bfloat16)
            result[name] = tensor.to(value.dtype).reshape(value.shape).clone()
        return result


# -- Wrappers ------------------------------------------------------------------


def _refuse_wrappers(module):
    """PyTorch's data-parallel wrappers hold the model as `.module` and
    scatter its batch themselves; zero is the data parallelism, so it takes
    the model they wrap, said rather than imported as something else."""
    wrappers = [torch.nn.DataParallel,
                torch.nn.parallel.DistributedDataParallel]
    try:
        from torch.distributed.fsdp import FullyShardedDataParallel
        wrappers.append(FullyShardedDataParallel)
    except ImportError:
        pass
    for kind in wrappers:
        if isinstance(module, kind):
            raise UnsupportedModuleError(
                f"from_torch takes the model, not torch's {kind.__name__} "
                "wrapper around it: pass model.module (zero runs the data "
                "parallelism, and ZeRO, itself)")


# -- Activation checkpointing -------------------------------------------------

CHECKPOINT_MODES = ("none", "full", "selective", "selective_op")


def _checkpoint_blocks(module, checkpoint, train):
    """(mode, {path}) of the blocks from_torch's `checkpoint` recomputes,
    with the paths as the export names them (under our wrapper's `m.`), or
    None where nothing is."""
    if checkpoint is not None and checkpoint not in CHECKPOINT_MODES:
        raise ValueError(f"checkpoint must be None or one of "
                         f"{', '.join(map(repr, CHECKPOINT_MODES))}, got "
                         f"{checkpoint!r}")
    # Hugging Face's checkpointed layers (GradientCheckpointingLayer).
    layers = [name for name, child in module.named_modules()
              if any(kind.__name__ == "GradientCheckpointingLayer"
                     for kind in type(child).__mro__)]
    if checkpoint is None:
        enabled = [name for name in layers
                   if getattr(module.get_submodule(name),
                              "gradient_checkpointing", False)]
        if not (enabled and train):
            return None
        return "full", {f"m.{name}" for name in enabled}
    if checkpoint == "none":
        return None
    if not layers:
        # The outermost elements of a ModuleList or ModuleDict: a model's
        # repeated blocks (torchtitan's layers, nanoGPT's h).
        for name, child in module.named_modules():
            if isinstance(child, (torch.nn.ModuleList, torch.nn.ModuleDict)) \
                    and not any(name.startswith(layer + ".")
                                for layer in layers):
                layers += [f"{name}.{key}" if name else key
                           for key, _ in child.named_children()]
    if not layers:
        raise UnsupportedModuleError(
            f"checkpoint={checkpoint!r}: the module has no blocks to "
            "checkpoint (Hugging Face decoder layers, or elements of an "
            "nn.ModuleList or ModuleDict)")
    return checkpoint, {f"m.{name}" for name in layers}


# -- The entry point ----------------------------------------------------------


def from_torch(module, example_args, *, loss="causal_lm", example_targets=(),
               forward_kwargs=None, name=None, precision=None,
               init_path=None, train=None, attention="separate",
               checkpoint=None):
    """Imports `module` as a training step of our builder.

    example_args: a tuple of example inputs (token ids, ...) with the
        per-rank batch as dimension 0, passed to the module by position,
        or a mapping of its keyword arguments to them (a tokenizer's
        output: {"input_ids": ..., "attention_mask": ...}); their shapes
        and dtypes are the step's inputs, named by the module's argument
        names or the mapping's keys.
    loss: "causal_lm" (the default: the mean cross-entropy of the
        module's logits[:, :-1] against labels[:, 1:], `labels` an extra
        input shaped like the first argument; labels of -100, Hugging
        Face's ignore_index for the prompt and the padding, take no part,
        and the mean is over the global batch's other labels; the logits
        are the graph's output "logits", for evaluate(outputs=True) and
        Trainer.generate), or a
        function `loss(output, *targets)` returning the
        scalar loss, exported with the module (`example_targets` gives
        example targets).
    forward_kwargs: keyword arguments for every call of the module (for a
        Hugging Face model, use_cache=False is added when it takes one).
    precision: "bf16" or "f16" for mixed precision (set before the graph
        is built, as zero.Graph requires).
    init_path: where to write the module's weights (.safetensors); a
        temporary file by default.
    train: export in training mode (True: the module's dropouts become
        train.dropout) or in eval mode (False: without them). None (the
        default) takes the module's own mode, as PyTorch trains a module
        in the mode it is in: model.eval() before the import trains
        without dropout. The report's first line says which
        ("dropout on in training steps" or "no dropout"), as does
        compiled.report["dropout"]. evaluate() runs without dropout either
        way.
    attention: how scaled_dot_product_attention is imported: "separate"
        (the default: the ops of PyTorch's math backend, scores and
        probabilities [..., L, S] kept for the backward) or "fused" (one
        train.attention, FlashAttention's algorithm, as PyTorch's flash
        backend on a GPU: no [L, S] tensor kept). "fused" takes causal or
        unmasked self-attention with q, k and v of one shape and no
        dropout; any other call is refused, naming it, and so is attention
        written as separate ops (q @ k^T, then softmax: a model loaded with
        attn_implementation="eager"), which "fused" cannot take as written.
    checkpoint: activation checkpointing of the module's blocks (Hugging
        Face's decoder layers, or else the elements of its nn.ModuleLists
        and ModuleDicts): "full" recomputes every op of a block but its
        output in the backward, as torch.utils.checkpoint does;
        "selective" keeps the matmul and attention results;
        "selective_op" (torchtitan's op-level policy) keeps the attention
        and every other matmul, the first kept; "none" recomputes nothing.
        None (the default) follows the module: "full" where Hugging
        Face's gradient checkpointing is on (gradient_checkpointing_enable)
        and train is True, as it checkpoints only in training mode.
        Turns on config.activation_checkpointing where it marks anything.

    A module whose parameters and buffers are all on the meta device is
    imported from its shapes alone: its graph compiles and plans, and has
    no weights to train from (docs/torch.md, "Planning from shapes
    alone"); the example inputs must still be real tensors.

    Returns a TorchGraph.
    """
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"from_torch takes a torch.nn.Module, not "
                        f"{type(module).__name__}")
    _refuse_wrappers(module)
    if isinstance(example_args, torch.Tensor):
        example_args = (example_args,)
    keywords = None
    kwargs = dict(forward_kwargs or {})
    if isinstance(example_args, collections.abc.Mapping):
        keywords = [str(key) for key in example_args]
        both = sorted(set(keywords) & set(kwargs))
        if both:
            raise ValueError(f"{both} given both as example inputs and in "
                             "forward_kwargs")
        example_args = tuple(example_args.values())
    example_args = tuple(example_args)
    example_targets = tuple(example_targets)
    if not example_args or not all(
            isinstance(a, torch.Tensor) for a in example_args):
        raise TypeError("example_args must be a tuple of tensors or a "
                        "mapping of argument names to tensors")
    plan_only = _meta_state(module, example_args + tuple(example_targets))
    # None: each submodule as it is (PyTorch trains in the modes it finds).
    follow_module = train is None
    if follow_module:
        train = module.training
    if hasattr(module, "config") and "use_cache" not in kwargs:
        kwargs["use_cache"] = False
    blocks = _checkpoint_blocks(module, checkpoint, train)
    if attention not in ("separate", "fused"):
        raise ValueError(f"attention must be 'separate' or 'fused', got "
                         f"{attention!r}")
    loss_fn = None
    if callable(loss):
        loss_fn = loss
    elif loss != "causal_lm":
        raise ValueError(f"loss must be 'causal_lm' or a function, got "
                         f"{loss!r}")
    elif example_targets:
        raise ValueError("example_targets go with a loss function; the "
                         "causal-LM loss takes labels shaped like the ids")
    if loss_fn is None and "labels" in (keywords or []) + list(kwargs):
        # model(**batch) computes Hugging Face's own loss from them, which
        # the step would import as part of the model.
        raise ValueError(
            "'labels' is among from_torch's example inputs: with "
            "loss='causal_lm' the labels are the step's last input "
            "(trainer.step([ids, ..., labels]) or batch['labels']), and the "
            "causal-LM loss is ours; leave them out of the example inputs")

    # torch.export gives inputs that share memory one placeholder (the
    # others go unread): the step would read, say, the ids as the targets.
    # Each input is its own array at run time, so each gets its own example.
    seen = set()
    unaliased = []
    for example in example_args + example_targets:
        address = example.untyped_storage().data_ptr()
        unaliased.append(example.clone() if address in seen else example)
        seen.add(address)
    example_args = tuple(unaliased[:len(example_args)])
    example_targets = tuple(unaliased[len(example_args):])
    wrapper = _Wrapper(module, kwargs, loss_fn, len(example_args),
                       keywords)
    modes = [(child, child.training) for child in module.modules()]
    # Training mode, as the module trains in PyTorch: its dropouts become
    # train.dropout, whose masks are deterministic (the seed, the step and
    # each element's place in the global batch).
    if not follow_module:
        module.train(bool(train))
    try:
        examples = example_args + example_targets
        if plan_only:
            # Exported on the module's device, as PyTorch would run it
            # there; the importer reads the examples' values themselves.
            examples = tuple(example.to("meta") for example in examples)
        exported = torch.export.export(wrapper, examples)
        program = exported.run_decompositions(decomposition_table())
    except Exception as error:  # torch's own message says what failed
        raise UnsupportedModuleError(
            f"torch.export could not export the module: {error}") from error
    finally:
        # Every submodule's own mode back, not the top one's everywhere.
        for child, mode in modes:
            child.training = mode

    if precision is None:
        # A 16-bit module trains in its type, with f32 masters.
        dtypes = {p.dtype for p in module.parameters()}
        precision = next((DTYPES[d] for d in (torch.bfloat16, torch.float16)
                          if d in dtypes), "f32")
    graph = TorchGraph(name or type(module).__name__)
    graph.config.precision(precision)
    inputs = []
    input_names = []
    arg_names = keywords or _argument_names(module, len(example_args))
    for index, example in enumerate(example_args + example_targets):
        if example.dim() == 0:
            raise UnsupportedModuleError(
                f"input {index} is a scalar; inputs need a batch dimension")
        input_name = (arg_names[index] if index < len(example_args) else
                      f"target{index - len(example_args)}")
        dtype = dtype_name(example.dtype, f"input '{input_name}'")
        tensor = graph.input(input_name, list(example.shape), dtype)
        inputs.append(Live(tensor, list(example.shape),
                           precision if dtype == "f32" else dtype))
        input_names.append(input_name)

    importer = Importer(program, graph, wrapper, precision, plan_only,
                        fused_attention=attention == "fused",
                        checkpoint=blocks)
    if blocks:
        graph.config.activation_checkpointing(True)
    importer.placeholders(inputs)
    _torch_values.loss_function = loss_fn  # named by refusals inside it
    try:
        result = importer.run()
    finally:
        _torch_values.loss_function = None

    if loss_fn is None:
        ids = example_args[0]
        if result.tensor is None or len(result.shape) != 3 or ids.dim() != 2:
            raise UnsupportedModuleError(
                f"the causal-LM loss takes logits [batch, seq, vocab] and ids "
                f"[batch, seq]; got logits {result.shape} and ids "
                f"{list(ids.shape)}: pass loss=fn for another loss")
        labels_dtype = dtype_name(ids.dtype, "labels")
        labels = graph.input("labels", list(ids.shape), labels_dtype)
        input_names.append("labels")
        seq = result.shape[1]
        logits = _zero.narrow(result.tensor, 1, 0, seq - 1)
        targets = _zero.narrow(labels, 1, 1, seq - 1)
        # Hugging Face's causal-LM loss: labels of -100 (the prompt, the
        # padding) take no part.
        graph.minimize(
            _zero.softmax_cross_entropy(logits, targets, ignore_index=-100))
        # What evaluate(outputs=True) and Trainer.generate read; training
        # steps do not compute it.
        graph.output("logits", result.tensor)
    else:
        if result.shape != [] or result.dtype != "f32":
            raise UnsupportedModuleError(
                f"the loss function returned {result.dtype}{result.shape}; "
                "it must return a scalar float32 loss")
        graph.minimize(result.tensor)
    graph.check()

    graph.input_names = input_names
    graph._causal_lm = loss_fn is None
    graph.parameter_paths = importer.parameter_paths
    graph.constants = sorted(importer.constant_names)
    graph._module_state = dict(module.state_dict(keep_vars=False))
    graph._state_owner = {path: name
                          for name, paths in importer.parameter_paths.items()
                          for path in paths}
    # Tied names the export did not use still belong to the parameter: the
    # paths of one storage, or on the meta device of one Parameter.
    by_data = {}
    if plan_only:
        for path, value in itertools.chain(
                module.named_parameters(remove_duplicate=False),
                module.named_buffers(remove_duplicate=False)):
            by_data.setdefault(("meta", id(value)), []).append(path)
    else:
        for path, value in graph._module_state.items():
            by_data.setdefault(value.data_ptr(), []).append(path)
    for path in list(graph._state_owner):
        value = graph._module_state.get(path)
        if value is None:
            continue
        key = value.data_ptr()
        if plan_only:
            key = next((k for k, paths in by_data.items() if path in paths),
                       None)
        for alias in by_data.get(key, []):
            graph._state_owner.setdefault(alias, graph._state_owner[path])
    # A module on the meta device has no weights to write: its graph plans.
    graph.init_path = (None if plan_only else
                       _write_init(importer.init_tensors, init_path))
    graph._snapshot = None if plan_only else ModuleSnapshot(
        wrapper, importer.parameter_sources, importer.buffer_sources,
        {name: importer.init_tensors[name]
         for name in importer.constant_names},
        # train=None imports each submodule in the mode it has: one
        # switched after (model.train() on an eval-mode import, as
        # from_pretrained returns it) would train with dropout in PyTorch.
        follow_modes=follow_module)
    return graph


def _meta_state(module, examples):
    """Whether the module's parameters and buffers are on the meta device
    (shapes without values): its graph then plans but cannot train. Every
    one of them or none must be; the example inputs must have values,
    which the importer reads (masks, position ids)."""
    for index, value in enumerate(examples):
        if value.is_meta:
            raise UnsupportedModuleError(
                f"example input {index} is on the meta device: the importer "
                "reads the example inputs' values (attention masks, "
                "position ids); give them on the CPU, even for a module on "
                "the meta device")
    state = list(itertools.chain(
        (("parameter", name, value)
         for name, value in module.named_parameters()),
        (("buffer", name, value) for name, value in module.named_buffers())))
    meta = [(kind, name) for kind, name, value in state if value.is_meta]
    if meta and len(meta) != len(state):
        kind, name = next((kind, name) for kind, name, value in state
                          if not value.is_meta)
        raise UnsupportedModuleError(
            f"{meta[0][0]} '{meta[0][1]}' is on the meta device but {kind} "
            f"'{name}' is not: a module is planned from its shapes alone "
            "(all on the meta device) or imported with its values (none on "
            "it)")
    return bool(meta)


def _remove_quietly(path):
    try:
        os.remove(path)
    except OSError:
        pass


def _argument_names(module, count):
    try:
        params = list(inspect.signature(module.forward).parameters)
    except (TypeError, ValueError):
        params = []
    names = [p for p in params if p not in ("self", "args", "kwargs")]
    return [names[i] if i < len(names) else f"input{i}" for i in range(count)]


def _write_init(tensors, path):
    from safetensors.torch import save_file
    if path is None:
        handle, path = tempfile.mkstemp(prefix="zero-torch-",
                                        suffix=".safetensors")
        os.close(handle)
        atexit.register(_remove_quietly, path)
    save_file({name: t.contiguous() for name, t in tensors.items()}, path)
    return path
