// RUN: zero-opt %s -split-input-file -verify-diagnostics

// Every diagnostic of the train dialect's verifiers: the dialect attribute
// verifier, the initializer attribute, the state and optimizer ops, the
// update ops and the compute ops.

//===----------------------------------------------------------------------===//
// Dialect attributes
//===----------------------------------------------------------------------===//

// A misspelled train.* attribute.
// expected-error @+1 {{unknown train attribute 'train.stp'; the dialect defines 'train.step', 'train.accumulate_steps', 'train.apply_step', 'train.recompute' and 'train.recomputed'}}
func.func @step() attributes {train.stp} {
  return
}

// -----

// train.step carries a value.
// expected-error @+1 {{'train.step' is a unit attribute and takes no value}}
func.func @step() attributes {train.step = true} {
  return
}

// -----

// train.step on something other than a func.func.
// expected-error @+1 {{'train.step' marks a training-step func.func, not 'train.optimizer'}}
train.optimizer @sgd sgd lr 0.1 {train.step}

//===----------------------------------------------------------------------===//
// Initializers
//===----------------------------------------------------------------------===//

// -----

// An initializer kind that does not exist.
// expected-error @+1 {{unknown initializer 'xavier'; expected zeros, ones, constant(v), normal(mean, std) or uniform(low, high)}}
train.param @w param : tensor<4x4xf32> init xavier

// -----

// A normal distribution with a zero standard deviation.
// expected-error @+1 {{normal(mean, std) needs std > 0, got 0.000000e+00}}
train.param @w param : tensor<4x4xf32> init normal(0.0, 0.0)

// -----

// A uniform distribution with an empty range.
// expected-error @+1 {{uniform(low, high) needs low < high, got (1.000000e+00, -1.000000e+00)}}
train.param @w param : tensor<4x4xf32> init uniform(1.0, -1.0)

//===----------------------------------------------------------------------===//
// train.param
//===----------------------------------------------------------------------===//

// -----

// A master copy that does not name its parameter.
// expected-error @+1 {{is a master copy and must name its parameter with 'of @param'}}
train.param @w.master master : tensor<4xf32>

// -----

// A gradient accumulator that does not name its parameter.
train.param @w param : tensor<4xf32>
// expected-error @+1 {{is a gradient accumulator and must name its parameter with 'of @param'}}
train.param @w.acc grad_accum : tensor<4xf32> init zeros

// -----

// A parameter that claims to belong to another tensor.
train.param @w param : tensor<4xf32>
// expected-error @+1 {{is a trainable parameter and belongs to no other tensor; drop 'of @w'}}
train.param @v param of @w : tensor<4xf32>

// -----

// A frozen parameter that claims to belong to another tensor.
train.param @w param : tensor<4xf32>
// expected-error @+1 {{is a frozen parameter and belongs to no other tensor; drop 'of @w'}}
train.param @e frozen of @w : tensor<4xf32>

// -----

// A 16-bit master copy.
train.param @w param : tensor<4xbf16>
// expected-error @+1 {{is a master copy and must be f32, got 'bf16'}}
train.param @w.master master of @w : tensor<4xbf16>

// -----

// A 16-bit optimizer slot.
train.param @w param : tensor<4xf16>
// expected-error @+1 {{is an optimizer slot and must be f32, got 'f16'}}
train.param @w.m slot of @w : tensor<4xf16> init zeros

// -----

// A master copy with an initializer.
train.param @w param : tensor<4xbf16> init zeros
// expected-error @+1 {{is a master copy, which starts as a copy of its parameter; drop the initializer}}
train.param @w.master master of @w : tensor<4xf32> init zeros

// -----

// A replicated tensor that gives a local type.
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  // expected-error @+1 {{is replicated, so each rank holds the logical type; drop the local type}}
  train.param @w param : tensor<8xf32> sharded replicated over 0 -> tensor<2xf32>
}

// -----

// A sharded tensor without its local type (only expressible in generic form).
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  // expected-error @+1 {{is sharded and must give the local type each rank holds}}
  "train.param"() <{layout = 1 : i32, logical_type = tensor<8xf32>, role = 0 : i32, shard_axis = 0 : i64, sym_name = "w"}> : () -> ()
}

// -----

// A sharded tensor with no placement to shard over.
// expected-error @+1 {{is sharded but no 'dist.placement' encloses it; place the module, e.g. #dist.placement<cpu, [4]>}}
train.param @w param : tensor<8xf32> sharded flat over 0 -> tensor<2xf32>

// -----

// Sharding over a placement axis that does not exist.
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  // expected-error @+1 {{is sharded over placement axis 1, but #dist.placement<cpu, [4]> has only 1 axis(es)}}
  train.param @w param : tensor<8xf32> sharded flat over 1 -> tensor<2xf32>
}

// -----

// Dim-0 sharding of a scalar.
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  // expected-error @+1 {{cannot shard a rank-0 tensor along dimension 0; use the flat layout or keep it replicated}}
  train.param @s param : tensor<f32> sharded dim0 over 0 -> tensor<1xf32>
}

// -----

// A flat shard that forgets the padding: 21 elements over 4 ranks is 6 each.
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  // expected-error @+1 {{stores 'tensor<7x3xf32>' flat-sharded over 4 ranks, so each rank holds 'tensor<6xf32>' (3 padding elements), but the local type is 'tensor<5xf32>'}}
  train.param @w param : tensor<7x3xf32> sharded flat over 0 -> tensor<5xf32>
}

// -----

// A dim-0 shard that forgets the padding: 10 rows over 4 ranks is 3 each.
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  // expected-error @+1 {{stores 'tensor<10x6xf32>' dim0-sharded over 4 ranks, so each rank holds 'tensor<3x6xf32>' (2 padding rows), but the local type is 'tensor<2x6xf32>'}}
  train.param @w param : tensor<10x6xf32> sharded dim0 over 0 -> tensor<2x6xf32>
}

// -----

// A shard of the wrong size where the split is even (no padding note).
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  // expected-error @+1 {{stores 'tensor<8x16xf32>' dim0-sharded over 4 ranks, so each rank holds 'tensor<2x16xf32>', but the local type is 'tensor<32xf32>'}}
  train.param @w param : tensor<8x16xf32> sharded dim0 over 0 -> tensor<32xf32>
}

// -----

// A shard with the flat size but the wrong shape.
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  // expected-error @+1 {{so each rank holds 'tensor<32xf32>', but the local type is 'tensor<2x16xf32>'}}
  train.param @w param : tensor<8x16xf32> sharded flat over 0 -> tensor<2x16xf32>
}

// -----

// A slot whose owner is not a train.param.
train.optimizer @adam adam lr 1.0e-3
// expected-error @+1 {{refers to @adam, which is not a train.param}}
train.param @w.m slot of @adam : tensor<4xf32> init zeros

// -----

// A master copy whose owner does not exist.
// expected-error @+1 {{refers to @missing, which is not a train.param}}
train.param @w.master master of @missing : tensor<4xf32>

// -----

