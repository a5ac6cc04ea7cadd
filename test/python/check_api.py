"""The Python API's contract, part by part (test/python/api.test):

  check_api.py plan        the report and the IR forms
  check_api.py schedule    zero-schedule's prefetch window and live bound
  check_api.py errors      every mistake is a Python exception with a message
  check_api.py shutdown    what communicates after zero.shutdown() raises
  check_api.py state DIR   state_dict, numpy batches, save and load,
                           load_state_dict (run at N = 1 and 2; DIR shared
                           by both)
  check_api.py statefile FILE   load_state_dict from a consolidated
                           checkpoint (.safetensors)

Prints one `ok: ...` line per check; the first failure raises.
"""

import json
import os
import re
import shutil
import sys
import tempfile

import numpy as np

import zero


def ok(what):
    if zero.rank() == 0:
        print("ok:", what, flush=True)


def mlp(stage=3, batch=8, name="mlp"):
    graph = zero.Graph(name)
    x = graph.input("x", [batch, 16], "f32")
    labels = graph.input("labels", [batch], "i32")
    fc1 = zero.nn.Linear(graph, "fc1", 16, 32)
    fc2 = zero.nn.Linear(graph, "fc2", 32, 4)
    graph.minimize(zero.softmax_cross_entropy(fc2(zero.gelu(fc1(x))), labels))
    graph.config.optimizer(zero.AdamW(lr=1e-2)).enable_zero(stage > 0, stage)
    return graph


def expect(exception, fragment, call):
    try:
        call()
    except exception as error:
        if fragment not in str(error):
            raise AssertionError(f"{exception.__name__} without "
                                 f"'{fragment}': {error}") from error
        return str(error)
    raise AssertionError(f"no {exception.__name__} ('{fragment}')")


def check_plan():
    params = 16 * 32 + 32 + 32 * 4 + 4  # Ψ
    for stage in range(4):
        for ranks in (1, 2, 4):
            graph = mlp(stage)
            # A bucket being filled holds full-size gradients, which the
            # formula does not count.
            graph.config.zero.reduce_bucket_bytes = 0
            graph.config.zero.allgather_bucket_bytes = 0
            report = graph.compile(ranks).report
            assert report["stage"] == stage and report["ranks"] == ranks
            # f32 AdamW: P = G = 4 bytes, K = 8 (two moments), padding aside.
            divided = {0: 0, 1: 8, 2: 12, 3: 16}[stage] * params
            formula = 16 * params - divided + divided / ranks
            assert abs(report["model_state"] - formula) <= 16 * ranks * 4, \
                (stage, ranks, report["model_state"], formula)
            if ranks > 1 and stage > 0:
                assert "reduce_scatter" in report["traffic"], report
    ok("report: model state is the ZeRO formula at stages 0-3, N = 1, 2, 4")
    compiled = mlp(3).compile(2)
    forward, step, program = (compiled.ir(f) for f in
                              ("forward", "step", "program"))
    assert "train.minimize" in forward and "train.minimize" not in step
    assert "train.apply_gradient" in step, step
    assert "zrt.program" in program and "zrt.all_gather" in program
    arena = re.search(r" arena (\d+) ", program)
    assert arena and int(arena.group(1)) == compiled.report["arena_bytes"], \
        (arena, compiled.report["arena_bytes"])
    ok("ir: the forward ends in train.minimize, the step has its backward, "
       "the program gathers the stage-3 shards")
    launches = {fused: program.count(f'zrt.launch "train.{fused}"')
                for fused in ("matmul_bias_gelu", "matmul_bias",
                              "matmul_gelu_grad", "matmul_bias_grad")}
    assert all(launches.values()), launches
    graph = mlp(3)
    graph.config.zero.fuse_epilogues = False
    plain = graph.compile(2).ir("program")
    assert "train.matmul_bias" not in plain
    # What the fusion guarantees is the live bytes (no tensor lives longer);
    # the arena is packed by a heuristic over those lifetimes.
    live = [int(re.search(r"live_bytes = (\d+)", text).group(1))
            for text in (program, plain)]
    assert live[0] <= live[1], live
    ok(f"fuse_epilogues: {sum(launches.values())} fused matmuls by default, "
       "none with fuse_epilogues = False, no more live bytes")
    graph = mlp(2)
    graph.config.offload("optimizer").device_memory_budget("1GiB")
    assert graph.config.offload_choice == "optimizer"
    report = graph.compile(2).report
    plan = report["memory_plan"]
    assert plan["offload"] == "optimizer", plan
    assert plan["host_bytes"] >= report["optimizer_slots"], (plan, report)
    assert len(plan["decisions"]) == 4, plan
    assert "memory_plan" not in mlp(2).compile(2).report
    ok("offload: AdamW's slots planned in host memory, "
       f"{plan['host_link_bytes']} B over the host link per step")
    text = mlp(3).compile(4).report_text()
    assert text.startswith("ZeRO plan: stage 3, 4 rank(s)"), text
    assert "model state" in text and "(P+G+K)Ψ/N" in text, text
    ok("report_text: " + text.splitlines()[0])
    graph = mlp(2)
    names = [name for name, _ in graph.named_parameters()]
    assert names == ["fc1.w", "fc1.b", "fc2.w", "fc2.b"], names
    shown = [repr(graph), repr(graph.named_parameters()[0][1]),
             repr(graph.compile(2))]
    assert shown[0] == "zero.Graph('mlp', 4 parameters (4 trainable))", shown
    assert shown[1] == "zero.Parameter('fc1.w', f32[16, 32])", shown
    assert shown[2].startswith("zero.CompiledGraph(stage=2, ranks=2, "), shown
    assert re.fullmatch(r"\d+\.\d+\.\d+", zero.__version__), zero.__version__
    ok(f"reprs: {shown[1]}; zero.__version__ {zero.__version__}")


