"""The trainer: numpy arrays or CPU torch tensors in, losses and numpy
state out."""

import collections.abc
import functools
import os
import resource
import sys
import time
import warnings
import weakref

import numpy as np

from zero import _zero


# Each compiled graph -> (its graph, weakly; the graph's config at compile,
# as compare_config reads it). A graph compiles again after its config
# changes (other stages, other optimizers), but a trainer made from the
# earlier compile would run the old config while the user's code says the
# new: refused, not ignored.
_compiled_from = weakref.WeakKeyDictionary()
_graph_compile = _zero.Graph.compile


@functools.wraps(_graph_compile)
def _compile(graph, ranks):
    compiled = _graph_compile(graph, ranks)
    _compiled_from[compiled] = (weakref.ref(graph), repr(graph.config),
                                graph.config._fingerprint())
    return compiled


_zero.Graph.compile = _compile


def _check_config_unchanged(compiled):
    graph, shown, fingerprint = _compiled_from.get(compiled,
                                                   (lambda: None, "", ""))
    graph = graph()
    if graph is None or graph.config._fingerprint() == fingerprint:
        return
    now = repr(graph.config)
    change = (f"compiled with {shown}, now {now}" if now != shown else
              "its ZeRO options (config.zero), parameter groups or memory "
              "budget changed")
    raise ValueError(
        "graph.config changed after this graph was compiled "
        f"({change}): the compiled graph trains as it was compiled, so "
        "the change would be ignored; compile again after configuring "
        "(graph.compile(n))")


# The numpy type a batch gives each input type in: bf16 inputs take float32
# (numpy has no bfloat16; the runtime rounds each element to bf16 as it
# loads the batch).
_NUMPY = {"f32": np.float32, "f16": np.float16, "bf16": np.float32,
          "i8": np.int8, "i32": np.int32, "i64": np.int64}


def _as_array(value, where, bf16_bits=False):
    """`value` as a numpy array: a numpy array as it is, a CPU torch tensor
    as the numpy view of its memory (no copy where it is contiguous, a
    contiguous copy where not: a view's strides are PyTorch's business, not
    its user's). A bf16 tensor, which numpy cannot hold, becomes float32
    (exact: what a batch's bf16 input takes), or with `bf16_bits` its
    uint16 bit patterns (what a state dict holds). torch is not imported
    for this: a tensor exists only where the caller has imported it."""
    if isinstance(value, np.ndarray):
        return value
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        if value.device.type != "cpu":
            raise TypeError(
                f"{where} is a torch tensor on '{value.device}'; zero reads "
                "batches and weights from host memory: pass it .cpu()")
        value = value.detach().contiguous()
        if value.dtype == torch.bfloat16:
            if not bf16_bits:
                return value.float().numpy()
            return value.view(torch.int16).numpy().view(np.uint16)
        try:
            return value.numpy()
        except TypeError as error:
            raise TypeError(f"{where} is a torch tensor of {value.dtype}, "
                            f"which has no numpy form: {error}") from None
    hint = ""
    if isinstance(value, (list, tuple)):
        hint = (" (a tokenizer returns arrays or tensors with "
                "return_tensors='np' or 'pt', padded to one length)")
    raise TypeError(f"{where} is a {type(value).__name__}, not a numpy "
                    f"array or a CPU torch tensor{hint}")


def _batch_array(value, where):
    """A batch's array as _as_array gives it, a boolean one (a mask built
    with `ids != pad`) as int64 0s and 1s: what the integer input it feeds
    takes, exactly, as PyTorch's models take either."""
    array = _as_array(value, where)
    return array.astype(np.int64) if array.dtype == np.bool_ else array


def _resident_bytes():
    """This process's resident set now (/proc/self/statm), or None where
    there is no /proc."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _from_torch_tensor(value, where):
    """A torch tensor as _as_array gives it; anything else as it is (for
    arguments that also take lists and numbers)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return _as_array(value, where)
    return value