// A slot of a frozen parameter.
train.param @emb frozen : tensor<4xf32> init zeros
// expected-error @+1 {{belongs to @emb, which is a frozen parameter, not a trainable parameter}}
train.param @emb.m slot of @emb : tensor<4xf32> init zeros

// -----

// A gradient accumulator of another slot.
train.param @w param : tensor<4xf32> init zeros
train.param @w.m slot of @w : tensor<4xf32> init zeros
// expected-error @+1 {{belongs to @w.m, which is an optimizer slot, not a trainable parameter}}
train.param @w.m.acc grad_accum of @w.m : tensor<4xf32> init zeros

// -----

// A master copy whose logical shape differs from its parameter's.
train.param @w param : tensor<4x8xbf16> init zeros
// expected-error @+1 {{has logical type 'tensor<8x4xf32>', but its parameter @w is 'tensor<4x8xbf16>'; they must have the same shape}}
train.param @w.master master of @w : tensor<8x4xf32>

//===----------------------------------------------------------------------===//
// train.load / train.store
//===----------------------------------------------------------------------===//

// -----

// Loading a symbol that is not a train.param.
train.optimizer @sgd sgd lr 0.1
func.func @f() {
  // expected-error @+1 {{refers to @sgd, which is not a train.param}}
  %0 = train.load @sgd : tensor<4xf32>
  return
}

// -----

// Loading a replicated tensor as another type.
train.param @w param : tensor<8xf32> init zeros
func.func @f() {
  // expected-error @+1 {{loads @w as 'tensor<8xbf16>', but each rank holds 'tensor<8xf32>'}}
  %0 = train.load @w : tensor<8xbf16>
  return
}

// -----

// Loading a sharded tensor as its logical type rather than its shard.
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @w param : tensor<7x3xf32> sharded flat over 0 -> tensor<6xf32> init zeros
  func.func @f() {
    // expected-error @+1 {{loads @w as 'tensor<7x3xf32>', but each rank holds 'tensor<6xf32>' (its shard of 'tensor<7x3xf32>')}}
    %0 = train.load @w : tensor<7x3xf32>
    return
  }
}

// -----

// Storing to a symbol that does not exist.
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{refers to @missing, which is not a train.param}}
  train.store %x to @missing : tensor<4xf32>
  return
}

// -----

// Storing a value of the wrong shape.
train.param @w param : tensor<8xf32> init zeros
func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{stores @w as 'tensor<4xf32>', but each rank holds 'tensor<8xf32>'}}
  train.store %x to @w : tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// train.optimizer
//===----------------------------------------------------------------------===//

// -----

// A zero learning rate.
// expected-error @+1 {{needs a positive learning rate, got 0.000000e+00}}
train.optimizer @sgd sgd lr 0.0

// -----

// A momentum optimizer without its momentum.
// expected-error @+1 {{of kind momentum needs 'momentum <value>'}}
train.optimizer @m momentum lr 0.1

// -----

// Momentum on an optimizer of another kind.
// expected-error @+1 {{of kind adam takes no momentum; use kind momentum}}
train.optimizer @adam adam lr 1.0e-3 momentum 0.9

// -----

// A momentum of 1 or more.
// expected-error @+1 {{needs momentum in [0, 1), got 1.000000e+00}}
train.optimizer @m momentum lr 0.1 momentum 1.0

// -----

// Betas on SGD.
// expected-error @+1 {{of kind sgd takes no betas or eps; they are Adam's}}
train.optimizer @sgd sgd lr 0.1 betas(0.9, 0.999)

// -----

// Eps on momentum SGD.
// expected-error @+1 {{of kind momentum takes no betas or eps; they are Adam's}}
train.optimizer @m momentum lr 0.1 momentum 0.9 eps 1.0e-8

// -----

// A beta of 1.
// expected-error @+1 {{needs betas in [0, 1), got 1.000000e+00}}
train.optimizer @adam adam lr 1.0e-3 betas(0.9, 1.0)

// -----

// A negative beta.
// expected-error @+1 {{needs betas in [0, 1), got -5.000000e-01}}
train.optimizer @adamw adamw lr 1.0e-3 betas(-0.5, 0.999)

// -----

// A zero eps.
// expected-error @+1 {{needs eps > 0, got 0.000000e+00}}
train.optimizer @adam adam lr 1.0e-3 eps 0.0

// -----

// A negative weight decay.
// expected-error @+1 {{needs weight_decay >= 0, got -1.000000e-02}}
train.optimizer @adamw adamw lr 1.0e-3 weight_decay -0.01

// -----

// Schedule settings without a schedule.
// expected-error @+1 {{takes warmup, total and min_lr only after 'schedule <kind>' (constant, linear or cosine)}}
train.optimizer @adamw adamw lr 1.0e-3 warmup 10

// -----

// A negative warmup.
// expected-error @+1 {{needs warmup >= 0 steps, got -5}}
train.optimizer @adamw adamw lr 1.0e-3 schedule cosine warmup -5 total 100

// -----

// A constant rate has nothing to decay to.
// expected-error @+1 {{with schedule constant keeps lr after the warmup, so it takes no total or min_lr; use linear or cosine to decay}}
train.optimizer @sgd sgd lr 0.1 schedule constant warmup 10 total 100

// -----

// A decay without its end.
// expected-error @+1 {{with schedule cosine needs 'total <steps>', the step at which the rate reaches min_lr}}
train.optimizer @adamw adamw lr 1.0e-3 schedule cosine warmup 10

// -----

// A decay that would end before the warmup does.
// expected-error @+1 {{with schedule linear needs total > warmup, so that there are steps to decay over; got total 100 and warmup 100}}
train.optimizer @sgd sgd lr 0.1 schedule linear warmup 100 total 100

// -----

// A floor above the peak.
// expected-error @+1 {{needs 0 <= min_lr <= lr (the schedule decays from lr to min_lr), got min_lr 2.000000e-03 and lr 1.000000e-03}}
train.optimizer @adamw adamw lr 1.0e-3 schedule cosine total 100 min_lr 2.0e-3

// -----

// A negative floor.
// expected-error @+1 {{needs 0 <= min_lr <= lr (the schedule decays from lr to min_lr), got min_lr -1.000000e-04 and lr 1.000000e-03}}
train.optimizer @adamw adamw lr 1.0e-3 schedule linear total 100 min_lr -1.0e-4

//===----------------------------------------------------------------------===//
// train.apply_gradient
//===----------------------------------------------------------------------===//

// -----

// Applying a gradient to a symbol that is not a train.param.
train.optimizer @sgd sgd lr 0.1
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{refers to @sgd, which is not a train.param}}
  train.apply_gradient %g to @sgd with @sgd : tensor<4xf32>
  return
}

// -----

// Applying a gradient with a symbol that is not a train.optimizer.
train.param @w param : tensor<4xf32> init zeros
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{refers to @w, which is not a train.optimizer}}
  train.apply_gradient %g to @w with @w : tensor<4xf32>
  return
}

// -----