def check_schedule():
    reports = {}
    for prefetch in (0, 1 << 20):
        graph = mlp(3)
        graph.config.zero.allgather_bucket_bytes = 0
        graph.config.zero.prefetch_bytes = prefetch
        reports[prefetch] = graph.compile(2).report
    before, after = reports[0]["peak_gathered"], reports[1 << 20]["peak_gathered"]
    # fc1.w (16 x 32 f32) alone before; with every gather issued at the
    # start, all four parameters (2704 bytes) and fc2.w's re-gather for the
    # backward (32 x 4 f32) at once.
    assert before == 16 * 32 * 4 and after == 2704 + 512, (before, after)
    ok(f"prefetch_bytes: peak gathered {before} -> {after} B")
    bounded = mlp(3)
    bounded.config.zero.allgather_bucket_bytes = 0
    bounded.config.zero.prefetch_bytes = 1 << 20
    bounded.config.zero.max_live_gathered_bytes = 2304
    peak = bounded.compile(2).report["peak_gathered"]
    assert before <= peak <= 2304, peak
    ok(f"max_live_gathered_bytes 2304: peak gathered {peak} B")
    # Compiled for a machine: on the H100 preset the gathers move ahead of
    # their use (more gathered bytes alive at once); on the cpu preset, whose
    # collectives do not overlap compute, nothing moves.
    peaks = {}
    for machine in ("cpu", "h100-nvlink-8"):
        graph = mlp(3)
        graph.config.zero.allgather_bucket_bytes = 0
        graph.config.zero.machine = machine
        assert graph.config.zero.machine == machine
        peaks[machine] = graph.compile(2).report["peak_gathered"]
    assert peaks["cpu"] == before < peaks["h100-nvlink-8"], (before, peaks)
    ok(f"machine: peak gathered {peaks['cpu']} B on cpu, "
       f"{peaks['h100-nvlink-8']} B on h100-nvlink-8")


