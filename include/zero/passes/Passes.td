//===- Passes.td - The ZeRO passes -------------------------*- tablegen -*-===//
//
// Every pass that turns a single-device training step into a data-parallel
// ZeRO step, in pipeline order. All are module passes: they rewrite the
// persistent state (`train.param`) and the step functions together.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_PASSES
#define ZERO_PASSES

include "mlir/Pass/PassBase.td"

// The enum-valued options list their choices (clEnumValN): a bad value fails
// when the options are parsed, with the choices named, and --help lists
// them. The enums are zero/support/OptionEnums.td's and train's
// StorageLayoutKind, so that every front end spells a choice alike.

class LayoutOption<string desc> : Option<"layout", "layout",
    "::zero::train::StorageLayoutKind", "::zero::train::StorageLayoutKind::flat",
    desc, [{::llvm::cl::values(
      clEnumValN(::zero::train::StorageLayoutKind::flat, "flat",
                 "padded 1-D chunks (DeepSpeed, ColossalAI)"),
      clEnumValN(::zero::train::StorageLayoutKind::dim0, "dim0",
                 "dimension 0 split, padding rows (FSDP2)"))}]>;

class MeshSchemeOption<string desc> : Option<"meshScheme", "mesh-scheme",
    "::zero::MeshScheme", "::zero::MeshScheme::hybrid", desc,
    [{::llvm::cl::values(
      clEnumValN(::zero::MeshScheme::hybrid, "hybrid",
                 "shard within a node, replicate across nodes"),
      clEnumValN(::zero::MeshScheme::full, "full",
                 "shard over both axes, gathering across nodes first"))}]>;

class ReduceDtypeOption<string desc> : Option<"reduceDtype", "reduce-dtype",
    "::zero::ReduceDtype", "::zero::ReduceDtype::gradient", desc,
    [{::llvm::cl::values(
      clEnumValN(::zero::ReduceDtype::gradient, "gradient",
                 "each gradient in its own type"),
      clEnumValN(::zero::ReduceDtype::f32, "f32",
                 "16-bit gradients widened to f32 first (FSDP's "
                 "reduce_dtype=float32)"))}]>;

class OffloadOption<string desc> : Option<"offload", "offload",
    "::zero::OffloadPlacement", "::zero::OffloadPlacement::none", desc,
    [{::llvm::cl::values(
      clEnumValN(::zero::OffloadPlacement::none, "none",
                 "everything in device memory"),
      clEnumValN(::zero::OffloadPlacement::optimizer, "optimizer",
                 "the optimizer state and its update in host memory"),
      clEnumValN(::zero::OffloadPlacement::optimizerAndParams,
                 "optimizer+params",
                 "the parameters' shards too (stage 3)"),
      clEnumValN(::zero::OffloadPlacement::automatic, "auto",
                 "the least of these that fits device-memory-budget"))}]>;

class ReportFormatOption<string varName, string arg, string default,
                         string desc, string noneChoice> : Option<varName, arg,
    "::zero::ReportFormat", "::zero::ReportFormat::" # default, desc,
    "::llvm::cl::values(" # noneChoice # [{
      clEnumValN(::zero::ReportFormat::text, "text", "a table"),
      clEnumValN(::zero::ReportFormat::json, "json", "one JSON object"),
      clEnumValN(::zero::ReportFormat::timeline, "timeline",
                 "an SVG of the predicted step; needs machine"))}]>;

def TrainAutodiff : Pass<"train-autodiff", "::mlir::ModuleOp"> {
  let summary = "Generates the backward pass and apply_gradients of a forward-only step";
  let description = [{
    In every `train.step` function that names its loss with
    `train.minimize %loss`, builds the reverse-mode backward pass after the
    forward (seeded with d loss = 1), one `train.apply_gradient` per
    trainable parameter the loss depends on, and removes the
    `train.minimize`. Each op's gradient comes from its
    `train::GradientOpInterface` rule: every train compute op has one, and
    `arith.addf`, `subf`, `mulf`, `divf` and `negf` on f32/bf16/f16 tensors
    get one as external models.

    Only values on a path from a trainable parameter (`train.load` of a
    `param`-role `train.param`) to the loss are differentiated: frozen
    parameters, step inputs, integer ids and labels get no gradient, and no
    gradient op is left whose result no parameter needs. A value used
    several times gets the sum (`train.add`) of its uses' gradients, added
    in forward order; a tied parameter (loaded several times, or one load
    used several times) gets one summed gradient and one `apply_gradient`.
    A trainable parameter the loss does not depend on gets none.

    The optimizer is `optimizer=NAME`, or else the module's only
    `train.optimizer`. An op without a gradient rule on the path from a
    parameter to the loss, control flow on that path, a loss that depends
    on no trainable parameter, a step that already applies gradients, or a
    sharded parameter (run this pass before `zero-shard`) is a located
    error.

    Activation checkpointing: with `recompute=true`, every result of a
    forward op marked with the unit attribute `train.recompute` that the
    backward uses is recomputed there, by a clone of the op (and of the
    marked ops it depends on) emitted just before its first backward use;
    the forward values then die at their last forward use. Unmarked values
    (parameters, block inputs and outputs) are used directly. A marked op
    that reads or writes state is an error. With `recompute=false` (the
    default) the marks are ignored. Either way the pass removes them.

    Dynamic loss scaling: when the optimizer has `loss_scale`, the pass
    declares the `scaler` state `@loss_scale` (initially the optimizer's
    value) and `@loss_scale.good_steps`, seeds the backward with the loaded
    scale instead of 1, unscales all gradients with one `train.unscale`,
    gives every `train.apply_gradient` `skip_if %found_inf`, and ends the
    step with `train.update_loss_scale` and the stores of the new state.
  }];
  let options = [
    Option<"optimizer", "optimizer", "std::string", "\"\"",
           "Symbol name (without @) of the train.optimizer the generated "
           "apply_gradients use; empty takes the module's only optimizer">,
    Option<"recompute", "recompute", "bool", "false",
           "Recompute in the backward the results of forward ops marked "
           "train.recompute instead of keeping them from the forward "
           "(activation checkpointing); false ignores the marks">,
  ];
  let dependentDialects = ["::zero::train::TrainDialect",
                           "::mlir::arith::ArithDialect"];
}