// A gradient for a frozen parameter.
train.param @emb frozen : tensor<4xf32> init zeros
train.optimizer @sgd sgd lr 0.1
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{applies a gradient to @emb, which is frozen; frozen parameters take no gradient}}
  train.apply_gradient %g to @emb with @sgd : tensor<4xf32>
  return
}

// -----

// A gradient for an optimizer slot.
train.param @w param : tensor<4xf32> init zeros
train.param @w.m slot of @w : tensor<4xf32> init zeros
train.optimizer @sgd sgd lr 0.1
func.func @f(%g: tensor<4xf32>) {
  // expected-error @+1 {{applies a gradient to @w.m, which is an optimizer slot, not a parameter}}
  train.apply_gradient %g to @w.m with @sgd : tensor<4xf32>
  return
}

// -----

// A gradient with the shard's shape instead of the logical shape.
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @w param : tensor<8x16xf32> sharded flat over 0 -> tensor<32xf32> init zeros
  train.optimizer @sgd sgd lr 0.1
  func.func @f(%g: tensor<32xf32>) {
    // expected-error @+1 {{has a gradient of type 'tensor<32xf32>', but @w is 'tensor<8x16xf32>'; the gradient has the parameter's logical shape}}
    train.apply_gradient %g to @w with @sgd : tensor<32xf32>
    return
  }
}

//===----------------------------------------------------------------------===//
// Update ops
//===----------------------------------------------------------------------===//

// -----

// train.sgd with a gradient of another shape.
train.optimizer @sgd sgd lr 0.1
func.func @f(%w: tensor<8xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{updates 'tensor<8xf32>' with 'tensor<4xf32>'; the parameter, its gradient and its slots must have one shape}}
  %0 = train.sgd %w, %g with @sgd : tensor<8xf32>, tensor<4xf32>
  return
}

// -----

// train.sgd_momentum with a momentum buffer of another shape.
train.optimizer @m momentum lr 0.1 momentum 0.9
func.func @f(%w: tensor<8xf32>, %g: tensor<8xbf16>, %buf: tensor<2x4xf32>) {
  // expected-error @+1 {{updates 'tensor<8xf32>' with 'tensor<2x4xf32>'; the parameter, its gradient and its slots must have one shape}}
  %0:2 = train.sgd_momentum %w, %g, %buf with @m : tensor<8xf32>, tensor<8xbf16>, tensor<2x4xf32>
  return
}

// -----

// train.adam with moments of another shape.
train.optimizer @adam adam lr 1.0e-3
func.func @f(%w: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<4xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{updates 'tensor<8xf32>' with 'tensor<4xf32>'; the parameter, its gradient and its slots must have one shape}}
  %0:3 = train.adam %w, %g, %m, %m step %t with @adam : tensor<8xf32>, tensor<8xf32>, tensor<4xf32>
  return
}

// -----

// train.adamw with a gradient of another shape.
train.optimizer @adamw adamw lr 1.0e-3
func.func @f(%w: tensor<8xf32>, %g: tensor<16xbf16>, %m: tensor<8xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{updates 'tensor<8xf32>' with 'tensor<16xbf16>'; the parameter, its gradient and its slots must have one shape}}
  %0:3 = train.adamw %w, %g, %m, %m step %t with @adamw : tensor<8xf32>, tensor<16xbf16>, tensor<8xf32>
  return
}

// -----

// An update op whose optimizer symbol is not a train.optimizer.
train.param @w param : tensor<8xf32> init zeros
func.func @f(%w: tensor<8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{refers to @w, which is not a train.optimizer}}
  %0 = train.sgd %w, %g with @w : tensor<8xf32>, tensor<8xf32>
  return
}

// -----

// train.sgd reading the hyper-parameters of an Adam optimizer.
train.optimizer @adam adam lr 1.0e-3
func.func @f(%w: tensor<8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{needs an optimizer of kind sgd, but @adam is adam}}
  %0 = train.sgd %w, %g with @adam : tensor<8xf32>, tensor<8xf32>
  return
}

// -----

// train.sgd_momentum reading a plain SGD optimizer.
train.optimizer @sgd sgd lr 0.1
func.func @f(%w: tensor<8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{needs an optimizer of kind momentum, but @sgd is sgd}}
  %0:2 = train.sgd_momentum %w, %g, %g with @sgd : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  return
}

// -----

// train.adam reading an AdamW optimizer.
train.optimizer @adamw adamw lr 1.0e-3
func.func @f(%w: tensor<8xf32>, %m: tensor<8xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{needs an optimizer of kind adam, but @adamw is adamw}}
  %0:3 = train.adam %w, %w, %m, %m step %t with @adamw : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  return
}

// -----

// train.adamw reading an Adam optimizer.
train.optimizer @adam adam lr 1.0e-3
func.func @f(%w: tensor<8xf32>, %m: tensor<8xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{needs an optimizer of kind adamw, but @adam is adam}}
  %0:3 = train.adamw %w, %w, %m, %m step %t with @adam : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  return
}

//===----------------------------------------------------------------------===//
// Elementwise, bias and mask
//===----------------------------------------------------------------------===//

// -----

// A bias of another element type than the input.
func.func @f(%x: tensor<4x8xf32>, %b: tensor<8xbf16>) {
  // expected-error @+1 {{the input and a bias have element types 'f32' and 'bf16'; insert a train.cast}}
  %0 = train.bias_add %x, %b : tensor<4x8xf32>, tensor<8xbf16>
  return
}

// -----

// A bias on a scalar.
func.func @f(%x: tensor<f32>, %b: tensor<1xf32>) {
  // expected-error @+1 {{needs an input of rank >= 1, got 'tensor<f32>'}}
  %0 = train.bias_add %x, %b : tensor<f32>, tensor<1xf32>
  return
}

// -----

// A bias that does not match the last dimension.
func.func @f(%x: tensor<4x8xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{needs a bias of shape [8] to match the last dimension of 'tensor<4x8xf32>', got 'tensor<4xf32>'}}
  %0 = train.bias_add %x, %b : tensor<4x8xf32>, tensor<4xf32>
  return
}

// -----

// A 2-D bias.
func.func @f(%x: tensor<4x8xf32>, %b: tensor<1x8xf32>) {
  // expected-error @+1 {{needs a bias of shape [8] to match the last dimension of 'tensor<4x8xf32>', got 'tensor<1x8xf32>'}}
  %0 = train.bias_add %x, %b : tensor<4x8xf32>, tensor<1x8xf32>
  return
}

// -----

// A causal mask on a 1-D tensor.
func.func @f(%x: tensor<16xf32>) {
  // expected-error @+1 {{masks the last two dimensions, but 'tensor<16xf32>' has rank 1}}
  %0 = train.causal_mask %x fill 0.0 : tensor<16xf32>
  return
}

// -----

// A dropout that drops everything: PyTorch's p is below 1.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{needs a rate in [0, 1) (PyTorch's p), got 1}}
  %0 = train.dropout %x rate 1.0 stream 0 : tensor<4x8xf32>
  return
}

// -----