def check_errors():
    graph = mlp(3)
    msg = expect(ValueError, "ranks must be at least 1",
                 lambda: graph.compile(0))
    ok(f"compile(0): {msg}")
    msg = expect(ValueError, "is neither a preset",
                 lambda: zero.machine("no-such-machine"))
    ok(f"zero.machine of an unknown name: {msg[:msg.index(' (')]}")
    # A preset's dict, written to a file, is the same machine read back.
    preset = zero.machine("h100-nodes-ib400")
    assert preset["links"][0] == {"bandwidth": 45e9, "latency": 6e-6}, preset
    assert preset["device_memory"] == 85520809984, preset
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "machine.json")
        with open(path, "w") as file:
            json.dump(preset, file)
        assert zero.machine(path) == preset, (zero.machine(path), preset)
    ok(f"zero.machine: {preset['name']} reads back from a file")
    bad = mlp(3, name="bad")
    bad.config.enable_zero(True, 5)
    msg = expect(ValueError, "stage", lambda: bad.compile(2))
    ok(f"enable_zero(stage=5): {msg}")
    msg = expect(ValueError, "unknown dtype 'f64'",
                 lambda: zero.Graph("g").input("x", [2], "f64"))
    ok(f"input dtype f64: {msg}")
    # Build errors are raised at the op that made them, not at compile().
    broken = zero.Graph("broken")
    a = broken.input("a", [4, 3], "f32")
    b = broken.input("b", [5, 2], "f32")
    msg = expect(ValueError, "matmul: inner dimensions differ",
                 lambda: zero.matmul(a, b))
    ok(f"matmul of [4, 3] by [5, 2]: {msg.splitlines()[0]}")
    msg = expect(ValueError, "reshape: cannot reshape [4, 3] f32",
                 lambda: zero.reshape(a, [5]))
    ok(f"reshape to a wrong size, at the call: {msg}")
    msg = expect(ValueError, "operands must be float tensors of one shape",
                 lambda: a * b)
    ok(f"a * b of two shapes, at the call: {msg}")
    msg = expect(ValueError, "needs positive extents",
                 lambda: zero.nn.Linear(broken, "l", 4, 0))
    ok(f"Linear(g, 'l', 4, 0), at the call: {msg}")
    msg = expect(ValueError, "matmul", lambda: broken.compile(1))
    ok("and compile() still refuses the graph")
    msg = expect(TypeError, "Trainer takes a CompiledGraph",
                 lambda: zero.Trainer(graph))
    ok(f"Trainer before compile: {msg}")
    msg = expect(ValueError, "compiled for 2 ranks but this job has 1",
                 lambda: zero.Trainer(graph.compile(2)))
    ok(f"ranks mismatch: {msg}")
    msg = expect(ValueError, "not the graph's inputs in declaration order",
                 lambda: zero.Trainer(graph.compile(1),
                                      input_names=["labels", "x"]))
    ok(f"input_names in another order: {msg}")
    trainer = zero.Trainer(graph.compile(1), input_names=["x", "labels"])
    labels = np.zeros(8, np.int32)
    msg = expect(ValueError, "expected f32[8, 16]", lambda: trainer.step(
        [np.zeros((4, 16), np.float32), labels]))
    ok(f"batch of the wrong shape: {msg}")
    msg = expect(ValueError, "(one global batch: 8 rows", lambda:
                 trainer.step([np.zeros((16, 16), np.float32),
                               np.zeros(16, np.int32)]))
    ok(f"two global batches at once: {msg}")
    msg = expect(TypeError, "not accepted", lambda: trainer.step(
        [np.zeros((8, 16), np.float64), labels]))
    ok(f"batch of float64: {msg}")
    # A view (a transpose, a slice) is read as its values, as PyTorch reads
    # a non-contiguous tensor: the same loss as its contiguous copy.
    rng = np.random.default_rng(5)
    wide = rng.standard_normal((16, 12)).astype(np.float32)
    view = wide.T[2:10]  # [8, 16], neither row- nor column-contiguous
    assert not view.flags.c_contiguous
    probe = zero.Trainer(graph.compile(1), input_names=["x", "labels"])
    twin = zero.Trainer(graph.compile(1), input_names=["x", "labels"])
    got = probe.step([view, labels])
    want = twin.step([np.ascontiguousarray(view), labels])
    assert np.float32(got).tobytes() == np.float32(want).tobytes(), (got, want)
    ok("a strided view as a batch: the loss of its contiguous copy, bitwise")
    msg = expect(ValueError, "is i32[7], expected i32[8]", lambda: trainer.step(
        [np.zeros((8, 16), np.float32), np.zeros(14, np.int32)[::2]]))
    assert "contiguous" not in msg, msg
    ok(f"a sliced input of the wrong length: {msg}")
    msg = expect(ValueError, "the inputs are ['x', 'labels']",
                 lambda: trainer.step({"x": np.zeros((8, 16), np.float32)}))
    ok(f"batch missing an input: {msg}")
    msg = expect(ValueError, "ids in [0, 4)", lambda: trainer.step(
        [np.zeros((8, 16), np.float32), np.full(8, 9, np.int32)]))
    ok(f"label out of range: {msg}")
    poisoned = np.ones((8, 16), np.float32)
    poisoned[2, 3] = np.nan
    msg = expect(ValueError, "holds nan at element 35 (row 2)",
                 lambda: trainer.step([poisoned, labels]))
    ok(f"NaN in a batch: {msg}")
    trainer.check_finite = False
    loss = trainer.step([poisoned, labels])
    if loss == loss:
        raise AssertionError(f"a NaN batch trained to a finite loss {loss}")
    ok("with check_finite = False the NaN batch trains, to a NaN loss")

    small = mlp(3)
    small.config.zero.max_live_gathered_bytes = 100
    msg = expect(RuntimeError, "max-live-gathered-bytes is 100 bytes",
                 lambda: small.compile(2))
    ok(f"max_live_gathered_bytes 100: {msg.splitlines()[1][:60]}")
    negative = mlp(3)
    negative.config.zero.prefetch_bytes = -1
    msg = expect(ValueError, "must not be negative",
                 lambda: negative.compile(2))
    ok(f"prefetch_bytes -1: {msg}")
    unknown = mlp(3)
    unknown.config.zero.machine = "a100"
    msg = expect(RuntimeError, "machine 'a100' is neither a preset",
                 lambda: unknown.compile(2))
    ok(f"machine 'a100': {msg.splitlines()[1][:60]}")
    msg = expect(ValueError, "offload must be", lambda: mlp(2).config.offload("gpu"))
    ok(f"offload('gpu'): {msg}")
    msg = expect(ValueError, "is not a number of bytes",
                 lambda: mlp(2).config.device_memory_budget("lots"))
    ok(f"device_memory_budget('lots'): {msg}")
    tight = mlp(2)
    tight.config.offload("auto").device_memory_budget("1KiB")
    msg = expect(RuntimeError, "no placement fits", lambda: tight.compile(2))
    ok(f"a budget nothing fits: {msg.splitlines()[-1][:72]}")

    class NoBuild(zero.nn.Graph):
        pass
    expect(NotImplementedError, "must define build",
           lambda: NoBuild("n").compile(1, x=([2], "f32")))
    ok("nn.Graph without build: NotImplementedError")
    msg = expect(FileNotFoundError, "no-such-checkpoint",
                 lambda: trainer.load("/no-such-checkpoint"))
    ok(f"load of a missing checkpoint: {msg.splitlines()[0]}")

    # Issue 27's defects, each a clear exception now.
    x = zero.Graph("dtypes").input("x", [2, 3], "bf16")
    assert (x.dtype, x.shape) == ("bf16", [2, 3]), (x.dtype, x.shape)
    ok("Tensor.dtype: bf16")
    msg = expect(ValueError, "has an array 'input2' that no input takes",
                 lambda: trainer.step([np.zeros((8, 16), np.float32), labels,
                                       labels]))
    ok(f"an extra array in the batch: {msg}")
    msg = expect(ValueError, "array 'labels' holds", lambda: trainer.step(
        [np.zeros((8, 16), np.float32), np.full(8, 9, np.int32)]))
    ok("messages name the inputs given (array 'labels', not input1)")
    msg = expect(TypeError, "not one array",
                 lambda: trainer.step(np.zeros((8, 16), np.float32)))
    ok(f"step(array): {msg}")
    msg = expect(ValueError, "keep must be 0",
                 lambda: trainer.save("/tmp/never-written", keep=-1))
    ok(f"save(keep=-1): {msg}")

    late = mlp(3, name="late")
    late.config.precision("bf16")
    msg = expect(RuntimeError, "graph.config.precision(...) in Python",
                 lambda: late.compile(1))
    ok("precision set after declaring: names the Python call")

    class Net(zero.nn.Graph):
        def build(self, x):
            return zero.reduce_sum(x, [0, 1])
    msg = expect(ValueError, "must be given as (shape, dtype)",
                 lambda: Net("n").compile(1, x=[2, 2]))
    ok(f"compile(1, x=[2, 2]): {msg}")


