//===- TrainOps.td - State, optimizer and update ops -------*- tablegen -*-===//

#ifndef ZERO_TRAIN_OPS
#define ZERO_TRAIN_OPS

include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "zero/dialects/train/TrainDialect.td"

class Train_Op<string mnemonic, list<Trait> traits = []>
    : Op<Train_Dialect, mnemonic, traits>;

def Train_Float : AnyTypeOf<[F32, BF16, F16]>;
def Train_FloatTensor : RankedTensorOf<[F32, BF16, F16]>;
def Train_IndexTensor : RankedTensorOf<[I32, I64]>;
// Persistent state holds numbers whose byte size is known.
def Train_StateTensor : StaticShapeTensorOf<[AnyFloat, AnySignlessInteger]>;
def Train_ScalarF32 : 0DTensorOf<[F32]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getF32Type())">;
def Train_StepTensor : 0DTensorOf<[I64]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getI64Type())">;

//===----------------------------------------------------------------------===//
// Persistent state
//===----------------------------------------------------------------------===//

def Train_ParamOp : Train_Op<"param", [Symbol,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Declares a persistent tensor of the training state";
  let description = [{
    Every byte that lives across steps is one of these: parameters (`param`),
    parameters that get no gradient (`frozen`), fp32 master copies of 16-bit
    parameters (`master`), optimizer slots such as Adam's moments (`slot`)
    gradient accumulators (`grad_accum`) and the dynamic loss scaler's
    scale and counter (`scaler`, replicated). Master copies, slots and
    accumulators name the parameter they belong to with `of`, and share its
    logical shape.

    The type after `:` is the logical tensor. A sharded tensor adds its
    layout over a placement axis and the local tensor each rank holds, which
    the verifier derives from the enclosing `dist.placement`:

    * `flat`: flattened and padded to a multiple of the group size; each rank
      holds `ceil(numel / N)` elements (DeepSpeed, ColossalAI);
    * `dim0`: dimension 0 split with padding; each rank holds
      `ceil(d0 / N)` rows (FSDP2).

    `over` names the placement axis the shards are cut over; the ranks
    along the other axes hold copies (hybrid sharding on a mesh). `over 1, 0`
    cuts over both axes of an `R x S` mesh into `N = R * S` shards, the
    major axis first: the rank at coordinates `(r, s)` holds shard
    `s * R + r`. The ranks at one position `s` of every node hold
    consecutive shards, so a gather across nodes (axis 0) comes first and
    moves only `1/N` per rank, and the gather within the node completes the
    tensor (full 2-D ZeRO-3).

    A trainable parameter may name the `train.optimizer` that updates it
    with `with @name`: a parameter group, with its own learning rate and
    weight decay (no weight decay on biases and norms, as LLM recipes do).
    train-autodiff applies its gradient with that optimizer; a parameter
    without `with` uses the step's default one.

    Under tensor parallelism (`dist-tensor-parallel`) a parameter may be
    `split dim d over a`: each rank of placement axis `a` (the
    tensor-parallel axis) holds the `1/n` of dimension `d` at its place on
    the axis, exactly (no padding); the ranks along the other axes hold
    copies of that tensor-parallel shard, which ZeRO may shard further over
    them. Its master copy, slots and accumulator are split as it is.

    ```mlir
    train.param @fc1.w param : tensor<784x128xf32> init normal(0.0, 0.02)
    train.param @fc2.w param : tensor<128x10xf32> split dim 0 over 1
    train.param @fc1.b param : tensor<128xf32> init zeros with @adamw.no_decay
    train.param @fc1.w.m slot of @fc1.w : tensor<784x128xf32>
        sharded flat over 0 -> tensor<25088xf32> init zeros
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    Train_Role:$role,
    OptionalAttr<FlatSymbolRefAttr>:$owner,
    TypeAttrOf<Train_StateTensor>:$logical_type,
    DefaultValuedAttr<Train_StorageLayout,
                      "::zero::train::StorageLayoutKind::replicated">:$layout,
    OptionalAttr<DenseI64ArrayAttr>:$shard_axes,
    OptionalAttr<TypeAttrOf<Train_StateTensor>>:$local_type,
    OptionalAttr<Train_InitAttr>:$init,
    OptionalAttr<FlatSymbolRefAttr>:$optimizer,
    OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$split_dim,
    OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$split_axis
  );
  let assemblyFormat = [{
    $sym_name $role (`of` $owner^)? `:` $logical_type
    (`split` `dim` $split_dim^ `over` $split_axis)?
    (`sharded` $layout^ `over` custom<ShardAxes>($shard_axes) `->` $local_type)?
    (`init` custom<InitBody>($init)^)? (`with` $optimizer^)? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The tensor each rank holds: the local type when sharded, the
    /// tensor-parallel shard when split, the logical type otherwise.
    ::mlir::RankedTensorType getLocalTensorType();
    /// The logical tensor with its tensor-parallel split applied: what ZeRO
    /// shards over the other axes. Null when the split does not fit the
    /// enclosing placement (the verifier says why).
    ::mlir::RankedTensorType getSplitTensorType();
    bool isSplit() { return getSplitDim().has_value(); }
    ::mlir::RankedTensorType getLogicalTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getLogicalType());
    }
    bool isSharded() {
      return getLayout() != ::zero::train::StorageLayoutKind::replicated;
    }
    /// The placement axes the shards are cut over, the major one first
    /// (axis 0 when none is given).
    ::llvm::SmallVector<int64_t, 2> getShardAxisList() {
      if (auto axes = getShardAxes())
        return ::llvm::SmallVector<int64_t, 2>(*axes);
      return {0};
    }
    /// Logical bytes (unpadded) and local bytes (one rank, padding included).
    int64_t getLogicalBytes();
    int64_t getLocalBytes();
  }];
}

def Train_LoadOp : Train_Op<"load", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "Reads this rank's part of a persistent tensor";
  let description = [{
    The result is the local tensor: the whole tensor when the state is
    replicated, this rank's shard when it is sharded.

    ```mlir
    %w = train.load @fc1.w : tensor<784x128xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$state);
  let results = (outs Train_StateTensor:$result);
  let assemblyFormat = "$state attr-dict `:` type($result)";
}

def Train_StoreOp : Train_Op<"store", [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Overwrites this rank's part of a persistent tensor";
  let description = [{
    ```mlir
    train.store %new to @fc1.w.m : tensor<25088xf32>
    ```
  }];
  let arguments = (ins Train_StateTensor:$value, FlatSymbolRefAttr:$state);
  let assemblyFormat = "$value `to` $state attr-dict `:` type($value)";
}

def Train_StepIndexOp : Train_Op<"step_index", [Pure,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "The 1-based number of the optimizer step being taken";
  let description = [{
    Supplied by the runtime; Adam's bias correction reads it.

    ```mlir
    %t = train.step_index : tensor<i64>
    ```
  }];
  let results = (outs Train_StepTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

def Train_OptimizerOp : Train_Op<"optimizer", [Symbol]> {
  let summary = "Declares an optimizer and its hyper-parameters";
  let description = [{
    `sgd` takes `lr`; `momentum` adds `momentum`; `adam` and `adamw` take
    `lr`, `betas(beta1, beta2)` and `eps`. Every kind accepts
    `weight_decay` (L2 for sgd, momentum and adam; decoupled for adamw).
    Missing `betas` or `eps` default to (0.9, 0.999) and 1e-8.

    ```mlir
    train.optimizer @opt adamw lr 3.0e-04 betas(0.9, 0.95) eps 1.0e-08 weight_decay 0.1
    ```

    An optional `schedule` varies the learning rate with the 1-based step
    `t` (the runtime's step, the same on every rank). `lr` is the peak rate.
    `warmup N` (any kind, default 0) ramps linearly from 0: `lr * t / N`
    for `t <= N`, so the first step takes `lr / N`. After the warmup,
    `constant` (the default without a schedule) keeps `lr`; `linear` and
    `cosine` decay from `lr` to `min_lr` (default 0) at step `total`, with
    progress `p = (t - warmup) / (total - warmup)`: `linear` gives
    `min_lr + (lr - min_lr) * (1 - p)`, `cosine` gives
    `min_lr + (lr - min_lr) * (1 + cos(pi * p)) / 2`. After `total` the rate
    stays at `min_lr`.

    ```mlir
    train.optimizer @opt adamw lr 3.0e-04 betas(0.9, 0.95) eps 1.0e-08 weight_decay 0.1 schedule cosine warmup 100 total 10000 min_lr 3.0e-05
    ```

    An optional `clip_norm X` (X > 0) clips the gradients by their global
    norm before the update: with `norm = sqrt(sum of g^2)` over every
    gradient of every optimizer that clips, each gradient is multiplied by
    `min(1, X / (norm + 1e-6))`. `train-materialize-optimizer` writes one
    `train.clip_by_global_norm` per step for all of them.

    An optional `loss_scale S` turns on dynamic loss scaling, for f16
    training: `train-autodiff` seeds the backward with the current scale
    (initially S) instead of 1, so that small gradients survive in f16, then
    unscales the averaged gradients into f32 (`train.unscale`) and skips the
    whole update of a step whose gradients overflowed, agreed by every rank.
    The scale halves after an overflow (not below 1) and doubles after
    `growth_interval` (default 2000) steps in a row without one. The
    scale and the count of good steps are the two `scaler` tensors
    `@loss_scale` and `@loss_scale.good_steps`.

    ```mlir
    train.optimizer @opt adamw lr 3.0e-04 loss_scale 65536.0 growth_interval 1000
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    Train_OptimizerKind:$kind,
    F64Attr:$lr,
    OptionalAttr<F64Attr>:$momentum,
    OptionalAttr<F64Attr>:$beta1,
    OptionalAttr<F64Attr>:$beta2,
    OptionalAttr<F64Attr>:$eps,
    OptionalAttr<F64Attr>:$weight_decay,
    OptionalAttr<Train_ScheduleKind>:$schedule,
    OptionalAttr<I64Attr>:$warmup,
    OptionalAttr<I64Attr>:$total,
    OptionalAttr<F64Attr>:$min_lr,
    OptionalAttr<F64Attr>:$clip_norm,
    OptionalAttr<F64Attr>:$loss_scale,
    OptionalAttr<I64Attr>:$growth_interval
  );
  let assemblyFormat = [{
    $sym_name $kind `lr` $lr (`momentum` $momentum^)?
    (`betas` `(` $beta1^ `,` $beta2 `)`)? (`eps` $eps^)?
    (`weight_decay` $weight_decay^)? (`schedule` $schedule^)?
    (`warmup` $warmup^)? (`total` $total^)? (`min_lr` $min_lr^)?
    (`clip_norm` $clip_norm^)? (`loss_scale` $loss_scale^)?
    (`growth_interval` $growth_interval^)? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Number of f32 slots per parameter element this optimizer keeps.
    int64_t getNumSlots();
    /// Hyper-parameters as doubles, with the documented defaults.
    double getLrValue() { return getLr().convertToDouble(); }
    std::optional<double> getMomentumValue();
    double getBeta1Value();
    double getBeta2Value();
    double getEpsValue();
    double getWeightDecayValue();
    /// The schedule with its defaults: constant, warmup 0, min_lr 0.
    ::zero::train::ScheduleKind getScheduleValue();
    int64_t getWarmupValue();
    std::optional<int64_t> getTotalValue();
    double getMinLrValue();
    /// True when the rate varies with the step (a schedule other than
    /// constant without warmup).
    bool hasVaryingLr();
    /// Steps without overflow before the loss scale doubles (default 2000).
    int64_t getGrowthIntervalValue();
  }];
}

def Train_ApplyGradientOp : Train_Op<"apply_gradient", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Updates a parameter with its gradient using an optimizer";
  let description = [{
    The high-level form: the gradient has the parameter's logical shape and
    the optimizer's state is implicit. `train-materialize-optimizer` turns
    it into explicit slots and an update op. Frozen parameters take no
    gradient.

    ```mlir
    train.apply_gradient %dw to @fc1.w with @opt : tensor<784x128xf32>
    ```

    With `skip_if %found` (a loss-scaled step), the update is not applied
    when `%found` is non-zero: the parameter and its optimizer state keep
    their values.
  }];
  let arguments = (ins Train_FloatTensor:$grad, FlatSymbolRefAttr:$param,
                       FlatSymbolRefAttr:$optimizer,
                       Optional<Train_ScalarF32>:$skip_if);
  let assemblyFormat = [{
    $grad `to` $param `with` $optimizer (`skip_if` $skip_if^)? attr-dict `:`
    type($grad)
  }];
}

def Train_MinimizeOp : Train_Op<"minimize"> {
  let summary = "Marks the loss a forward-only step minimizes";
  let description = [{
    A `train.step` function that holds only the forward pass names its
    scalar loss with one `train.minimize`; `train-autodiff` replaces it
    with the backward pass (seeded with d loss = 1) and one
    `train.apply_gradient` per trainable parameter the loss depends on.

    ```mlir
    %loss = train.softmax_cross_entropy %logits, %labels
        : tensor<32x10xf32>, tensor<32xi32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    ```
  }];
  let arguments = (ins AnyType:$loss);
  let assemblyFormat = "$loss attr-dict `:` type($loss)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Explicit updates
//===----------------------------------------------------------------------===//

class Train_UpdateOp<string mnemonic, string optimizerKind, list<Trait> traits = []>
    : Train_Op<mnemonic, traits # [Pure,
        DeclareOpInterfaceMethods<SymbolUserOpInterface>,
        DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let extraClassDeclaration = [{
    /// The optimizer kind whose hyper-parameters this update reads.
    static ::zero::train::OptimizerKind getRequiredOptimizerKind() {
      return ::zero::train::OptimizerKind::}] # optimizerKind # [{;
    }
  }];
  let hasVerifier = 1;
}

def Train_SgdOp : Train_UpdateOp<"sgd", "sgd", [
    AllTypesMatch<["param", "new_param"]>]> {
  let summary = "One SGD step: param - lr * (grad + weight_decay * param)";
  let description = [{
    Takes hyper-parameters from an `sgd` optimizer. Works on whole tensors or
    on shards alike: every operand has the same shape.

    ```mlir
    %w1 = train.sgd %w, %g with @opt : tensor<128xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$param, Train_FloatTensor:$grad,
                       Optional<Train_ScalarF32>:$skip_if,
                       FlatSymbolRefAttr:$optimizer);
  let results = (outs Train_FloatTensor:$new_param);
  let assemblyFormat = [{
    $param `,` $grad (`skip_if` $skip_if^)? `with` $optimizer attr-dict `:`
    type($param) `,` type($grad)
  }];
}

def Train_SgdMomentumOp : Train_UpdateOp<"sgd_momentum", "momentum", [
    AllTypesMatch<["param", "new_param"]>,
    AllTypesMatch<["momentum_buffer", "new_momentum_buffer"]>]> {
  let summary = "One SGD step with a momentum buffer";
  let description = [{
    `buf = momentum * buf + grad; param = param - lr * buf` (with L2 weight
    decay folded into grad), hyper-parameters from a `momentum` optimizer.

    ```mlir
    %w1, %b1 = train.sgd_momentum %w, %g, %b with @opt
        : tensor<128xf32>, tensor<128xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$param, Train_FloatTensor:$grad,
                       Train_FloatTensor:$momentum_buffer,
                       Optional<Train_ScalarF32>:$skip_if,
                       FlatSymbolRefAttr:$optimizer);
  let results = (outs Train_FloatTensor:$new_param,
                      Train_FloatTensor:$new_momentum_buffer);
  let assemblyFormat = [{
    $param `,` $grad `,` $momentum_buffer (`skip_if` $skip_if^)? `with`
    $optimizer attr-dict `:`
    type($param) `,` type($grad) `,` type($momentum_buffer)
  }];
}

class Train_AdamLikeOp<string mnemonic, string kind, string rule>
    : Train_UpdateOp<mnemonic, kind, [
        AllTypesMatch<["param", "new_param"]>,
        AllTypesMatch<["m", "v", "new_m", "new_v"]>]> {
  let summary = "One " # kind # " step on a parameter and its two moments";
  let description = [{
    }] # rule # [{ Bias correction uses the 1-based `step`. The moments are
    f32; the parameter is the tensor the optimizer updates (the fp32 master
    copy under mixed precision); the gradient may be 16-bit.

    ```mlir
    %w1, %m1, %v1 = train.}] # mnemonic # [{ %w, %g, %m, %v step %t with @opt
        : tensor<128xf32>, tensor<128xbf16>, tensor<128xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$param, Train_FloatTensor:$grad,
                       TensorOf<[F32]>:$m, TensorOf<[F32]>:$v,
                       Train_StepTensor:$step,
                       Optional<Train_ScalarF32>:$skip_if,
                       FlatSymbolRefAttr:$optimizer);
  let results = (outs Train_FloatTensor:$new_param, TensorOf<[F32]>:$new_m,
                      TensorOf<[F32]>:$new_v);
  let assemblyFormat = [{
    $param `,` $grad `,` $m `,` $v `step` $step (`skip_if` $skip_if^)? `with`
    $optimizer attr-dict `:` type($param) `,` type($grad) `,` type($m)
  }];
}

def Train_AdamOp : Train_AdamLikeOp<"adam", "adam",
    "Adam with L2 weight decay added to the gradient.">;
def Train_AdamWOp : Train_AdamLikeOp<"adamw", "adamw",
    "AdamW: weight decay applied to the parameter, decoupled from the moments.">;

//===----------------------------------------------------------------------===//
// Gradient clipping
//===----------------------------------------------------------------------===//

include "zero/dialects/train/TrainComputeOps.td"
include "zero/dialects/train/TrainFusedOps.td"

def Train_ClipByGlobalNormOp : Train_ComputeOp<"clip_by_global_norm",
    "clipped", [DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "Scales gradients so that their global norm is at most max_norm";
  let description = [{
    With `total = sum_i sum(g_i^2)` over every operand, each result is
    `g_i * min(1, max_norm / (sqrt(total) + 1e-6))`; result i has the type of
    operand i. `train-materialize-optimizer` writes it for optimizers with
    `clip_norm`. It has no kernel: the ZeRO passes look through it to the
    gradients it reads, and expand it into `train.sum_squares` and
    `train.scale_by_norm` once the gradients are averaged (and sharded).
    `sharded` (set by zero-shard) says that the operands are this rank's
    shards over placement axis 0, whose padding is zero, so that the squared
    norm is the sum over the ranks of each rank's partial sum.

    ```mlir
    %c:2 = train.clip_by_global_norm %g0, %g1 max_norm 1.0
        : tensor<784x128xf32>, tensor<128xf32>
    %s:2 = train.clip_by_global_norm %s0, %s1 max_norm 1.0 sharded
        : tensor<50176xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Variadic<Train_FloatTensor>:$grads, F64Attr:$max_norm,
                       UnitAttr:$sharded);
  let results = (outs Variadic<Train_FloatTensor>:$results);
  let assemblyFormat = [{
    $grads `max_norm` $max_norm (`sharded` $sharded^)? attr-dict `:`
    type($grads)
  }];
  let builders = [OpBuilder<(ins "::mlir::ValueRange":$grads,
                                 "double":$maxNorm), [{
    build($_builder, $_state, grads.getTypes(), grads,
          $_builder.getF64FloatAttr(maxNorm), /*sharded=*/nullptr);
  }]>];
  let hasVerifier = 1;
}

def Train_SumSquaresOp : Train_ComputeOp<"sum_squares", "sum_squares"> {
  let summary = "The sum of the squares of every element of every operand";
  let description = [{
    Accumulates in f32, operand by operand and element by element in order,
    so that the result is deterministic. Clipping by global norm computes its
    (partial) norm with it.

    ```mlir
    %s = train.sum_squares %g0, %g1 : tensor<784x128xf32>, tensor<128xf32>
        -> tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<Train_FloatTensor>:$inputs);
  let results = (outs Train_ScalarF32:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($result)";
}

def Train_ScaleByNormOp : Train_ComputeOp<"scale_by_norm", "clipped",
    [DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "Multiplies tensors by min(1, max_norm / (sqrt(total) + 1e-6))";
  let description = [{
    `total` is the sum of squares of the gradients (all-reduced over the ranks
    when they are shards); result i has the type of operand i.

    ```mlir
    %c:2 = train.scale_by_norm %g0, %g1 total %s max_norm 1.0
        : tensor<784x128xf32>, tensor<128xf32>
    ```
  }];
  let arguments = (ins Variadic<Train_FloatTensor>:$inputs,
                       Train_ScalarF32:$total, F64Attr:$max_norm);
  let results = (outs Variadic<Train_FloatTensor>:$results);
  let assemblyFormat = [{
    $inputs `total` $total `max_norm` $max_norm attr-dict `:` type($inputs)
  }];
  let builders = [OpBuilder<(ins "::mlir::ValueRange":$inputs,
                                 "::mlir::Value":$total,
                                 "double":$maxNorm), [{
    build($_builder, $_state, inputs.getTypes(), inputs, total,
          $_builder.getF64FloatAttr(maxNorm));
  }]>];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Dynamic loss scaling
//===----------------------------------------------------------------------===//

def Train_UnscaleOp : Train_Op<"unscale", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "Divides loss-scaled gradients by the scale and checks them for overflow";
  let description = [{
    Result i is operand i divided by `scale`, in f32 (unscaling in f16 would
    flush the small gradients that loss scaling kept); `found_inf` is 1.0
    when any operand holds an infinity or a NaN, else 0.0. `train-autodiff`
    writes one for a step whose optimizer has `loss_scale`, reading the
    gradients as the optimizer receives them: the ZeRO passes look through
    it to the gradients it reads, so that it unscales the averaged (and
    sharded) gradients. When its operands are shards, zero-shard follows it
    with a `dist.all_reduce max` of `found_inf`, so that every rank skips
    the same steps.

    ```mlir
    %g:2, %found = train.unscale %g0, %g1 scale %s
        : tensor<784x128xf16>, tensor<128xf16>
    ```
  }];
  let arguments = (ins Variadic<Train_FloatTensor>:$grads,
                       Train_ScalarF32:$scale);
  let results = (outs Variadic<TensorOf<[F32]>>:$results,
                      Train_ScalarF32:$found_inf);
  let assemblyFormat = "$grads `scale` $scale attr-dict `:` type($grads)";
  let hasVerifier = 1;
}

def Train_UpdateLossScaleOp : Train_Op<"update_loss_scale", [Pure,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "The next loss scale and count of good steps after a step";
  let description = [{
    With `found_inf` non-zero: `new_scale = max(scale / 2, 1)` and
    `new_good_steps = 0`. Otherwise `good_steps + 1` steps in a row had no
    overflow: when that reaches `growth_interval`, `new_scale = 2 * scale`
    and the count restarts at 0; else the scale stays. The count is an f32
    holding an integer (exact below 2^24).

    ```mlir
    %scale1, %good1 = train.update_loss_scale %scale, %good, %found
        growth_interval 2000 : tensor<f32>
    ```
  }];
  let arguments = (ins Train_ScalarF32:$scale, Train_ScalarF32:$good_steps,
                       Train_ScalarF32:$found_inf,
                       ConfinedAttr<I64Attr, [IntPositive]>:$growth_interval);
  let results = (outs Train_ScalarF32:$new_scale,
                      Train_ScalarF32:$new_good_steps);
  let assemblyFormat = [{
    $scale `,` $good_steps `,` $found_inf `growth_interval` $growth_interval
    attr-dict `:` type($scale)
  }];
  let hasVerifier = 1;
}

#endif // ZERO_TRAIN_OPS