// A padding mask whose keys are not the scores' last dimension.
func.func @f(%x: tensor<2x4x16x16xf32>, %keep: tensor<2x8xi64>) {
  // expected-error @+1 {{needs keep of shape [batch, keys] = [2, 16] for 'tensor<2x4x16x16xf32>', got 'tensor<2x8xi64>'}}
  %0 = train.key_mask %x, %keep fill 0.0 : tensor<2x4x16x16xf32>, tensor<2x8xi64>
  return
}

// -----

// A padding mask given as floats (an additive mask) rather than integers.
func.func @f(%x: tensor<2x16xf32>, %keep: tensor<2x16xf32>) {
  // expected-error @+1 {{operand #1 must be}}
  %0 = train.key_mask %x, %keep fill 0.0 : tensor<2x16xf32>, tensor<2x16xf32>
  return
}

//===----------------------------------------------------------------------===//
// train.matmul
//===----------------------------------------------------------------------===//

// -----

// A matmul with a 1-D operand.
func.func @f(%x: tensor<4x8xf32>, %v: tensor<8xf32>) {
  // expected-error @+1 {{needs operands of rank >= 2, got 'tensor<4x8xf32>' and 'tensor<8xf32>'}}
  %0 = train.matmul %x, %v : tensor<4x8xf32>, tensor<8xf32> -> tensor<4xf32>
  return
}

// -----

// Operands of different element types.
func.func @f(%x: tensor<4x8xbf16>, %w: tensor<8x2xf32>) {
  // expected-error @+1 {{the operands have element types 'bf16' and 'f32'; insert a train.cast}}
  %0 = train.matmul %x, %w : tensor<4x8xbf16>, tensor<8x2xf32> -> tensor<4x2xbf16>
  return
}

// -----

// A result of another element type than the operands.
func.func @f(%x: tensor<4x8xbf16>, %w: tensor<8x2xbf16>) {
  // expected-error @+1 {{the operands and result have element types 'bf16' and 'f32'; insert a train.cast}}
  %0 = train.matmul %x, %w : tensor<4x8xbf16>, tensor<8x2xbf16> -> tensor<4x2xf32>
  return
}

// -----

// A batched right operand with a 2-D left operand.
func.func @f(%x: tensor<4x8xf32>, %w: tensor<3x8x2xf32>) {
  // expected-error @+1 {{needs operands of equal rank, or a 2-D right operand shared by every batch; got 'tensor<4x8xf32>' and 'tensor<3x8x2xf32>'}}
  %0 = train.matmul %x, %w : tensor<4x8xf32>, tensor<3x8x2xf32> -> tensor<3x4x2xf32>
  return
}

// -----

// Batch dimensions that differ.
func.func @f(%q: tensor<2x4x16x8xf32>, %k: tensor<2x3x8x16xf32>) {
  // expected-error @+1 {{has mismatched batch dimensions in 'tensor<2x4x16x8xf32>' and 'tensor<2x3x8x16xf32>'}}
  %0 = train.matmul %q, %k : tensor<2x4x16x8xf32>, tensor<2x3x8x16xf32> -> tensor<2x4x16x16xf32>
  return
}

// -----

// Contraction sizes that differ (the right operand needs transpose_b).
func.func @f(%dy: tensor<32x128xf32>, %w: tensor<784x128xf32>) {
  // expected-error @+1 {{contracts 128 elements of the left operand with 784 of the right ('tensor<32x128xf32>', 'tensor<784x128xf32>')}}
  %0 = train.matmul %dy, %w : tensor<32x128xf32>, tensor<784x128xf32> -> tensor<32x784xf32>
  return
}

// -----

// A result shape that ignores transpose_a.
func.func @f(%x: tensor<32x784xf32>, %dy: tensor<32x128xf32>) {
  // expected-error @+1 {{produces 'tensor<784x128xf32>', but the result type is 'tensor<32x128xf32>'}}
  %0 = train.matmul %x, %dy transpose_a : tensor<32x784xf32>, tensor<32x128xf32> -> tensor<32x128xf32>
  return
}

// -----

// A shared right operand whose result drops the batch dimension.
func.func @f(%x: tensor<2x16x64xf32>, %w: tensor<64x256xf32>) {
  // expected-error @+1 {{produces 'tensor<2x16x256xf32>', but the result type is 'tensor<32x256xf32>'}}
  %0 = train.matmul %x, %w : tensor<2x16x64xf32>, tensor<64x256xf32> -> tensor<32x256xf32>
  return
}

//===----------------------------------------------------------------------===//
// Layer norm
//===----------------------------------------------------------------------===//

// -----

// A zero eps.
func.func @f(%x: tensor<8x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{needs eps > 0, got 0.000000e+00}}
  %0:3 = train.layer_norm %x, %g, %g eps 0.0 : tensor<8x8xf32>, tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

// A scale that does not match the last dimension.
func.func @f(%x: tensor<4x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{needs a scale of shape [8] to match the last dimension of 'tensor<4x8xf32>', got 'tensor<4xf32>'}}
  %0:3 = train.layer_norm %x, %g, %g eps 1.0e-5 : tensor<4x8xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

// Layer norm of a scalar.
func.func @f(%x: tensor<f32>) {
  // expected-error @+1 {{needs an input of rank >= 1, got 'tensor<f32>'}}
  %0:3 = train.layer_norm %x, %x, %x eps 1.0e-5 : tensor<f32>, tensor<f32> -> tensor<f32>
  return
}

// -----

// Statistics with a row per feature rather than per row of the input.
func.func @f(%dy: tensor<2x16x64xf32>, %g: tensor<64xf32>, %mean: tensor<2x64xf32>) {
  // expected-error @+1 {{needs mean and rstd of shape 'tensor<2x16xf32>' (one per row of 'tensor<2x16x64xf32>'), got 'tensor<2x64xf32>'}}
  %0:3 = train.layer_norm_grad %dy, %dy, %g, %mean, %mean : tensor<2x16x64xf32>, tensor<64xf32>, tensor<2x64xf32>
  return
}

// -----

// A scale of another element type than the input.
func.func @f(%dy: tensor<16x64xbf16>, %g: tensor<64xf32>, %mean: tensor<16xf32>) {
  // expected-error @+1 {{the input and a scale have element types 'bf16' and 'f32'; insert a train.cast}}
  %0:3 = train.layer_norm_grad %dy, %dy, %g, %mean, %mean : tensor<16x64xbf16>, tensor<64xf32>, tensor<16xf32>
  return
}

// -----

// A scale that does not match the last dimension, in the gradient.
func.func @f(%dy: tensor<16x64xf32>, %g: tensor<16xf32>, %mean: tensor<16xf32>) {
  // expected-error @+1 {{needs a scale of shape [64] to match the last dimension of 'tensor<16x64xf32>', got 'tensor<16xf32>'}}
  %0:3 = train.layer_norm_grad %dy, %dy, %g, %mean, %mean : tensor<16x64xf32>, tensor<16xf32>, tensor<16xf32>
  return
}

//===----------------------------------------------------------------------===//
// Embedding and loss
//===----------------------------------------------------------------------===//

// -----