def check_state(directory):
    ranks = zero.world_size()
    graph = mlp(3, batch=8 // ranks)
    trainer = zero.Trainer(graph.compile(ranks), seed=7,
                           input_names=["x", "labels"])
    rng = np.random.default_rng(3)
    batches = [[rng.standard_normal((8, 16), dtype=np.float32),
                rng.integers(0, 4, 8, dtype=np.int32)] for _ in range(4)]
    losses = [trainer.step(batch) for batch in batches]
    state = trainer.state_dict()
    assert state["fc1.w"].shape == (16, 32), state["fc1.w"].shape
    assert state["fc2.b"].dtype == np.float32
    ok(f"state_dict: {len(state)} tensors in logical shapes")
    # A step without a batch after numpy ones is the seed's synthetic batch
    # again, not the last array repeated.
    repeated = zero.Trainer(graph.compile(ranks), seed=7)
    synthetic = zero.Trainer(graph.compile(ranks), seed=7)
    repeated.step(batches[0])
    synthetic.step(batches[0])
    assert repeated.step(batches[0]) != synthetic.step(), \
        "step() after step(batch) reused the batch"
    ok("step() after step(batch) goes back to the synthetic batches")
    # Save after 2 steps in a fresh trainer, load it in another, continue.
    first = zero.Trainer(graph.compile(ranks), seed=7)
    for batch in batches[:2]:
        first.step(batch)
    saved = first.save(os.path.join(directory, f"n{ranks}"))
    saved_state = first.state_dict()
    if zero.rank() == 0:
        np.savez(os.path.join(directory, f"n{ranks}-state.npz"), **saved_state)
    second = zero.Trainer(graph.compile(ranks), seed=99)
    second.load(saved)
    assert second.steps_done == 2
    resumed = [second.step(batch) for batch in batches[2:]]
    assert resumed == losses[2:], (resumed, losses[2:])
    ok(f"save at step 2, load, steps 3-4: losses bitwise equal at N={ranks}")
    # Resuming under other hyper-parameters is refused, saying which.
    faster = mlp(3, batch=8 // ranks)
    faster.config.optimizer(zero.AdamW(lr=2e-2, betas=(0.9, 0.95)))
    msg = expect(ValueError, "train.adamw's beta2 is 0.999 in the checkpoint "
                 "and 0.95 here; train.adamw's lr is 0.01 in the checkpoint "
                 "and 0.02 here",
                 lambda: zero.Trainer(faster.compile(ranks)).load(saved))
    ok(f"load under another optimizer: {msg[msg.index('trained'):]}")
    after = second.state_dict()
    for name, value in state.items():
        assert np.array_equal(after[name], value), name
    ok("and the final state_dict equal, tensor by tensor")
    if ranks == 1 and os.path.isdir(os.path.join(directory, "n2")):
        other = zero.Trainer(graph.compile(1), seed=5)
        other.load(os.path.join(directory, "n2"))
        mine = other.state_dict()
        theirs = np.load(os.path.join(directory, "n2-state.npz"))
        assert sorted(mine) == sorted(theirs.files), (sorted(mine),
                                                      theirs.files)
        for name in theirs.files:
            assert np.array_equal(mine[name], theirs[name]), name
        ok("a 2-rank checkpoint loaded on 1 rank: every tensor equals the "
           "2-rank state it was saved from")
    if ranks == 1:
        check_corrupt_load(graph, saved, batches, losses, directory)
    check_load_state_dict(graph, saved_state, after)
    check_evaluate(batches)


def check_corrupt_load(graph, saved, batches, losses, directory):
    """A load reads each file once, into the state, with its CRC-32
    computed on the way: a corrupt file is found after it has overwritten
    the state. The trainer then refuses to step or save until a load
    succeeds."""
    corrupt = os.path.join(directory, "corrupt")
    shutil.rmtree(corrupt, ignore_errors=True)
    shutil.copytree(saved, corrupt)
    (name,) = [f for f in os.listdir(corrupt) if f.endswith(".safetensors")]
    with open(os.path.join(corrupt, name), "r+b") as f:
        f.seek(-4, os.SEEK_END)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0x01]))
    trainer = zero.Trainer(graph.compile(1), seed=99)
    msg = expect(RuntimeError, "CRC-32", lambda: trainer.load(corrupt))
    msg = expect(RuntimeError, "the training state is not usable",
                 lambda: trainer.step(batches[2]))
    assert "CRC-32" in msg, msg
    expect(RuntimeError, "the training state is not usable",
           lambda: trainer.save(os.path.join(directory, "never")))
    assert not os.path.exists(os.path.join(directory, "never"))
    trainer.load(saved)
    resumed = [trainer.step(batch) for batch in batches[2:]]
    assert resumed == losses[2:], (resumed, losses[2:])
    ok("a load that fails its CRC-32 leaves a trainer that refuses to step "
       "or save, naming the file, until a good load: then bitwise again")