def TrainMaterializeOptimizer : Pass<"train-materialize-optimizer", "::mlir::ModuleOp"> {
  let summary = "Turns apply_gradient into explicit optimizer slots and update ops";
  let description = [{
    Every `train.apply_gradient %g to @p with @opt` becomes persistent slots
    (`@p.momentum` for momentum SGD, `@p.m` and `@p.v` for Adam and AdamW,
    zero-initialized), an fp32 master copy `@p.master` when `@p` is 16-bit,
    and the explicit update op (`train.sgd`, `train.sgd_momentum`,
    `train.adam`, `train.adamw`) reading and writing them, so that every byte
    of optimizer state is a visible persistent tensor. Under mixed precision
    the update runs on the master copy and the result is cast back into the
    16-bit parameter.

    With `accumulate-steps=K` (K > 1) the step function becomes a
    micro-step that adds each gradient into a zero-initialized accumulator
    `@p.grad` (role `grad_accum`, the gradient's type) and carries
    `train.accumulate_steps = K`; a new function `@<step>_apply` (marked
    `train.apply_step`) averages the accumulators over the K micro-batches,
    applies the updates and resets the accumulators. The runtime calls the
    step K times, then the apply function once.

    A parameter may receive one `apply_gradient`: a tied parameter's
    gradients are summed in the step before they are applied.
  }];
  let options = [
    Option<"accumulateSteps", "accumulate-steps", "int64_t", "1",
           "Micro-batches per optimizer step; above 1, gradients are "
           "accumulated in persistent accumulators">,
  ];
  let dependentDialects = ["::zero::train::TrainDialect",
                           "::mlir::arith::ArithDialect"];
}

def TrainRebatch : Pass<"train-rebatch", "::mlir::ModuleOp"> {
  let summary = "The step at its batch divided by a factor: the micro-batch of more accumulation";
  let description = [{
    Every step function (`train.step`) is rewritten to take `B / factor`
    rows where it took `B`: the same training, run as `factor` times the
    micro-batches (`accumulate-steps`), holds a `factor`-th of the
    activations. The step's arguments are batch-major (dimension 0 is the
    batch, the dimension dist-data-parallel splits), so dimension 0 of
    each ranked argument is divided; so is dimension 0 of every result of
    an op that reads a divided value (a reshape of `[B, T, D]` to
    `[B * T, D]` gives `[B * T / factor, D]`), and of a splat constant an
    op combines with one (an epsilon of the batch's shape). Each rewritten
    op is verified: one whose result does not carry the batch in dimension
    0 (a transpose moving it, a reduction over it) fails the rewrite with
    its verifier's diagnostic, so a step rebatched is the same step on
    fewer rows, never another one.

    zero-pipeline's report uses it to plan "accumulate-steps=A*k
    micro-batch=B/k" as a way to fit a device.

    ```mlir
    // train-rebatch{factor=2}: tensor<4x16xi32> becomes tensor<2x16xi32>,
    // the embedding's tensor<4x16x64xf32> tensor<2x16x64xf32>, ...
    ```
  }];
  let options = [
    Option<"factor", "factor", "int64_t", "2",
           "What the batch is divided by; it must divide the batch">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def DistTensorParallel : Pass<"dist-tensor-parallel", "::mlir::ModuleOp"> {
  let summary = "Splits a training step's parameters and compute over a tensor-parallel axis";
  let description = [{
    The single-device step (forward and backward, with its
    `train.apply_gradient`s or the updates `train-materialize-optimizer`
    made) becomes the step every rank of a tensor-parallel group of `tp`
    ranks runs, placed on `#dist.placement<cpu, [tp]>` with
    `dist.tp_axis = 0`. Each parameter's plan is its `dist.sbp`: `[S(d)]`
    splits dimension `d` over the group (a column-parallel linear's `[in,
    out]` weight is `[S(1)]`, its bias `[S(0)]`; a row-parallel one's weight
    `[S(0)]`), `[B]` or no plan keeps it whole on every rank. The plan
    becomes the parameter's `split dim d over 0`, and its master copy, slots
    and accumulator are split with it.

    The SBP then propagates through the step in program order, op by op, by
    each op's signatures (`zero/analysis/SbpRules.h`): among those whose
    split dimensions divide by `tp`, the one the operands already have, else
    the one whose operands are cheapest to change. A change is a
    `dist.reshard` before the op (`dist-lower-reshard` makes it a
    collective): partial to broadcast (an all-reduce: a row-parallel
    linear's output, a column-parallel one's input gradient), split to
    broadcast (an all-gather), broadcast to split (a local slice). Every
    result's type becomes the rank's local tensor. The step's inputs are
    whole on every rank; what it returns and what it stores are made to
    match (a returned loss broadcast, a stored parameter in its plan's
    split).

    Not yet (each refused naming the op): sequence parallelism (partial to
    split), a vocabulary-parallel embedding and loss, gradient clipping and
    loss scaling, ops with regions. Run it before `dist-data-parallel`,
    which then puts the data-parallel axes in front of the tensor-parallel
    one.
  }];
  let options = [
    Option<"tp", "tp", "int64_t", "1",
           "Ranks of the tensor-parallel group (at least 1)">,
  ];
  let dependentDialects = ["::zero::dist::DistDialect"];
}

def DistLowerReshard : Pass<"dist-lower-reshard", "::mlir::ModuleOp"> {
  let summary = "Lowers dist.reshard to the collective of the boxing table";
  let description = [{
    Each `dist.reshard` whose SBP differs along one placement axis becomes
    the collective over that axis OneFlow's boxing table names: `P -> B`
    `dist.all_reduce`, `P -> S(d)` `dist.reduce_scatter`, `S(d) -> B`
    `dist.all_gather`, `B -> S(d)` `dist.slice` (local), `S(i) -> S(j)`
    `dist.all_to_all`. A reshard that changes nothing folds; one that
    changes several axes, or asks for a partial value from a whole one, is
    refused.
  }];
  let dependentDialects = ["::zero::dist::DistDialect"];
}

def DistDataParallel : Pass<"dist-data-parallel", "::mlir::ModuleOp"> {
  let summary = "Makes a single-device training step an SPMD data-parallel step";
  let description = [{
    The step runs on every rank of placement axis 0 with the rank's local
    batch: each step input is marked `dist.sbp = #dist.sbp<[S(0)]>` (the
    global batch is the ranks' local batches stacked along dimension 0; the
    step's shapes are those of one rank's micro-batch and are not changed).
    Every gradient that reaches an optimizer (the gradient operand of
    `train.apply_gradient` or of an explicit update op) is averaged with
    `dist.all_reduce mean`, inserted right after the gradient is produced so
    that it can overlap the rest of the backward. Every floating-point
    scalar the step returns (the loss) is averaged over the ranks too; other
    results stay per rank. The module is marked `dist.zero_stage = 0`.

    The group comes from the module's `dist.placement`; `ranks=N` sets it
    (replacing a placement whose group size differs, while nothing is
    sharded yet). Gradients accumulated by `train-materialize-optimizer` are
    reduced once per optimizer step, in the apply function, as DDP's
    `no_sync` does.

    `mesh=R,S` places the step on a two-level grid `#dist.placement<cpu,
    [R, S]>` of R*S ranks instead: axis 0 across nodes (R of them), axis 1
    within a node (S ranks), ranks numbered row-major (rank = node * S +
    local rank, so a node's ranks are consecutive, as mpirun places them).
    The batch is split over both axes in rank order (`[S(0), S(0)]`), and
    every average is taken within the node first and then across nodes:
    `dist.all_reduce mean axis 1`, then `axis 0` (the mean of equal groups'
    means is the mean over all ranks, to rounding), so that the slow links
    carry one all-reduce of each gradient per node pair. A grid of more
    axes averages from the last axis to the first.

    `reduce-dtype=f32` averages 16-bit gradients in f32, as FSDP's
    `MixedPrecision(reduce_dtype=torch.float32)` (the default of torchtitan
    and of llm-foundry's amp): each bf16 or f16 gradient is widened by a
    `train.cast` before its average, the average carries f32 (twice the
    bytes), and the optimizer reads the f32 average, which updates the f32
    master copy without being rounded to 16 bits. The module is marked
    `dist.reduce_type = f32`, so that zero-shard reduces accumulated
    micro-step gradients in f32 too. The default, `gradient`, averages each
    gradient in its own type.
  }];
  let options = [
    Option<"ranks", "ranks", "int64_t", "0",
           "Data-parallel ranks; 0 takes the group size of the module's "
           "dist.placement">,
    ListOption<"mesh", "mesh", "int64_t",
               "A grid of ranks, outermost (slowest) axis first: mesh=2,4 is "
               "2 nodes of 4 ranks; empty: one axis of `ranks`">,
    ReduceDtypeOption<"The type gradients are averaged in">,
  ];
  let dependentDialects = ["::zero::dist::DistDialect"];
}

def ZeroShard : Pass<"zero-shard", "::mlir::ModuleOp"> {
  let summary = "Partitions optimizer state, gradients and parameters (ZeRO 1/2/3)";
  let description = [{
    Rewrites a data-parallel step (after `train-materialize-optimizer` and
    `dist-data-parallel`) into ZeRO stage 1, 2 or 3. On a two-level mesh
    (`#dist.placement<cpu, [R, S]>`, axis 0 across nodes, axis 1 within a
    node) `mesh-scheme` chooses how:

    * `hybrid` (the default; FSDP2's `(Replicate(), Shard(0))`, OneFlow's
      `(B, S(0))`): the state is sharded over axis 1, within a node
      (`sharded ... over 1`), and replicated across nodes; each gradient is
      reduce-scattered within the node and its shard averaged across nodes
      (`dist.all_reduce mean axis 0`), and parameters are gathered within
      the node only;
    * `full` (`(S(0), S(0))`, ZeRO-3 over all R * S ranks): the state is
      cut over both axes (`sharded ... over 1, 0`: the rank at `(r, s)`
      holds shard `s * R + r`, the same shards a one-axis run of R * S
      ranks holds, so checkpoints move between the two). Gradients are
      reduce-scattered within the node, then across nodes; parameters are
      gathered across nodes first, which moves each rank's `1/N` only, then
      within the node. With `hpz` (stage 3; ZeRO++'s hierarchical
      partitioning) the value after the gather across nodes is kept as a
      secondary shard (`1/S` of the parameter) and every later gather of
      the parameter, the backward's included, starts from it: the backward
      stays within the node, and reads the forward's values by
      construction.

    The stages:

    * stage 1: optimizer slots and master copies are stored sharded; each
      gradient stays full-size until the update, where it is
      reduce-scattered (mean); the update runs on the shard and the new
      shard is all-gathered back into the replicated parameter;
    * stage 2: as stage 1, but each gradient is reduce-scattered as soon as
      it is produced, and gradient accumulators are stored sharded;
    * stage 3: parameters (frozen ones too) are also stored sharded. Every
      use region of a parameter is preceded by an all-gather whose result
      dies after the region's last use; the update writes the shard and no
      all-gather follows it.

    A use region is a run of uses of one loaded parameter. With
    `regather-in-backward` (the default) the first use outside the forward
    (the operations the step's results, the loss, depend on) starts a new
    region, so the backward re-gathers instead of keeping the forward's copy
    alive;
    `max-reuse-distance=D` also starts a region when two consecutive uses
    are more than D operations apart.

    `layout=flat` flattens each tensor and pads it to a multiple of the
    group size (DeepSpeed, ColossalAI); `layout=dim0` splits dimension 0,
    padding rows (FSDP2); rank-0 tensors always use flat. Tensors with fewer
    than `min-shard-elements` elements keep plain data parallelism: they
    stay replicated and their gradients are all-reduced (DeepSpeed's
    persistence threshold).
  }];
  let options = [
    Option<"stage", "stage", "int64_t", "1", "ZeRO stage: 1, 2 or 3">,
    LayoutOption<"Shard layout">,
    Option<"minShardElements", "min-shard-elements", "int64_t", "0",
           "Tensors with fewer elements stay replicated">,
    Option<"regatherInBackward", "regather-in-backward", "bool", "true",
           "Stage 3: gather parameters again for their backward uses">,
    Option<"maxReuseDistance", "max-reuse-distance", "int64_t", "0",
           "Stage 3: re-gather when consecutive uses are more than this many "
           "operations apart (0: never for distance alone)">,
    MeshSchemeOption<"How stages 1-3 shard a two-axis mesh">,
    Option<"hpz", "hpz", "bool", "false",
           "Stage 3, mesh-scheme=full: gather again from the secondary shard "
           "within the node (ZeRO++ hpZ)">,
    Option<"qwz", "qwz", "bool", "false",
           "Stage 3, mesh-scheme=full: gather parameters across nodes as "
           "block-quantized codes and scales (ZeRO++ qwZ)">,
    Option<"qgz", "qgz", "bool", "false",
           "mesh-scheme=full: reduce gradients by all-to-alls of "
           "block-quantized codes, averaged in full precision (ZeRO++ qgZ)">,
    Option<"qwzBits", "qwz-bits", "int64_t", "8",
           "qwz: bits per weight code, 8 (int8) or 4 (int4)">,
    Option<"qgzBits", "qgz-bits", "int64_t", "4",
           "qgz: bits per gradient code, 4 (int4, as ZeRO++) or 8 (int8)">,
    Option<"quantizeBlock", "quantize-block", "int64_t", "4096",
           "qwz/qgz: elements per quantization block (one f32 scale each)">,
    Option<"quantizeMinElements", "quantize-min-elements", "int64_t", "4096",
           "qwz/qgz: pieces with fewer elements move in full precision">,
  ];
  let dependentDialects = ["::zero::dist::DistDialect",
                           "::zero::train::TrainDialect",
                           "::mlir::arith::ArithDialect"];
}

def ZeroBucket : Pass<"zero-bucket", "::mlir::ModuleOp"> {
  let summary = "Fuses consecutive small collectives into flat buckets";
  let description = [{
    Consecutive collectives of one kind (same reduction, axis and element
    type) become `dist.pack` -> one collective -> `dist.unpack`, up to a
    byte budget per bucket. Reductions (`all_reduce`, `reduce_scatter`) are
    issued where the bucket's last member was, and a bucket closes before
    any use of a member's result. All-gathers are issued where the bucket's
    first member was, ahead of every member's use, so a use does not close
    a gather bucket: stage 3's gathers, each right before its use, fuse
    across the compute between them. A gather joins only when its input is
    already available at the first member (an input another gather bucket
    produces is available where that bucket is issued: under full 2-D
    sharding the gathers within the node fuse after the fused gather across
    nodes, and such a gather is not a use that limits the bucket it reads),
    and a second gather of an input
    the bucket holds (a re-gather, there to free the tensor in between)
    starts a new bucket. Across a use a bucket grows only up to
    `allgather-across-uses-bytes`: its members are copied out of the
    bucket, a copy a tensor's own collective does not need, and the copy is
    cheap only while the bucket is still in cache. No collective ever moves across a use of its result.
    Reduce-scatter and all-gather buckets use the rank-major layout
    (`shards N`), so every rank still gets exactly its shard of each tensor.
  }];
  let options = [
    Option<"reduceBucketBytes", "reduce-bucket-bytes", "int64_t", "26214400",
           "Largest all-reduce / reduce-scatter bucket, in bytes of the full "
           "tensors (0 disables)">,
    Option<"allgatherBucketBytes", "allgather-bucket-bytes", "int64_t",
           "26214400",
           "Largest all-gather bucket, in bytes of the gathered tensors "
           "(0 disables)">,
    Option<"allgatherAcrossUsesBytes", "allgather-across-uses-bytes",
           "int64_t", "262144",
           "Largest all-gather bucket that takes members across a use of an "
           "earlier member's result (gathers separated by compute)">,
  ];
  let dependentDialects = ["::zero::dist::DistDialect"];
}

def ZeroSchedule : Pass<"zero-schedule", "::mlir::ModuleOp"> {
  let summary = "Issues stage-3 parameter gathers ahead of their use, within a bound on gathered bytes alive at once, and stage 1-2 updates inside the backward";
  let description = [{
    At stage 3 every parameter a step computes with is gathered from its
    shards, and zero-shard puts each gather right before its use: the
    compute stream then waits for the whole collective. This pass moves
    each parameter gather (with the `dist.pack` that fills its bucket) up,
    so that it runs on the communication stream while earlier layers
    compute, as DeepSpeed's `stage3_prefetch_bucket_size` and FSDP's
    prefetching do, but decided here, before anything runs, the same way
    on every rank.

    The gathers are taken in the order of their first use (the forward's
    gathers in layer order, the backward's re-gathers in reverse layer
    order). A gather is issued at the first use of an earlier one, the
    earliest such that the gathered bytes issued ahead of the compute, this
    gather's included, stay within `prefetch-bytes`: with 0 nothing moves,
    with the size of one layer's parameters each layer's gather overlaps
    the layer before. Gathers issued at one point are consecutive, their
    packs first, so the communication stream gets them in one hand-off. A
    bucket's `dist.unpack` (the copy out of the gathered bucket) moves down
    to the first use of any member: the compute stream waits for the
    gather there, not where it was issued.

    A gathered tensor is alive from its gather to its last use (through
    views); at an unpack, both the bucket and its members are. With
    `max-live-gathered-bytes`, no move may make the gathered bytes alive
    at once exceed it (DeepSpeed's `stage3_max_live_parameters`): a gather
    that would is issued later, down to its own position. A bound that
    the step exceeds before anything moves (a parameter or bucket larger
    than it, or parameters that must be alive together) is an error that
    names them: nothing is clamped. zero-report prints the peak
    (`gathered parameters, peak live`), and the arena planner places what
    this schedule keeps alive.

    With `machine` (a preset or a JSON machine file, as zero-report's), the
    pass predicts, the way zero-report predicts the lowered step, each
    operation's compute time and each collective's time on the link, and
    issues each gather at the latest earlier gather's use from which the
    compute up to its own use covers the communication in between (its own
    gather, the gathers and reductions queued before it): just early
    enough to be hidden, so that it costs the least gathered memory. Where
    nothing covers it, the link is the bottleneck: the gather goes one
    gather ahead, which keeps the link busy, and no further. `prefetch-bytes`, when
    not 0, still caps how far ahead, and the live bound holds. On a machine
    whose collectives progress only while the compute stream waits for
    them (`async_collectives: false`, the `cpu` preset: Open MPI on
    CPU ranks) nothing moves, since an early gather would hold memory for
    no time saved.

    At stages 1-2 the optimizer runs after the backward and the updated
    shards are all-gathered after it, where nothing is left to compute
    behind them. On a machine whose collectives overlap compute, each
    update (with the loads it reads and the stores of its slots) and the
    gather of its result move up into the backward, as early as their
    inputs allow: after the reduction of the gradient, landing where the
    predicted compute since that reduction covers it and a gather queued
    ahead of it (earlier, the compute stream would wait for both at once),
    and after the backward's last read of the parameter (the lowering may
    update in place). The copies of the gathered parameters into place
    stay at the end of the step, where the compute stream waits for the
    gathers, mostly done by then. The gradient reductions do not move: at
    stage 1 they follow the backward by design, so there the updates stay
    after them and only the gathers move up among the updates.
  }];
  let options = [
    Option<"prefetchBytes", "prefetch-bytes", "int64_t", "0",
           "Gathered bytes issued ahead of the compute that will use them "
           "(0: each gather stays right before its first use; with machine, "
           "no cap)">,
    Option<"maxLiveGatheredBytes", "max-live-gathered-bytes", "int64_t", "0",
           "Largest number of gathered parameter bytes alive at once "
           "(0: no bound)">,
    Option<"machine", "machine", "std::string", "\"\"",
           "The machine model to hide each gather on (a preset such as "
           "h100-nvlink-8, or a .json file); empty: place by "
           "prefetch-bytes alone">,
  ];
  let dependentDialects = ["::zero::dist::DistDialect"];
}

def ZeroVerify : Pass<"zero-verify", "::mlir::ModuleOp"> {
  let summary = "Proves every rank issues the same collective sequence";
  let description = [{
    Fails with a diagnostic when a collective sits under control flow whose
    condition, bounds or trip count depend on rank-local values, and the
    code paths could issue different collective sequences: the hang that
    DeepSpeed and FSDP users hit when one rank skips a collective.

    Rank-local values are the step's inputs marked as split (`S(d)` in
    `dist.sbp`), loads of sharded state, the results of `reduce_scatter`,
    `slice` and `all_to_all`, and everything computed from them; `all_reduce`,
    `all_gather` and `broadcast` results are the same on every rank. An
    `scf.if` on a rank-local condition is accepted when both branches issue
    the same collectives in the same order; loops with rank-local bounds or
    conditions, and branches of unstructured control flow on rank-local
    conditions, are rejected when they contain collectives.
  }];
}

def ZeroReport : Pass<"zero-report", "::mlir::ModuleOp"> {
  let summary = "Reports per-rank memory and per-step traffic against the ZeRO formula";
  let description = [{
    Prints, before anything runs, what every rank holds and sends:

    * bytes of parameters, gradients, optimizer slots and master copies (the
      model state), with the padding included and shown separately; the
      gradient figure is what is live when the first optimizer update starts
      (or the persistent accumulators);
    * the peak of transient bytes, from a liveness scan of each step
      function, and the total;
    * per collective kind, the count, elements and bytes per step, and what
      each rank sends under ring accounting ((N-1)/N of the payload, twice
      for all-reduce);
    * the ZeRO formula for the same model (Ψ, K, N, stage) next to it.

    The IR is not changed. `output=-` (the default) writes to stderr, so the
    IR still goes to stdout.

    With `machine` (a preset such as `a100-80gb-nvlink-8`, `h100-nvlink-8`
    or `cpu`, docs/zero-opt.md "Presets", or a JSON machine file) the report predicts the step of the lowered
    program: each instruction's time from the machine model, streams in
    program order ordered by their events, and it prints per collective its
    bytes and predicted time, per stream the busy time, the predicted step
    time and the exposed communication (the time some collective runs while
    the compute stream runs no kernel), and the peak of device memory against
    the machine's `device_memory` where it states one. This needs the `zrt.program`: on a
    lowered module the report is the prediction alone (a module with a
    training step but no program is an error; `zero-pipeline` with
    `lower-to-runtime` gives both). `format=timeline` writes the prediction
    as an SVG picture instead: a lane per stream, a rectangle per
    instruction, and the live device memory below.
  }];
  let options = [
    ReportFormatOption<"format", "format", "text", "Report format", "">,
    Option<"output", "output", "std::string", "\"-\"",
           "File to write the report to; - for stderr">,
    Option<"machine", "machine", "std::string", "\"\"",
           "Machine model to predict the lowered step's time on: a preset "
           "(docs/zero-opt.md, Presets) or a .json file (empty: no "
           "prediction)">,
  ];
}

include "zero/passes/FusionPasses.td"

def ZeroLowerToRuntime : Pass<"zero-lower-to-runtime", "::mlir::ModuleOp"> {
  let summary = "Bufferizes the step into a zrt program with a planned arena, streams and events";
  let description = [{
    Replaces the module's training step and persistent state with one
    `zrt.program` the runtime executes without planning anything:

    * every `train.param` becomes a persistent `zrt.buffer` at its per-rank
      (shard) size, carrying its logical type, layout and initializer for the
      runtime's seeded initialization; step inputs and results become
      `input` and `output` buffers;
    * every transient tensor gets a view into one arena at an offset from a
      liveness-based best-fit planner: buffers are placed largest first, each
      in the smallest gap left by buffers whose lifetimes overlap its own (a
      buffer lives from the first instruction that names it to the last, or
      to the wait for the last collective that uses it).
      The program records the arena size, again as `zrt.planned_arena` (the
      plan apart from the header the runtime allocates by, which
      `zero-run --check-memory` holds the measured writes against), and the
      largest sum of live bytes (`zrt.live_bytes`), the lower bound no
      placement can beat (`--check-memory` derives its own from the
      instructions);
    * reshapes, the logical prefix of a padded all-gather and the members of
      an unpacked bucket are `zrt.view`s (no copy); packing into rank-major
      buckets and padding a reduce-scatter input are explicit copies and
      fills;
    * compute ops become `zrt.launch` of the kernel named after the op, with
      the op's attributes (update ops get their optimizer's hyper-parameters
      with the defaults applied);
    * with `async-collectives` (the default) collectives run on the `@comm`
      stream: the compute stream records an event the collective waits for,
      and the compute stream waits for the collective's completion event
      only right before the first instruction that touches its buffers, so
      compute in between overlaps communication. Otherwise everything runs on
      `@compute` in program order.

    The compile-time report (`zero-report`'s figures) is attached to the
    program as `zrt.report`, so that the runtime can print its measurements
    beside them. Steps with gradient accumulation, control flow or ops other
    than `train`, `dist` and splat `arith.constant` are rejected with a
    diagnostic.
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", "64",
           "Alignment in bytes of every arena view (a power of two)">,
    Option<"asyncCollectives", "async-collectives", "bool", "true",
           "Run collectives on a communication stream ordered by events">,
  ];
  let dependentDialects = ["::zero::zrt::ZrtDialect",
                           "::zero::dist::DistDialect",
                           "::zero::train::TrainDialect"];
}

def ZeroOffload : Pass<"zero-offload", "::mlir::ModuleOp"> {
  let summary = "Places optimizer state and stage-3 parameters in host memory under a device budget";
  let description = [{
    ZeRO-Offload decided at compile time. Works on the lowered `zrt.program`
    (after `zero-lower-to-runtime`) and moves persistent state to host
    memory:

    * `offload=optimizer` (stages 1-3): fp32 master copies and optimizer
      slots live in host memory. Every kernel that touches them (the
      update, and under mixed precision the cast of the new master to the
      16-bit parameter) runs on the `@host` stream; the device values it
      reads (the reduced gradient shard, the parameter shard, the step
      index) are copied device -> host on the `@transfer` stream first, and
      what it writes on the device (the new parameter shard) is copied back
      host -> device after it. The copies in and the kernel go right after
      the last instruction that writes one of its device inputs (a reduced
      gradient's reduce-scatter), so the update overlaps the rest of the
      backward; the copies back stay where the kernel was.
    * `offload=optimizer+params` (stage 3): sharded parameters also live in
      host memory; each is copied to a device staging buffer right before
      the collective that gathers it.
    * `offload=auto` with `device-memory-budget`: the least offload that
      makes the device bytes (device buffers + device arena) fit, tensor by
      tensor, largest optimizer state first, then (stage 3) largest
      parameters. When even everything offloaded does not fit, an error
      gives the shortfall in bytes and what was tried.

    Transfers and host kernels are ordered by events: the transfer stream
    waits for the compute stream, the host stream for the transfer stream,
    the copies back for the host stream, and a device instruction that
    touches memory a transfer still reads or writes waits for it. Staging
    buffers in host memory get a host arena of their own, planned like the
    device arena; device staging for gathered parameters is planned above
    the device arena. The device arena's own offsets are kept.

    The pass records what each rank holds where and the host-link bytes of
    a step on the program (`zrt.memory_plan`); `zero-pipeline` prints it
    with the report. With `offload=none` and a budget it only checks that
    the plan fits.
  }];
  let options = [
    OffloadOption<"What lives in host memory">,
    Option<"deviceMemoryBudget", "device-memory-budget", "int64_t", "0",
           "Device bytes per rank the plan must fit (0: no budget; needed "
           "by offload=auto)">,
  ];
  let dependentDialects = ["::zero::zrt::ZrtDialect"];
}

def ZeroPipeline : Pass<"zero-pipeline", "::mlir::ModuleOp"> {
  let summary = "The whole chain to a ZeRO stage 0-3 step; what enable_zero runs";
  let description = [{
    Runs `train-materialize-optimizer`, `dist-data-parallel`, `zero-shard`
    (stages 1-3), `zero-bucket`, `zero-schedule` (stages 1-3) and
    `zero-verify`, passing each its options,
    and `zero-report` when `report` is text or json, then
    `zero-lower-to-runtime` and `zero-offload` with `lower-to-runtime`.
    Stage 0 is plain data parallelism. With `lower-to-runtime` the report
    is printed after the lowering and includes the program's memory plan
    (device and host bytes, host-link traffic) when `offload` or a budget
    was given. With `machine` it also predicts the lowered step on that
    machine (zero-report's `machine`), and `report=timeline` writes the
    prediction as an SVG to `report-output`. The machine is also what
    zero-schedule places the stage-3 gathers and the stage 1-2 updates for:
    on a machine whose collectives overlap compute, each stage-3 gather is
    issued just early enough to be hidden behind the compute before its
    use, without a `prefetch-bytes` window, and each stage 1-2 update and
    the gather of its result run inside the backward. Where the predicted
    peak does not fit the machine's `device_memory`, the report adds what
    would: each setting that moves memory off the device and was not used
    (a higher stage, `recompute=true` where the step marks what it may
    recompute, `offload`), planned whole on a copy of the step, with its
    peak and step time.

    A forward-only step (one that ends in `train.minimize`) is
    differentiated first: the pipeline then begins with `train-autodiff`,
    given `optimizer` and `recompute`. So `zero-run`, the builder and any
    other user of the pipeline get the backward and its gradient reductions
    without a separate pass; no output of the pipeline keeps a
    `train.minimize`.
  }];
  let options = [
    Option<"stage", "stage", "int64_t", "0",
           "ZeRO stage: 0 (plain data parallel), 1, 2 or 3">,
    Option<"ranks", "ranks", "int64_t", "0",
           "Data-parallel ranks; 0 takes the module's dist.placement">,
    Option<"tp", "tp", "int64_t", "1",
           "Tensor-parallel ranks: dist-tensor-parallel splits the "
           "parameters by their dist.sbp plans over a last placement axis "
           "of this many ranks (after ranks or mesh)">,
    ListOption<"mesh", "mesh", "int64_t",
               "A two-level grid of ranks for dist-data-parallel, nodes "
               "first: mesh=2,4; stages 1-3 then shard as mesh-scheme "
               "says">,
    ReduceDtypeOption<"dist-data-parallel's reduce-dtype">,
    MeshSchemeOption<"zero-shard's mesh-scheme">,
    Option<"hpz", "hpz", "bool", "false",
           "zero-shard's hpz: stage 3 with mesh-scheme=full gathers again "
           "from a secondary shard within the node">,
    Option<"qwz", "qwz", "bool", "false",
           "zero-shard's qwz: quantized parameter gathers across nodes">,
    Option<"qgz", "qgz", "bool", "false",
           "zero-shard's qgz: quantized all-to-all gradient reductions">,
    Option<"qwzBits", "qwz-bits", "int64_t", "8",
           "zero-shard's qwz-bits">,
    Option<"qgzBits", "qgz-bits", "int64_t", "4",
           "zero-shard's qgz-bits">,
    Option<"quantizeBlock", "quantize-block", "int64_t", "4096",
           "zero-shard's quantize-block">,
    Option<"quantizeMinElements", "quantize-min-elements", "int64_t", "4096",
           "zero-shard's quantize-min-elements">,
    Option<"accumulateSteps", "accumulate-steps", "int64_t", "1",
           "Micro-batches per optimizer step">,
    LayoutOption<"zero-shard's layout">,
    Option<"minShardElements", "min-shard-elements", "int64_t", "0",
           "Tensors with fewer elements stay replicated">,
    Option<"regatherInBackward", "regather-in-backward", "bool", "true",
           "Stage 3: gather parameters again for their backward uses">,
    Option<"maxReuseDistance", "max-reuse-distance", "int64_t", "0",
           "Stage 3: re-gather when uses are more than this many operations "
           "apart (0: never for distance alone)">,
    Option<"reduceBucketBytes", "reduce-bucket-bytes", "int64_t", "26214400",
           "Largest reduction bucket in bytes (0 disables)">,
    Option<"allgatherBucketBytes", "allgather-bucket-bytes", "int64_t",
           "26214400", "Largest all-gather bucket in bytes (0 disables)">,
    Option<"allgatherAcrossUsesBytes", "allgather-across-uses-bytes",
           "int64_t", "262144",
           "Largest all-gather bucket that takes members across a use of an "
           "earlier member's result (gathers separated by compute)">,
    Option<"prefetchBytes", "prefetch-bytes", "int64_t", "0",
           "Stage 3: gathered bytes zero-schedule issues ahead of the "
           "compute that will use them (0: no prefetch)">,
    Option<"maxLiveGatheredBytes", "max-live-gathered-bytes", "int64_t", "0",
           "Stage 3: largest number of gathered parameter bytes alive at "
           "once (0: no bound)">,
    ReportFormatOption<"report", "report", "none",
        "Also run zero-report, writing this format",
        [{clEnumValN(::zero::ReportFormat::none, "none", "no report"),}]>,
    Option<"reportOutput", "report-output", "std::string", "\"-\"",
           "Where zero-report writes; - for stderr">,
    Option<"machine", "machine", "std::string", "\"\"",
           "The machine the step is compiled for (a preset such as "
           "h100-nvlink-8, or a .json file): zero-schedule places the "
           "stage-3 gathers and the stage 1-2 updates for it, and with "
           "lower-to-runtime and a report the report predicts the step on "
           "it">,
    Option<"lowerToRuntime", "lower-to-runtime", "bool", "false",
           "Also run zero-lower-to-runtime, producing the zrt program">,
    Option<"fuseEpilogues", "fuse-epilogues", "bool", "true",
           "With lower-to-runtime, fuse linear layers' bias, GELU and bias "
           "gradient into their matmuls first (train-fuse-epilogues), and "
           "let cross-entropy read 16-bit logits without an f32 copy "
           "(train-fuse-loss-cast), fuse residual adds into the layer "
           "norms that read them (train-fuse-residual-norm), and let "
           "attention read its heads without transposes "
           "(train-fuse-attention-layout); the CPU gives the same bits "
           "either way">,
    OffloadOption<"With lower-to-runtime, zero-offload's placement">,
    Option<"deviceMemoryBudget", "device-memory-budget", "int64_t", "0",
           "With lower-to-runtime, device bytes per rank the plan must fit "
           "(0: no budget)">,
    Option<"optimizer", "optimizer", "std::string", "\"\"",
           "For a forward-only step: the train.optimizer (symbol name "
           "without @) train-autodiff applies the gradients with; empty "
           "takes the module's only optimizer">,
    Option<"recompute", "recompute", "bool", "false",
           "For a forward-only step: recompute the results of forward ops "
           "marked train.recompute in the backward (activation "
           "checkpointing)">,
  ];
  let dependentDialects = ["::zero::dist::DistDialect",
                           "::zero::zrt::ZrtDialect",
                           "::zero::train::TrainDialect",
                           "::mlir::arith::ArithDialect"];
}

#endif // ZERO_PASSES