// A 3-D embedding table.
func.func @f(%table: tensor<4x256x64xf32>, %ids: tensor<16xi32>) {
  // expected-error @+1 {{needs a 2-D [vocabulary, features] table, got 'tensor<4x256x64xf32>'}}
  %0 = train.embedding %table, %ids : tensor<4x256x64xf32>, tensor<16xi32> -> tensor<16x64xf32>
  return
}

// -----

// Looked-up rows of the wrong shape.
func.func @f(%table: tensor<256x64xf32>, %ids: tensor<2x16xi32>) {
  // expected-error @+1 {{looks up 'tensor<2x16xi32>' in 'tensor<256x64xf32>', which gives 'tensor<2x16x64xf32>', not 'tensor<32x64xf32>'}}
  %0 = train.embedding %table, %ids : tensor<256x64xf32>, tensor<2x16xi32> -> tensor<32x64xf32>
  return
}

// -----

// A padding row outside the table: PyTorch's "no padding row" (-1) is the
// attribute's absence here.
func.func @f(%table: tensor<256x64xf32>, %ids: tensor<16xi64>) {
  // expected-error @+1 {{padding_idx 256 is not a row of the 256-row table}}
  %0 = train.embedding %table, %ids {padding_idx = 256 : i64} : tensor<256x64xf32>, tensor<16xi64> -> tensor<16x64xf32>
  return
}

// -----

func.func @f(%dy: tensor<16x64xf32>, %ids: tensor<16xi64>) {
  // expected-error @+1 {{padding_idx -1 is not a row of the 256-row table}}
  %0 = train.embedding_grad %dy, %ids {padding_idx = -1 : i64} : tensor<16x64xf32>, tensor<16xi64> -> tensor<256x64xf32>
  return
}

// -----

// Rows of another element type than the table.
func.func @f(%table: tensor<256x64xf32>, %ids: tensor<16xi64>) {
  // expected-error @+1 {{the table and rows have element types 'f32' and 'bf16'; insert a train.cast}}
  %0 = train.embedding %table, %ids : tensor<256x64xf32>, tensor<16xi64> -> tensor<16x64xbf16>
  return
}

// -----

// An embedding gradient whose table has the wrong feature size.
func.func @f(%de: tensor<2x16x64xf32>, %ids: tensor<2x16xi32>) {
  // expected-error @+1 {{looks up 'tensor<2x16xi32>' in 'tensor<256x32xf32>', which gives 'tensor<2x16x32xf32>', not 'tensor<2x16x64xf32>'}}
  %0 = train.embedding_grad %de, %ids : tensor<2x16x64xf32>, tensor<2x16xi32> -> tensor<256x32xf32>
  return
}

// -----

// An embedding gradient into a 1-D table.
func.func @f(%de: tensor<16xf32>, %ids: tensor<16xi32>) {
  // expected-error @+1 {{needs a 2-D [vocabulary, features] table, got 'tensor<256xf32>'}}
  %0 = train.embedding_grad %de, %ids : tensor<16xf32>, tensor<16xi32> -> tensor<256xf32>
  return
}

// -----

// Scalar logits.
func.func @f(%logits: tensor<f32>, %labels: tensor<i32>) {
  // expected-error @+1 {{needs logits of rank >= 1, got 'tensor<f32>'}}
  %0 = train.softmax_cross_entropy %logits, %labels : tensor<f32>, tensor<i32> -> tensor<f32>
  return
}

// -----

// A loss that ignores labels without the count of the others: on several
// ranks it could only take each rank's own mean.
func.func @f(%logits: tensor<32x10xf32>, %labels: tensor<32xi32>) {
  // expected-error @+1 {{ignores label -100 but has no 'count' of the labels not ignored (train.count_labels)}}
  %0 = train.softmax_cross_entropy %logits, %labels {ignore_index = -100 : i64} : tensor<32x10xf32>, tensor<32xi32> -> tensor<f32>
  return
}

// -----

// Label smoothing outside PyTorch's [0, 1].
func.func @f(%logits: tensor<32x10xf32>, %labels: tensor<32xi32>) {
  // expected-error @+1 {{needs a label_smoothing in [0, 1] (PyTorch's), got 1.5}}
  %0 = train.softmax_cross_entropy %logits, %labels {label_smoothing = 1.5 : f64} : tensor<32x10xf32>, tensor<32xi32> -> tensor<f32>
  return
}

// -----

// A count without ignored labels.
func.func @f(%logits: tensor<32x10xf32>, %labels: tensor<32xi32>, %one: tensor<f32>) {
  // expected-error @+1 {{has a 'count' but no 'ignore_index': without ignored labels the mean is over every position}}
  %0 = train.softmax_cross_entropy_grad %logits, %labels, %one count %one : tensor<32x10xf32>, tensor<32xi32>
  return
}

// -----

// Labels that do not match the rows of the logits.
func.func @f(%logits: tensor<32x10xf32>, %labels: tensor<10xi32>) {
  // expected-error @+1 {{needs labels of shape 'tensor<32xi32>' (one per row of 'tensor<32x10xf32>'), got 'tensor<10xi32>'}}
  %0 = train.softmax_cross_entropy %logits, %labels : tensor<32x10xf32>, tensor<10xi32> -> tensor<f32>
  return
}

// -----

// Labels of the gradient flattened while the logits are not.
func.func @f(%logits: tensor<2x16x256xf32>, %labels: tensor<32xi64>, %one: tensor<f32>) {
  // expected-error @+1 {{needs labels of shape 'tensor<2x16xi64>' (one per row of 'tensor<2x16x256xf32>'), got 'tensor<32xi64>'}}
  %0 = train.softmax_cross_entropy_grad %logits, %labels, %one : tensor<2x16x256xf32>, tensor<32xi64>
  return
}

// -----

// Scalar logits in the gradient.
func.func @f(%logits: tensor<f32>, %labels: tensor<i32>, %one: tensor<f32>) {
  // expected-error @+1 {{needs logits of rank >= 1, got 'tensor<f32>'}}
  %0 = train.softmax_cross_entropy_grad %logits, %labels, %one : tensor<f32>, tensor<i32>
  return
}

//===----------------------------------------------------------------------===//
// Reductions and shape
//===----------------------------------------------------------------------===//

// -----

// A reduced dimension past the rank.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{reduced dimension 2 is out of range for rank 2}}
  %0 = train.reduce_sum %x dims [2] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

// A negative reduced dimension.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{reduced dimension -1 is out of range for rank 2}}
  %0 = train.reduce_mean %x dims [-1] : tensor<4x8xf32> -> tensor<4xf32>
  return
}

// -----

// Reduced dimensions out of order.
func.func @f(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{needs distinct dims in ascending order}}
  %0 = train.reduce_sum %x dims [1, 0] : tensor<2x4x8xf32> -> tensor<8xf32>
  return
}

// -----

// A reduced dimension listed twice.
func.func @f(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{needs distinct dims in ascending order}}
  %0 = train.reduce_mean %x dims [0, 0] : tensor<2x4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