def check_load_state_dict(graph, saved_state, other_state):
    ranks = zero.world_size()
    trainer = zero.Trainer(graph.compile(ranks), seed=99)
    trainer.load_state_dict(saved_state)
    loaded = trainer.state_dict()
    assert sorted(loaded) == sorted(saved_state)
    for name, value in saved_state.items():
        assert loaded[name].tobytes() == value.tobytes(), name
    ok(f"load_state_dict(state_dict()) round trip bitwise at N={ranks}")
    mistakes = [
        ("a missing parameter", ValueError, "has no tensor 'fc2.b'",
         {k: v for k, v in other_state.items() if k != "fc2.b"}),
        ("an unknown name", ValueError, "the program has no parameter 'fc3.w'",
         dict(other_state, **{"fc3.w": other_state["fc2.w"]})),
        ("a wrong shape", ValueError, "tensor 'fc1.w' has shape [32, 16]",
         dict(other_state, **{"fc1.w": other_state["fc1.w"].T.copy()})),
        ("int32 for a float parameter", ValueError, "tensor 'fc1.b' is i32",
         dict(other_state, **{"fc1.b": np.zeros(32, np.int32)})),
        ("not a dict", TypeError, "takes a dict of numpy arrays", [1, 2]),
    ]
    for what, exception, fragment, state in mistakes:
        expect(exception, fragment, lambda: trainer.load_state_dict(state))
    after = trainer.state_dict()
    assert all(after[k].tobytes() == v.tobytes()
               for k, v in saved_state.items())
    ok("load_state_dict refuses a missing parameter, an unknown name, a "
       "wrong shape or type, and leaves the state as it was")
    bf16 = zero.Graph("mlp16")
    bf16.config.precision("bf16")
    x = bf16.input("x", [4, 16], "f32")
    labels = bf16.input("labels", [4], "i32")
    fc = zero.nn.Linear(bf16, "fc", 16, 4)
    bf16.minimize(zero.softmax_cross_entropy(fc(x), labels))
    bf16.config.optimizer(zero.AdamW(lr=1e-2))
    source = zero.Trainer(bf16.compile(ranks), seed=1)
    source.step()
    state = source.state_dict()
    assert state["fc.w"].dtype == np.uint16 and "fc.w.master" in state, \
        {k: v.dtype for k, v in state.items()}
    target = zero.Trainer(bf16.compile(ranks), seed=2)
    target.load_state_dict(state)
    assert all(target.state_dict()[k].tobytes() == v.tobytes()
               for k, v in state.items())
    ok("bf16: parameters as uint16 bit patterns and their f32 masters "
       "round trip bitwise")
    # numpy has no bfloat16 and defaults to int64: float32 features feed the
    # bf16 input (rounded to nearest even), int64 labels the i32 one.
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4 * ranks, 16), dtype=np.float32)
    labels = rng.integers(0, 4, 4 * ranks)
    assert labels.dtype == np.int64
    wide = zero.Trainer(bf16.compile(ranks), seed=1).step([x, labels])
    narrow = zero.Trainer(bf16.compile(ranks), seed=1).step(
        [x, labels.astype(np.int32)])
    assert wide == narrow, (wide, narrow)
    expect(ValueError, "does not fit the input's i32",
           lambda: zero.Trainer(bf16.compile(ranks), seed=1).step(
               [x, labels + 2**40]))
    ok("a bf16 step takes float32 features and int64 labels (the same loss "
       "as int32 labels)")