def _sample(scores, temperature, top_k, rng):
    """One token per row of `scores` [n, vocab] (float64), as nanoGPT
    samples: greedy at temperature 0, else scores / temperature cut to the
    top k, softmax, one draw."""
    if temperature == 0:
        return np.argmax(scores, axis=1)
    scores = scores / temperature
    if top_k is not None and top_k < scores.shape[1]:
        kth = np.sort(scores, axis=1)[:, -top_k][:, None]
        scores = np.where(scores < kth, -np.inf, scores)
    scores = scores - scores.max(axis=1, keepdims=True)
    probs = np.exp(scores)
    probs /= probs.sum(axis=1, keepdims=True)
    return np.array([rng.choice(probs.shape[1], p=row) for row in probs])


class Trainer:
    """Runs a compiled graph on this job's ranks (every rank makes one).

    The initial state is drawn from `seed`, or read from `init` (a
    .safetensors file, e.g. from `zero-ckpt consolidate`). Every rank
    starts from rank 0's `init` tensors, as DDP and FSDP's
    sync_module_states make every rank start from rank 0's module: where
    they differ (ranks that seeded torch differently before building the
    model), rank 0 warns, naming the first. `step()` without
    a batch trains on synthetic data drawn from the seed; `step(batch)`
    takes the global batch of one optimizer step as numpy arrays, one per
    input in declaration order (or a dict by input name), every rank
    passing the same arrays: each rank uses its rows. `input_names`, where
    given, must be the graph's input names in declaration order
    (compiled.input_names): names in another order are refused, as they
    would feed one input another's data.

    `progress` (also an attribute): True shows a progress line on rank 0's
    stderr at each step (loss, steps and tokens per second, the time left
    toward `total_steps` where that is set; tqdm's bar where tqdm is
    installed), False never, None (the default) where rank 0's stderr is a
    terminal and ZERO_PROGRESS is not 0.
    """

    def __init__(self, compiled, seed=1, init="", input_names=None,
                 module_names=None, progress=None, total_steps=None,
                 pad_batch=None):
        if not isinstance(compiled, _zero.CompiledGraph):
            raise TypeError("Trainer takes a CompiledGraph (graph.compile), "
                            f"not {type(compiled).__name__}")
        _check_config_unchanged(compiled)
        declared = list(compiled.input_names)
        if input_names is not None and list(input_names) != declared:
            # Names in another order would label (and, given by name, feed)
            # one input with another's data: refused, not reordered.
            raise ValueError(
                f"input_names {list(input_names)} are not the graph's inputs "
                f"in declaration order, {declared}: a batch's arrays come in "
                "that order; give the names in it (or leave input_names out)")
        self.input_names = declared
        # zero.from_torch's graphs: renames a state under the module's own
        # names (module.state_dict()) to ours, for load_state_dict.
        self._module_names = module_names
        # zero.from_torch's graphs: pads a batch shorter than compiled where
        # that is exact, (arrays, the user's (rows, positions) or None).
        self._pad_batch = pad_batch
        self.progress = progress
        self.total_steps = total_steps
        self._progress = None
        self._compiled = compiled
        self._seed = seed
        self._trainer = _zero.Trainer(compiled, seed, init, self.input_names)
        taken = list(self._trainer.initial_state_from_rank0)
        if taken and _zero.rank() == 0:
            warnings.warn(
                f"the ranks' initial weights differ in {len(taken)} "
                f"tensor(s), first '{taken[0]}': every rank starts from rank "
                "0's, as PyTorch's DDP and FSDP (sync_module_states) do",
                stacklevel=3)

    def __repr__(self):
        return (f"Trainer(inputs={self.input_names}, "
                f"steps_done={self.steps_done}, "
                f"learning_rate={self.learning_rate!r})")

    def step(self, batch=None):
        """Runs one optimizer step; returns its loss (a float). What else a
        user logs of it is in `metrics`."""
        arrays = [] if batch is None else self._padded(batch, "step")[0]
        loss = self._collective(f"step (step {self.steps_done + 1})",
                                self._trainer.step, arrays)
        self._batch = arrays[0].shape if arrays else None, \
            bool(arrays) and arrays[0].dtype.kind in "iu"
        if self._shows_progress():
            self._show_progress(loss)
        return loss

    def _shows_progress(self):
        """Whether step shows progress: on rank 0, where `progress` is True,
        or None (the default) and rank 0's stderr is a terminal and
        ZERO_PROGRESS is not 0: a job's log files get no progress lines
        unless asked for."""
        if _zero.rank() != 0 or self.progress is False:
            return False
        if self.progress is None:
            return (os.environ.get("ZERO_PROGRESS", "1") != "0"
                    and sys.stderr.isatty())
        return True

    def _show_progress(self, loss):
        """One line on rank 0's stderr: step (of total_steps), loss, steps
        and tokens per second, the time left; through tqdm where it is
        installed, else rewritten in place on a terminal and elsewhere
        printed at the first step shown, then every 10 steps or 10
        seconds, and at the last."""
        metrics = self.metrics
        done, total = self.steps_done, self.total_steps
        state = self._progress
        if state is None:
            state = self._progress = {"start": time.monotonic(),
                                      "first": done - 1, "shown": 0.0,
                                      "bar": None}
            try:
                import tqdm
                state["bar"] = tqdm.tqdm(total=total, initial=done - 1,
                                         desc="zero", unit="step",
                                         file=sys.stderr, dynamic_ncols=True)
            except ImportError:
                pass
        tokens = metrics.get("tokens_per_second")
        if state["bar"] is not None:
            if total is not None and state["bar"].total != total:
                state["bar"].total = total
            state["bar"].set_postfix(
                loss=f"{loss:.4f}",
                **({"tok/s": f"{tokens:,.0f}"} if tokens else {}),
                refresh=False)
            state["bar"].update(1)
            if total is not None and done >= total:
                # The last step: the bar's final state, then a fresh bar
                # should training go on.
                state["bar"].close()
                self._progress = None
            return
        now = time.monotonic()
        rate = (done - state["first"]) / max(now - state["start"], 1e-9)
        line = f"zero: step {done}" + (f"/{total}" if total else "")
        line += f" loss {loss:.4f} | {rate:.2f} steps/s"
        if tokens:
            line += f", {tokens:,.0f} tokens/s"
        if total and total > done and rate > 0:
            left = int((total - done) / rate)
            line += f" | ETA {left // 3600}:{left // 60 % 60:02d}:" \
                f"{left % 60:02d}"
        if sys.stderr.isatty():
            print("\r" + line, end="", file=sys.stderr, flush=True)
        elif done % 10 == 0 or now - state["shown"] >= 10 or done == total:
            print(line, file=sys.stderr, flush=True)
            state["shown"] = now

    @property
    def metrics(self):
        """The last step's figures, as a dict (None before the first step):

        - `step`, `loss`: its index (1-based) and loss, as step returned;
        - `grad_norm`: the global gradient norm before clipping, as
          `clip_grad_norm_` returns it, where the graph clips by global
          norm (GraphConfig.clip_grad_norm); None otherwise, as the step
          computes no norm then;
        - `learning_rate`, `learning_rates`: the rate the update used (the
          parameters in no group), and each group's;
        - `loss_scale`: under dynamic loss scaling, the scale after the
          step (GradScaler.get_scale() after update()), else None;
          `skipped`: whether the update was skipped for an overflow (inf
          or NaN in a gradient), `skipped_steps`: how many this trainer
          skipped so far;
        - `seconds`: the step's wall-clock time on this rank;
          `samples_per_second`: the rows of the global batch given to step
          per second; `tokens_per_second`: its elements per second where
          its first array holds integers (token ids), else None (both None
          for a step on synthetic batches);
        - `rss_bytes`, `peak_rss_bytes`: this process's resident memory
          now and at its highest so far (getrusage), measured;
          `arena_bytes`: the step's arena on this rank, which the runtime
          allocates whole as the plan sizes it (compiled.report);
        - on GPU ranks `device_bytes` and `peak_device_bytes`, what the
          runtime holds on the device now and at most (its buffers and
          arena), and `device_used_bytes`, the driver's figure for the
          whole device (cudaMemGetInfo, as nvidia-smi; device_memory());
          all three None on CPU ranks."""
        last = dict(self._trainer.last_step)
        if last["step"] == 0:
            return None
        rates = dict(last["learning_rates"])
        last["learning_rate"] = rates.get("default",
                                          next(iter(rates.values()), None))
        last["learning_rates"] = rates
        shape, ids = getattr(self, "_batch", (None, False))
        seconds = last["seconds"]
        last["samples_per_second"] = (shape[0] / seconds
                                      if shape and seconds > 0 else None)
        last["tokens_per_second"] = (float(np.prod(shape)) / seconds
                                     if shape and ids and seconds > 0
                                     else None)
        last["rss_bytes"] = _resident_bytes()
        # ru_maxrss is in KiB on Linux, and the kernel updates it lazily: at
        # least the resident set now.
        last["peak_rss_bytes"] = max(
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            last["rss_bytes"] or 0)
        if not hasattr(self, "_arena_bytes"):
            self._arena_bytes = self._compiled.report.get("arena_bytes")
        last["arena_bytes"] = self._arena_bytes
        device = self._trainer.device_memory()
        last["device_bytes"] = device and device["allocated_bytes"]
        last["peak_device_bytes"] = device and device["peak_allocated_bytes"]
        last["device_used_bytes"] = device and device["used_bytes"]
        return last

    def device_memory(self):
        """The device's memory now on a GPU backend, a dict:
        allocated_bytes and peak_allocated_bytes (the runtime's buffers and
        arena), used_bytes and total_bytes (the driver's, for the whole
        device); None on CPU ranks."""
        return self._trainer.device_memory()

    def evaluate(self, batch, outputs=False):
        """The loss of the current parameters on `batch` (global batches,
        given as to step), with no backward and no update: validation loss.
        With `outputs=True`, `(loss, {name: array})`: every `graph.output`
        over the whole batch, rows in the batch's order on every rank (a
        scalar output is its mean, as the loss; bf16/f16 come back as
        float32). Collective: every rank must call it."""
        arrays, short = self._padded(batch, "evaluate")
        result = self._collective(self._after("evaluate"),
                                  self._trainer.evaluate, arrays,
                                  bool(outputs))
        if not outputs or short is None:
            return result
        # The outputs of the user's rows and positions, not the padding's.
        loss, values = result
        full = arrays[0].shape
        for name, value in values.items():
            if value.ndim >= 2 and value.shape[:2] == full:
                values[name] = value[:short[0], :short[1]]
            elif value.ndim >= 1 and value.shape[0] == full[0]:
                values[name] = value[:short[0]]
        return loss, values

    def generate(self, prompt_ids, max_new_tokens, temperature=1.0,
                 top_k=None, *, inputs=None, tokens=None, logits="logits",
                 seed=None):
        """Samples `max_new_tokens` tokens after `prompt_ids` from the
        model, as nanoGPT's `generate` does: the context cropped to the
        model's last `seq` tokens, the logits of its last position divided
        by `temperature` (0: the most likely token, greedy), cut to the
        `top_k` most likely where given, softmax, one draw. Returns the
        prompt followed by the new tokens (int64): [L + max_new_tokens]
        for a prompt [L], [n, L + max_new_tokens] for n prompts [n, L] of
        one length, each sampled independently.

        It runs the evaluation program (`evaluate`, no dropout) at the
        training batch's shape, which is fixed when the graph is built:
        each new token is one forward of a global batch whose first n rows
        hold the prompts, so up to that many samples cost the same as one.
        The graph must declare the logits, [rows, seq, vocab], as an
        output (`graph.output("logits", model.logits(...))`, or name
        another with `logits=`); the token ids go to `tokens` (default: the
        first input), and every other input takes its value from `inputs`,
        {name: value} broadcast to its global batch (e.g. {"positions":
        np.arange(seq), "targets": 0}). The rows' positions after the
        context are filled; the first call checks that they change no
        logit before them (a model that looks ahead is refused, as filling
        would change what it samples). Draws come from
        numpy.random.default_rng(seed), the trainer's seed by default.
        Collective: every rank must call it with the same arguments, and
        every rank returns the same tokens, at any stage and rank count."""
        names = list(self._compiled.output_names)
        if logits not in names:
            raise ValueError(
                f"generate reads the graph output {logits!r}, the logits "
                f"[rows, seq, vocab]; the graph's outputs are {names} "
                "(declare it before compile: graph.output('logits', "
                "model.logits(tokens, positions)), or name another with "
                "logits=)")
        types = dict(zip(self.input_names, self._compiled.input_types))
        tokens = self.input_names[0] if tokens is None else tokens
        if tokens not in types:
            raise ValueError(f"tokens={tokens!r} is not an input; the "
                             f"inputs are {self.input_names}")
        shape, dtype = types[tokens]
        if len(shape) != 2 or dtype not in ("i32", "i64"):
            raise ValueError(f"generate feeds token ids to {tokens!r}, "
                             "which must be an integer [rows, seq] input, "
                             f"not {dtype}{list(shape)}")
        rows, seq = shape[0] * self._compiled.ranks, shape[1]
        given = dict(inputs or {})
        others = [name for name in self.input_names if name != tokens]
        missing = [name for name in others if name not in given]
        unknown = sorted(set(given) - set(others))
        if missing or unknown:
            problems = []
            if missing:
                problems.append(f"missing {missing}")
            if unknown:
                problems.append(f"{unknown} are not other inputs")
            example = ", ".join(f"{name!r}: ..." for name in others)
            raise ValueError(
                f"generate feeds the token ids to {tokens!r} and needs a "
                "value for every other input, no more: "
                f"{'; '.join(problems)} (inputs={{{example}}})")
        fixed = {}
        for name in others:
            local, kind = types[name]
            full = [local[0] * self._compiled.ranks] + list(local[1:])
            given[name] = _from_torch_tensor(given[name], f"inputs[{name!r}]")
            try:
                fixed[name] = np.ascontiguousarray(np.broadcast_to(
                    np.asarray(given[name], dtype=_NUMPY[kind]), full))
            except ValueError:
                raise ValueError(
                    f"inputs[{name!r}] of shape "
                    f"{list(np.shape(given[name]))} does not broadcast to "
                    f"the input's global batch {full}") from None
        prompt = np.asarray(_from_torch_tensor(prompt_ids, "prompt_ids"))
        single = prompt.ndim == 1
        if single:
            prompt = prompt[None, :]
        if prompt.ndim != 2 or prompt.shape[1] < 1 or \
                prompt.dtype.kind not in "iu":
            raise ValueError("prompt_ids are token ids, [L] or [n, L] "
                             "integers with L >= 1, not "
                             f"{prompt.dtype}{list(prompt.shape)}")
        count = prompt.shape[0]
        if count > rows:
            raise ValueError(f"{count} prompts: the evaluation batch holds "
                             f"{rows} rows, the most one call samples")
        if isinstance(max_new_tokens, bool) or \
                not isinstance(max_new_tokens, (int, np.integer)) or \
                max_new_tokens < 0:
            raise ValueError("max_new_tokens is a count >= 0, not "
                             f"{max_new_tokens!r}")
        if isinstance(temperature, bool) or \
                not isinstance(temperature, (int, float)) or \
                not temperature >= 0 or temperature == float("inf"):
            raise ValueError("temperature is a finite number >= 0 (0: "
                             f"greedy), not {temperature!r}")
        if top_k is not None and (isinstance(top_k, bool) or
                                  not isinstance(top_k, (int, np.integer))
                                  or top_k < 1):
            raise ValueError(f"top_k is None or a count >= 1, not {top_k!r}")
        rng = np.random.default_rng(self._seed if seed is None else seed)
        ids = prompt.astype(np.int64)
        checked = False
        for _ in range(max_new_tokens):
            window = ids[:, -seq:]
            length = window.shape[1]
            last = self._generation_logits(tokens, fixed, window, rows, seq,
                                           logits, 0)
            if not checked and length < seq:
                # Another filler after the context: a causal model's logits
                # at the context's positions do not move.
                other = self._generation_logits(tokens, fixed, window, rows,
                                                seq, logits, 1)
                if not np.array_equal(last[:, :length], other[:, :length]):
                    raise ValueError(
                        "generate samples from a causal model: this one's "
                        f"logits at the first {length} positions changed "
                        "when the tokens after them did (it looks ahead), "
                        "so filling the context after the prompt would "
                        "change what it samples")
                checked = True
            scores = last[:, length - 1, :].astype(np.float64)
            ids = np.concatenate(
                [ids, _sample(scores, temperature, top_k, rng)[:, None]],
                axis=1)
        return ids[0] if single else ids

    def _generation_logits(self, tokens, fixed, window, rows, seq, logits,
                           filler):
        """The logits [n, seq, vocab] of the n context rows `window`, the
        positions after them holding `filler`; the batch's other rows
        repeat the first."""
        count, length = window.shape
        ids = np.full((rows, seq), filler, dtype=np.int64)
        ids[:count, :length] = window
        ids[count:] = ids[0]
        kind = dict(zip(self.input_names,
                        self._compiled.input_types))[tokens][1]
        batch = dict(fixed)
        batch[tokens] = ids.astype(_NUMPY[kind])
        _, outputs = self._collective(
            self._after("generate"), self._trainer.evaluate,
            self._arrays(batch, "generate"), True)
        return outputs[logits][:count]

    def _padded(self, batch, method):
        """_arrays, padded where the trainer pads short batches: (arrays,
        the user's (rows, positions) or None)."""
        arrays = self._arrays(batch, method)
        if self._pad_batch is None:
            return arrays, None
        return self._pad_batch(arrays, self._compiled, method)

    def _arrays(self, batch, method):
        """The batch as a list of arrays in input order. A batch is a list
        of arrays or CPU torch tensors, one per input in declaration order,
        or a mapping by input name: a dict, or a tokenizer's BatchEncoding
        (with the labels added, as a data collator adds them)."""
        torch = sys.modules.get("torch")
        if isinstance(batch, np.ndarray) or batch is None or (
                torch is not None and isinstance(batch, torch.Tensor)) or (
                not isinstance(batch, (collections.abc.Mapping,
                                       collections.abc.Sequence))):
            raise TypeError(f"{method} takes the batch as a list of arrays, "
                            "one per input in declaration order (or a dict "
                            "by input name), not one array or value: "
                            f"{method}([x, labels]); got "
                            f"{type(batch).__name__}")
        if isinstance(batch, collections.abc.Mapping):
            unknown = sorted(set(batch) - set(self.input_names))
            missing = [n for n in self.input_names if n not in batch]
            if unknown or missing:
                problems = []
                if missing:
                    problems.append(f"missing {missing}")
                if unknown:
                    # A dropped input would train on something else than
                    # the user's batch says (an ignored attention mask).
                    problems.append(
                        f"{unknown} not inputs of the graph (import the "
                        "module with them among its example inputs to use "
                        "them)")
                raise ValueError(f"the batch names {sorted(batch)}; the "
                                 f"inputs are {self.input_names}: "
                                 f"{'; '.join(problems)}")
            return [_batch_array(batch[name], f"batch[{name!r}]")
                    for name in self.input_names]
        return [_batch_array(value, f"batch element {index}")
                for index, value in enumerate(batch)]

    def _after(self, what):
        return f"{what} (after step {self.steps_done})"

    def _collective(self, what, call, *args):
        """`call(*args)`, a collective call; a timeout, or a rank that left
        the job, names this rank and what it was doing, so that the ranks'
        messages say who was where (rank 0 in save, rank 1 in step 12)."""
        try:
            return call(*args)
        except RuntimeError as error:
            if "did not complete within" not in str(error) and \
                    "left the job" not in str(error):
                raise
            raise RuntimeError(f"rank {_zero.rank()}, in Trainer.{what}: "
                               f"{error}") from None

    def run(self, steps):
        """`steps` steps on synthetic batches; their losses. Progress, where
        shown, counts toward the last of them unless total_steps is set."""
        total = self.total_steps
        if total is None:
            self.total_steps = self.steps_done + steps
        try:
            return [self.step() for _ in range(steps)]
        finally:
            self.total_steps = total

    def state_dict(self):
        """The logical parameters, name -> numpy array in logical shape
        (no padding, whatever the stage). Collective: every rank must call
        it."""
        return self._collective(self._after("state_dict"),
                                self._trainer.state_dict)

    def load_state_dict(self, state, strict=True):
        """Replaces the parameters, as PyTorch's `load_state_dict`: `state`
        maps every parameter's name to a numpy array or CPU torch tensor of
        its logical shape (what `state_dict()` gives; bf16 ones as torch
        bf16 or as uint16 bit patterns), or is the path of a .safetensors
        file (a checkpoint consolidated by `zero-ckpt consolidate`). A
        trainer of `zero.from_torch` also takes the module's own
        `state_dict()`, under the module's names (tied names once or each,
        equal). Strict: every parameter must be there and no other name;
        master copies and the loss scale are taken when present. Optimizer
        state is left as it is. Collective: every rank passes the same
        whole state and takes its shard (the ranks compare a checksum of
        it). `strict=False` (PyTorch's partial load) is refused: load the
        whole state, `trainer.state_dict()` updated with yours."""
        if strict is not True:
            raise ValueError(
                "load_state_dict(strict=False): a partial load is not "
                "supported; load the whole state: "
                "state = trainer.state_dict(); state.update(yours); "
                "trainer.load_state_dict(state)")
        if not isinstance(state, (dict, str)) and hasattr(state, "__fspath__"):
            state = str(state)
        if isinstance(state, collections.abc.Mapping):
            if self._module_names is not None:
                state = self._module_names(state, self)
            state = {name: _as_array(value, f"load_state_dict: '{name}'",
                                     bf16_bits=True)
                     for name, value in state.items()}
        self._collective(self._after("load_state_dict"),
                         self._trainer.load_state_dict, state)

    def save(self, root, keep=0):
        """A checkpoint under `root` (docs/checkpoints.md); collective.
        Returns its directory."""
        return self._collective(self._after("save"), self._trainer.save,
                                str(root), keep)

    def load(self, path, schedule_total=None):
        """Loads a checkpoint taken under any ranks and stage; collective.

        A checkpoint whose learning-rate schedule has another length than
        this graph's (trained toward step 200, now compiled for 400) is
        refused, as resuming would silently change the rates, unless
        `schedule_total` is this graph's length: the word that the run
        continues under it."""
        if schedule_total is not None and (
                isinstance(schedule_total, bool) or
                not isinstance(schedule_total, int) or schedule_total < 1):
            raise ValueError("schedule_total is a number of steps >= 1, not "
                             f"{schedule_total!r}")
        self._collective(self._after("load"), self._trainer.load, str(path),
                         schedule_total)

    @property
    def steps_done(self):
        """Optimizer steps run so far (restored by `load`)."""
        return self._trainer.steps_done

    @property
    def check_finite(self):
        """Whether step refuses a float batch holding NaN or infinity (the
        default: such an input makes every weight it reaches NaN, whatever
        the loss shows), naming the array and the element. False trains
        on it as PyTorch would; the check costs a pass over the batch."""
        return self._trainer.check_finite

    @check_finite.setter
    def check_finite(self, value):
        self._trainer.check_finite = bool(value)

    @property
    def learning_rate(self):
        """The optimizer's learning rate: the configured `lr` (the peak of
        a schedule) until it is set.

        Setting it between steps (PyTorch's `param_group["lr"] = ...`)
        makes every later step run at its compiled rate times the new rate
        over the configured one: without a schedule, the new rate itself;
        with one, the schedule at its new peak, warmup, decay and floor
        scaled alike; each parameter group keeps its `lr_scale`. Every rank
        must set the same rate (the next collective call checks).
        Checkpoints record it and `load` restores it."""
        return self._trainer.learning_rate

    @learning_rate.setter
    def learning_rate(self, lr):
        if isinstance(lr, bool) or not isinstance(lr, (int, float)):
            raise TypeError("the learning rate is a number, not "
                            f"{type(lr).__name__}")
        self._trainer.learning_rate = float(lr)

    def learning_rates(self):
        """The rate the next step will use, per parameter group, the
        schedule applied: {"default": ..., "<group>": ...} ("default": the
        parameters in no group). PyTorch's `scheduler.get_last_lr()`."""
        return dict(self._trainer.learning_rates())