// A reduction that changes the element type.
func.func @f(%x: tensor<4x8xbf16>) {
  // expected-error @+1 {{the input and result have element types 'bf16' and 'f32'; insert a train.cast}}
  %0 = train.reduce_sum %x dims [0] : tensor<4x8xbf16> -> tensor<8xf32>
  return
}

// -----

// A reduction result that keeps the reduced dimension.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{reducing 'tensor<4x8xf32>' over its dims gives 'tensor<8xf32>', not 'tensor<1x8xf32>'}}
  %0 = train.reduce_sum %x dims [0] : tensor<4x8xf32> -> tensor<1x8xf32>
  return
}

// -----

// A mean over the wrong dimension.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{reducing 'tensor<4x8xf32>' over its dims gives 'tensor<4xf32>', not 'tensor<8xf32>'}}
  %0 = train.reduce_mean %x dims [1] : tensor<4x8xf32> -> tensor<8xf32>
  return
}

// -----

// An expansion whose new dimension is past the result's rank. The checks are
// those of the reduction it inverts, phrased for the result.
func.func @f(%x: tensor<8xf32>) {
  // expected-error @+1 {{inserted dimension 2 is out of range for rank 2}}
  %0 = train.expand %x dims [2] : tensor<8xf32> -> tensor<4x8xf32>
  return
}

// -----

// An expansion that inserts the new dimension in the wrong place.
func.func @f(%db: tensor<128xf32>) {
  // expected-error @+1 {{expands 'tensor<128xf32>' into 'tensor<128x32xf32>', but removing the inserted dims from the result gives 'tensor<32xf32>'}}
  %0 = train.expand %db dims [0] : tensor<128xf32> -> tensor<128x32xf32>
  return
}

// -----

// An expansion that changes the element type.
func.func @f(%db: tensor<128xbf16>) {
  // expected-error @+1 {{the input and result have element types 'bf16' and 'f32'; insert a train.cast}}
  %0 = train.expand %db dims [0] : tensor<128xbf16> -> tensor<32x128xf32>
  return
}

// -----

// An expansion with unordered dims.
func.func @f(%s: tensor<f32>) {
  // expected-error @+1 {{needs distinct dims in ascending order}}
  %0 = train.expand %s dims [1, 0] : tensor<f32> -> tensor<4x8xf32>
  return
}

// -----

// A reshape that changes the element count.
func.func @f(%x: tensor<2x16x64xf32>) {
  // expected-error @+1 {{reshapes 2048 elements into 1024}}
  %0 = train.reshape %x : tensor<2x16x64xf32> -> tensor<16x64xf32>
  return
}

// -----

// A reshape that changes the element type.
func.func @f(%x: tensor<4x8xi32>) {
  // expected-error @+1 {{the input and result have element types 'i32' and 'f32'; insert a train.cast}}
  %0 = train.reshape %x : tensor<4x8xi32> -> tensor<32xf32>
  return
}

// -----

// A permutation with too few entries.
func.func @f(%x: tensor<2x16x4x16xf32>) {
  // expected-error @+1 {{needs a permutation of 4 dimensions, got 3}}
  %0 = train.transpose %x permutation [0, 2, 1] : tensor<2x16x4x16xf32> -> tensor<2x4x16xf32>
  return
}

// -----

// A permutation that repeats a dimension.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{permutation must list each of 0..1 once}}
  %0 = train.transpose %x permutation [1, 1] : tensor<4x8xf32> -> tensor<8x8xf32>
  return
}

// -----

// A permutation entry past the rank.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{permutation must list each of 0..1 once}}
  %0 = train.transpose %x permutation [0, 2] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

// A transpose that changes the element type.
func.func @f(%x: tensor<4x8xf16>) {
  // expected-error @+1 {{the input and result have element types 'f16' and 'bf16'; insert a train.cast}}
  %0 = train.transpose %x permutation [1, 0] : tensor<4x8xf16> -> tensor<8x4xbf16>
  return
}

// -----

// A transpose result that does not follow the permutation.
func.func @f(%x: tensor<2x16x4x16xf32>) {
  // expected-error @+1 {{permutes 'tensor<2x16x4x16xf32>' into 'tensor<2x4x16x16xf32>', not 'tensor<2x16x4x16xf32>'}}
  %0 = train.transpose %x permutation [0, 2, 1, 3] : tensor<2x16x4x16xf32> -> tensor<2x16x4x16xf32>
  return
}

// -----

// A cast that also reshapes.
func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{changes the shape from 'tensor<4x8xf32>' to 'tensor<32xbf16>'; a cast converts elements only}}
  %0 = train.cast %x : tensor<4x8xf32> -> tensor<32xbf16>
  return
}

// -----

// Betas come in pairs.
// expected-error @+1 {{needs both betas or neither}}
"train.optimizer"() <{kind = 2 : i32, lr = 1.0e-3 : f64, beta1 = 0.5 : f64, sym_name = "a"}> : () -> ()

// -----

// Only Adam takes betas, even just the second one.
// expected-error @+1 {{of kind sgd takes no betas or eps}}
"train.optimizer"() <{kind = 0 : i32, lr = 1.0e-3 : f64, beta2 = 0.5 : f64, sym_name = "a"}> : () -> ()

// -----

// A replicated tensor has no shard axes to print, so it may not carry them.
module attributes {dist.placement = #dist.placement<cpu, [2, 2]>} {
// expected-error @+1 {{is replicated, so it has no shard axes; drop shard_axes = array<i64: 1>}}
"train.param"() <{sym_name = "w", role = 0 : i32, logical_type = tensor<4xf32>, shard_axes = array<i64: 1>}> : () -> ()
}

// -----

// Each axis cuts a tensor once: naming one twice is a mistake, not a
// finer cut.
module attributes {dist.placement = #dist.placement<cpu, [2, 2]>} {
// expected-error @+1 {{is sharded over placement axis 1 twice; each axis cuts the tensor once}}
train.param @w param : tensor<8xf32> sharded flat over 1, 1 -> tensor<2xf32>
}

// -----

// Cut over both axes of a 2x3 mesh, a tensor has 6 shards.
module attributes {dist.placement = #dist.placement<cpu, [2, 3]>} {
// expected-error @+1 {{stores 'tensor<8xf32>' flat-sharded over 6 ranks, so each rank holds 'tensor<2xf32>' (4 padding elements), but the local type is 'tensor<4xf32>'}}
train.param @w param : tensor<8xf32> sharded flat over 1, 0 -> tensor<4xf32>
}

// -----

// An axis is not negative.
module attributes {dist.placement = #dist.placement<cpu, [2, 2]>} {
// expected-error @+1 {{a shard axis is a placement axis, not negative; got -1}}
train.param @w param : tensor<8xf32> sharded flat over -1 -> tensor<4xf32>
}

// -----

// Persistent state holds numbers of a known byte size.
// expected-error @+1 {{logical_type}}
"train.param"() <{sym_name = "w", role = 0 : i32, logical_type = tensor<4xindex>}> : () -> ()

// -----

// Gradient clipping.

// expected-error @+1 {{needs clip_norm > 0 (the largest global gradient norm), got 0.000000e+00}}
train.optimizer @sgd sgd lr 0.1 clip_norm 0.0