def check_evaluate(batches):
    ranks = zero.world_size()
    for stage, accumulate in ((3, 1), (2, 2)):
        graph = mlp(stage, batch=8 // ranks // accumulate)
        graph.config.gradient_accumulation_steps(accumulate)
        compiled = graph.compile(ranks)
        evaluated = zero.Trainer(compiled, seed=7)
        stepped = zero.Trainer(compiled, seed=7)
        for batch in batches[:3]:
            before = evaluated.state_dict()
            loss = evaluated.evaluate(batch)
            after = evaluated.state_dict()
            assert all(after[k].tobytes() == v.tobytes()
                       for k, v in before.items()), "evaluate changed state"
            assert loss == stepped.step(batch), (stage, accumulate, loss)
            evaluated.step(batch)
        assert evaluated.steps_done == 3
    ok(f"evaluate equals the step's loss on the same batch and parameters, "
       f"bitwise, and changes nothing (stage 3; stage 2 with 2 micro-batches; "
       f"N={ranks})")
    both = [np.concatenate([a, b]) for a, b in zip(batches[0], batches[1])]
    mean = (evaluated.evaluate(batches[0]) + evaluated.evaluate(batches[1])) / 2
    assert abs(evaluated.evaluate(both) - mean) <= 1e-6 * abs(mean)
    ok("evaluate over two global batches is the mean of their losses")
    expect(ValueError, "is f32[3, 16], expected f32[4, 16]",
           lambda: evaluated.evaluate([batches[0][0][:3], batches[0][1]]))
    ok("evaluate refuses a batch of the wrong shape")


def check_state_file(path):
    graph = mlp(3, batch=8 // zero.world_size())
    trainer = zero.Trainer(graph.compile(zero.world_size()), seed=5)
    trainer.load_state_dict(path)
    loaded = trainer.state_dict()
    ok(f"load_state_dict('{os.path.basename(path)}'): {len(loaded)} "
       "parameters from a consolidated checkpoint")
    return loaded


def check_shutdown():
    """After zero.shutdown(), what communicates raises instead of crashing
    the interpreter (MPI cannot run again in the process)."""
    trainer = zero.Trainer(mlp(0).compile(1))
    trainer.step()
    zero.shutdown()
    for what, call in [("step", trainer.step),
                       ("state_dict", trainer.state_dict),
                       ("save", lambda: trainer.save("/tmp/never-written")),
                       ("world_size", zero.world_size)]:
        msg = expect(RuntimeError, "zero.shutdown() has finalized MPI", call)
        print(f"ok: {what} after shutdown: {msg[:60]}", flush=True)
    zero.shutdown()  # again: nothing left to do, no error
    print("ok: shutdown twice", flush=True)


def main():
    part = sys.argv[1]
    {"plan": check_plan, "schedule": check_schedule, "errors": check_errors,
     "shutdown": check_shutdown,
     "state": lambda: check_state(sys.argv[2]),
     "statefile": lambda: check_state_file(sys.argv[2])}[part]()


if __name__ == "__main__":
    main()