// -----

// expected-error @+1 {{needs clip_norm > 0 (the largest global gradient norm), got -1.000000e+00}}
train.optimizer @sgd sgd lr 0.1 clip_norm -1.0

// -----

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{needs max_norm > 0, got 0.000000e+00}}
  %c = train.clip_by_global_norm %a max_norm 0.0 : tensor<4xf32>
  return %c : tensor<4xf32>
}

// -----

func.func @f() {
  // expected-error @+1 {{needs at least one gradient}}
  "train.clip_by_global_norm"() {max_norm = 1.0 : f64} : () -> ()
  return
}

// -----

func.func @f(%a: tensor<4xf32>, %s: tensor<f32>) -> tensor<2xf32> {
  // expected-error @+1 {{needs one result per operand, of the operand's type}}
  %c = "train.scale_by_norm"(%a, %s) {max_norm = 1.0 : f64} : (tensor<4xf32>, tensor<f32>) -> tensor<2xf32>
  return %c : tensor<2xf32>
}

// -----

// A slice past the end of its dimension: GPT-2's value is positions
// [128, 192) of 192, not [160, 224).
func.func @f(%qkv: tensor<2x16x192xf32>) {
  // expected-error @+1 {{positions [160, 224) of dim 2 do not fit in its 192}}
  %0 = train.slice %qkv dim 2 offset 160 : tensor<2x16x192xf32> -> tensor<2x16x64xf32>
  return
}

// -----

// A slice that also changes another dimension.
func.func @f(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{needs a result that differs from 'tensor<4x6xf32>' only in dim 1, got 'tensor<3x2xf32>'}}
  %0 = train.slice %x dim 1 offset 0 : tensor<4x6xf32> -> tensor<3x2xf32>
  return
}

// -----

// A slice of a dimension the input does not have.
func.func @f(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{dim 2 is out of range for 'tensor<4x6xf32>'}}
  %0 = train.slice %x dim 2 offset 0 : tensor<4x6xf32> -> tensor<4x6xf32>
  return
}

// -----

// A pad whose input does not fit at its offset.
func.func @f(%x: tensor<4x2xf32>) {
  // expected-error @+1 {{positions [5, 7) of dim 1 do not fit in its 6}}
  %0 = train.pad %x dim 1 offset 5 : tensor<4x2xf32> -> tensor<4x6xf32>
  return
}

// -----

// A pad that changes the element type.
func.func @f(%x: tensor<4x2xbf16>) {
  // expected-error @+1 {{the input and result have element types 'f32' and 'bf16'; insert a train.cast}}
  %0 = train.pad %x dim 1 offset 0 : tensor<4x2xbf16> -> tensor<4x6xf32>
  return
}

// -----

// A concat whose parts do not add up to the result.
func.func @f(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+1 {{operands add up to 7 in dim 1, but the result 'tensor<2x8xf32>' has 8}}
  %0 = train.concat %a, %b dim 1 : tensor<2x3xf32>, tensor<2x4xf32> -> tensor<2x8xf32>
  return
}

// -----

// A concat of operands that disagree outside the joined dimension.
func.func @f(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  // expected-error @+1 {{operand 1 is 'tensor<3x3xf32>'; operands must match the result 'tensor<2x6xf32>' in every dim but 1}}
  %0 = train.concat %a, %b dim 1 : tensor<2x3xf32>, tensor<3x3xf32> -> tensor<2x6xf32>
  return
}

// -----

// A concat of two element types.
func.func @f(%a: tensor<2x3xf32>, %b: tensor<2x3xbf16>) {
  // expected-error @+1 {{operand 1 is 'tensor<2x3xbf16>', not a tensor of rank 2 and element type 'f32' like the result}}
  %0 = train.concat %a, %b dim 1 : tensor<2x3xf32>, tensor<2x3xbf16> -> tensor<2x6xf32>
  return
}

// -----

// A concat of nothing (only the generic form can spell it).
func.func @f() {
  // expected-error @+1 {{needs at least one operand}}
  %0 = "train.concat"() {dim = 0 : i64} : () -> tensor<2x6xf32>
  return
}

// -----

// Only a trainable parameter belongs to a parameter group: nothing updates
// a slot or a frozen tensor.
module {
  train.param @w param : tensor<4xf32>
  // expected-error @+1 {{'train.param' op is an optimizer slot, which no optimizer updates; drop 'with @sgd'}}
  train.param @w.m slot of @w : tensor<4xf32> with @sgd
  train.optimizer @sgd sgd lr 0.1
}

// -----

// A group names an optimizer of the module.
module {
  // expected-error @+1 {{'train.param' op is updated 'with @adamw.no_decay', but no train.optimizer of the module is named @adamw.no_decay}}
  train.param @b param : tensor<4xf32> with @adamw.no_decay
  train.optimizer @adamw adamw lr 3.0e-04 weight_decay 0.1
}

// -----

// Attention needs [..., seq, head_dim].
func.func @f(%q: tensor<8xf32>, %lse: tensor<f32>) {
  // expected-error @+1 {{attends over the last two dimensions [..., seq, head_dim], but 'tensor<8xf32>' has rank 1}}
  %0:2 = train.attention %q, %q, %q scale 1.0 : tensor<8xf32> -> tensor<f32>
  return
}

// -----

// A log-sum-exp per head_dim column instead of per query row.
func.func @f(%q: tensor<2x16x8xf32>) {
  // expected-error @+1 {{needs a log-sum-exp of shape 'tensor<2x16xf32>' (one per row of 'tensor<2x16x8xf32>'), got 'tensor<2x8xf32>'}}
  %0:2 = train.attention %q, %q, %q scale 1.0 : tensor<2x16x8xf32> -> tensor<2x8xf32>
  return
}

// -----

// A seq-major attention's log-sum-exp is [..., heads, seq], not the rows in
// the operands' order.
func.func @f(%q: tensor<2x16x4x8xf32>) {
  // expected-error @+1 {{needs a log-sum-exp of shape 'tensor<2x4x16xf32>' ([..., heads, seq] of the seq_major 'tensor<2x16x4x8xf32>'), got 'tensor<2x16x4xf32>'}}
  %0:2 = train.attention %q, %q, %q scale 1.0 seq_major : tensor<2x16x4x8xf32> -> tensor<2x16x4xf32>
  return
}

// -----

// seq_major needs a heads dimension.
func.func @f(%q: tensor<16x8xf32>, %lse: tensor<16xf32>) {
  // expected-error @+1 {{with seq_major attends over [..., seq, heads, head_dim], but 'tensor<16x8xf32>' has rank 2}}
  %0:3 = train.attention_grad %q, %q, %q, %q, %q, %lse scale 1.0 seq_major : tensor<16x8xf32> -> tensor<16xf32>
  return
}

// -----

// A scale that is not positive.
func.func @f(%q: tensor<2x16x8xf32>, %lse: tensor<2x16xf32>) {
  // expected-error @+1 {{needs scale > 0, got 0.000000e+00}}
  %0:3 = train.attention_grad %q, %q, %q, %q, %q, %lse scale 0.0 causal : tensor<2x16x8xf32> -> tensor<2x16xf32>
  return
}

// -----

// Query, key and value of different types.
func.func @f(%q: tensor<2x16x8xf32>, %k: tensor<2x16x8xbf16>) {
  // expected-error @+1 {{failed to verify that all of {query, key, value, result} have same type}}
  %0:2 = "train.attention"(%q, %k, %q) <{scale = 1.0 : f64}> : (tensor<2x16x8xf32>, tensor<2x16x8xbf16>, tensor<2x16x8xf32>) -> (tensor<2x16x8xf32>, tensor<2x16xf32>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// Fused matmuls
//===----------------------------------------------------------------------===//

// A fused matmul is a linear layer's: its right operand is a 2-D weight.
func.func @f(%q: tensor<2x4x8xf32>, %k: tensor<2x8x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{fuses a linear layer, whose right operand is a 2-D weight; got 'tensor<2x8x4xf32>' (a batched product stays train.matmul)}}
  %0 = train.matmul_bias %q, %k, %b : tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<4xf32> -> tensor<2x4x4xf32>
  return
}

// -----

// A batched left operand is folded into rows, so it is not transposed.
func.func @f(%x: tensor<2x8x4xf32>, %w: tensor<8x6xf32>, %b: tensor<6xf32>) {
  // expected-error @+1 {{folds the batch of 'tensor<2x8x4xf32>' into rows, which a transposed left operand does not allow}}
  %0:2 = train.matmul_bias_gelu %x, %w, %b transpose_a : tensor<2x8x4xf32>, tensor<8x6xf32>, tensor<6xf32> -> tensor<2x4x6xf32>
  return
}

// -----

// The bias runs along the output's features.
func.func @f(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{needs a bias of shape [6] to match the last dimension of 'tensor<4x6xf32>', got 'tensor<8xf32>'}}
  %0 = train.matmul_bias %x, %w, %b : tensor<4x8xf32>, tensor<8x6xf32>, tensor<8xf32> -> tensor<4x6xf32>
  return
}

// -----

// The shapes of the matmul itself.
func.func @f(%dy: tensor<4x6xf32>, %w: tensor<6x8xf32>, %pre: tensor<4x6xf32>) {
  // expected-error @+1 {{contracts 6 elements of the left operand with 8 of the right}}
  %0 = train.matmul_gelu_grad %dy, %w, %pre transpose_b : tensor<4x6xf32>, tensor<6x8xf32> -> tensor<4x6xf32>
  return
}

// -----

// The bias gradient sums the output gradient (the right operand) over its
// rows.
func.func @f(%x: tensor<4x8xf32>, %dy: tensor<4x6xf32>) {
  // expected-error @+1 {{sums 'tensor<4x6xf32>' over its rows into 'tensor<6xf32>', but bias_grad is 'tensor<8xf32>'}}
  %0:2 = train.matmul_bias_grad %x, %dy transpose_a : tensor<4x8xf32>, tensor<4x6xf32> -> tensor<8x6xf32>, tensor<8xf32>
  return
}

// -----

// ... of a 2-D output gradient.
func.func @f(%x: tensor<2x2x8xf32>, %dy: tensor<2x2x6xf32>) {
  // expected-error @+1 {{sums the bias gradient over the rows of a 2-D output gradient against a 2-D input; got 'tensor<2x2x8xf32>' and 'tensor<2x2x6xf32>'}}
  %0:2 = train.matmul_bias_grad %x, %dy transpose_a : tensor<2x2x8xf32>, tensor<2x2x6xf32> -> tensor<2x8x6xf32>, tensor<6xf32>
  return
}

// -----

// train.add_layer_norm normalizes its sum as train.layer_norm does: a scale
// per feature of the sum.
func.func @f(%a: tensor<4x8xf32>, %g: tensor<6xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{needs a scale of shape [8] to match the last dimension of 'tensor<4x8xf32>', got 'tensor<6xf32>'}}
  %0:4 = train.add_layer_norm %a, %a, %g, %g eps 1.0e-05 : tensor<4x8xf32>, tensor<6xf32> -> tensor<4xf32>
  return
}

// -----

// ... statistics per row of the sum, and eps > 0.
func.func @f(%a: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{needs mean and rstd of shape 'tensor<4xf32>' (one per row of 'tensor<4x8xf32>'), got 'tensor<8xf32>'}}
  %0:4 = train.add_layer_norm %a, %a, %g, %g eps 1.0e-05 : tensor<4x8xf32>, tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @f(%a: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{needs eps > 0, got 0}}
  %0:4 = train.add_layer_norm %a, %a, %g, %g eps 0.0 : tensor<4x8xf32>, tensor<8xf32> -> tensor<4xf32>
  return
}

// -----

// A tensor-parallel split of a dimension the tensor does not have.
module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  // expected-error @+1 {{is split along dimension 2, but 'tensor<8x16xf32>' has 2 dimension(s)}}
  train.param @w param : tensor<8x16xf32> split dim 2 over 0
}

// -----

// Over a placement axis that does not exist.
module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  // expected-error @+1 {{is split over placement axis 1, but #dist.placement<cpu, [2]> has only 1 axis(es)}}
  train.param @w param : tensor<8x16xf32> split dim 1 over 1
}

// -----

// Tensor-parallel shards are exact.
module attributes {dist.placement = #dist.placement<cpu, [3]>} {
  // expected-error @+1 {{splits dimension 1 of 'tensor<8x16xf32>' over the 3 ranks of axis 0, which does not divide 16; tensor-parallel shards are exact (no padding)}}
  train.param @w param : tensor<8x16xf32> split dim 1 over 0
}

// -----

// ZeRO shards a tensor-parallel shard over the other axes, not its own.
module attributes {dist.placement = #dist.placement<cpu, [2, 2]>} {
  // expected-error @+1 {{is split over axis 1 and sharded over it too; ZeRO shards over the other axes}}
  train.param @w param : tensor<8x16xf32> split dim 1 over 1 sharded flat over 1 -> tensor<32xf32>
}

// -----

// A slot follows its parameter's split.
module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<8x16xf32> split dim 1 over 0
  // expected-error @+1 {{must be split as its parameter @w is (its update is elementwise): 'split dim 1 over 0'}}
  train.param @w.m slot of @w : tensor<8x16xf32> init zeros
}

// -----

// A parameter's tensor-parallel plan is one entry, split or whole.
// expected-error @+1 {{'dist.sbp' of a parameter is its tensor-parallel plan, one entry: #dist.sbp<[S(d)]> or #dist.sbp<[B]>, got #dist.sbp<[P(sum)]>}}
train.param @w param : tensor<8x16xf32> {dist.sbp = #dist.sbp<[P(sum)]>}

// -----

func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.sbp' on an operation is a train.param's tensor-parallel plan; 'train.relu' cannot have one}}
  %y = train.relu %x {dist.sbp = #dist.sbp<[B]>} : tensor<4xf32>
  return %y : tensor<4xf32>
}
