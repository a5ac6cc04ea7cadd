// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-materialize-optimizer)" | FileCheck %s
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-materialize-optimizer{accumulate-steps=4})" | FileCheck %s --check-prefix=ACC

// train-materialize-optimizer turns every `train.apply_gradient` into
// persistent optimizer state (`train.param ... slot of @p`, an fp32
// `master of @p` for 16-bit parameters) and the explicit update op that reads
// and writes it. The update is emitted where the apply_gradient was; slots
// are declared right after their parameter.
//
// The first RUN line checks the plain rewrite (CHECK); the second makes every
// step a micro-step of 4 with gradient accumulators (ACC), checked on the
// modules at the end of the file.

// SGD keeps no state: the parameter is loaded again, updated and stored.
// Nothing reads a step index, so none is emitted.

// CHECK-LABEL: module @sgd
// CHECK-NEXT:    train.param @w param : tensor<4x8xf32> init normal(0.0, 0.02)
// CHECK-NEXT:    train.optimizer @sgd sgd lr 1.000000e-01
// CHECK-NEXT:    func.func @step(%[[X:[a-z0-9]+]]: tensor<2x4xf32>) -> tensor<f32>
// CHECK-NOT:     train.step_index
// CHECK:         %[[DW:.*]] = train.matmul %[[X]], %{{.*}} transpose_a : tensor<2x4xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    %[[W:.*]] = train.load @w : tensor<4x8xf32>
// CHECK-NEXT:    %[[NEW_W:.*]] = train.sgd %[[W]], %[[DW]] with @sgd : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-NEXT:    train.store %[[NEW_W]] to @w : tensor<4x8xf32>
// CHECK-NEXT:    return
// CHECK-NOT:     train.apply_gradient
module @sgd {
  train.param @w param : tensor<4x8xf32> init normal(0.0, 0.02)
  train.optimizer @sgd sgd lr 1.0e-01

  func.func @step(%x: tensor<2x4xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<4x8xf32>
    %y = train.matmul %x, %w : tensor<2x4xf32>, tensor<4x8xf32> -> tensor<2x8xf32>
    %loss = train.reduce_sum %y dims [0, 1] : tensor<2x8xf32> -> tensor<f32>
    %dw = train.matmul %x, %y transpose_a : tensor<2x4xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
    train.apply_gradient %dw to @w with @sgd : tensor<4x8xf32>
    return %loss : tensor<f32>
  }
}

// -----

// Momentum SGD keeps one zero-initialized buffer, @w.momentum, which
// train.sgd_momentum reads and returns updated; the buffer is stored before
// the parameter.

// CHECK-LABEL: module @momentum
// CHECK-NEXT:    train.param @w param : tensor<4x8xf32> init normal(0.0, 0.02)
// CHECK-NEXT:    train.param @w.momentum slot of @w : tensor<4x8xf32> init zeros
// CHECK-NEXT:    train.optimizer @momentum momentum lr 1.000000e-01 momentum 9.000000e-01
// CHECK-NEXT:    func.func @step(%[[DW:[a-z0-9]+]]: tensor<4x8xf32>)
// CHECK-NEXT:    %[[W:.*]] = train.load @w : tensor<4x8xf32>
// CHECK-NEXT:    %[[BUF:.*]] = train.load @w.momentum : tensor<4x8xf32>
// CHECK-NEXT:    %[[NEW_W:.*]], %[[NEW_BUF:.*]] = train.sgd_momentum %[[W]], %[[DW]], %[[BUF]] with @momentum : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-NEXT:    train.store %[[NEW_BUF]] to @w.momentum : tensor<4x8xf32>
// CHECK-NEXT:    train.store %[[NEW_W]] to @w : tensor<4x8xf32>
// CHECK-NEXT:    return
module @momentum {
  train.param @w param : tensor<4x8xf32> init normal(0.0, 0.02)
  train.optimizer @momentum momentum lr 1.0e-01 momentum 0.9

  func.func @step(%dw: tensor<4x8xf32>) attributes {train.step} {
    train.apply_gradient %dw to @w with @momentum : tensor<4x8xf32>
    return
  }
}

// -----

// Adam keeps two zero-initialized moments per parameter, @p.m and @p.v, and
// its bias correction reads the step index: one train.step_index at the top
// of the step serves every update.

// CHECK-LABEL: module @adam
// CHECK-NEXT:    train.param @w param : tensor<4x8xf32> init normal(0.0, 0.02)
// CHECK-NEXT:    train.param @w.m slot of @w : tensor<4x8xf32> init zeros
// CHECK-NEXT:    train.param @w.v slot of @w : tensor<4x8xf32> init zeros
// CHECK-NEXT:    train.param @b param : tensor<8xf32> init zeros
// CHECK-NEXT:    train.param @b.m slot of @b : tensor<8xf32> init zeros
// CHECK-NEXT:    train.param @b.v slot of @b : tensor<8xf32> init zeros
// CHECK-NEXT:    train.optimizer @adam adam
// CHECK-NEXT:    func.func @step(%[[DW:[a-z0-9]+]]: tensor<4x8xf32>, %[[DB:[a-z0-9]+]]: tensor<8xf32>)
// CHECK-NEXT:    %[[STEP:.*]] = train.step_index : tensor<i64>
// CHECK-NEXT:    %[[W:.*]] = train.load @w : tensor<4x8xf32>
// CHECK-NEXT:    %[[M:.*]] = train.load @w.m : tensor<4x8xf32>
// CHECK-NEXT:    %[[V:.*]] = train.load @w.v : tensor<4x8xf32>
// CHECK-NEXT:    %[[NEW_W:.*]], %[[NEW_M:.*]], %[[NEW_V:.*]] = train.adam %[[W]], %[[DW]], %[[M]], %[[V]] step %[[STEP]] with @adam : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-NEXT:    train.store %[[NEW_M]] to @w.m : tensor<4x8xf32>
// CHECK-NEXT:    train.store %[[NEW_V]] to @w.v : tensor<4x8xf32>
// CHECK-NEXT:    train.store %[[NEW_W]] to @w : tensor<4x8xf32>
// CHECK-NEXT:    %[[B:.*]] = train.load @b : tensor<8xf32>
// CHECK-NEXT:    %[[BM:.*]] = train.load @b.m : tensor<8xf32>
// CHECK-NEXT:    %[[BV:.*]] = train.load @b.v : tensor<8xf32>
// CHECK-NEXT:    %[[NEW_B:.*]], %[[NEW_BM:.*]], %[[NEW_BV:.*]] = train.adam %[[B]], %[[DB]], %[[BM]], %[[BV]] step %[[STEP]] with @adam : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
// CHECK-NEXT:    train.store %[[NEW_BM]] to @b.m : tensor<8xf32>
// CHECK-NEXT:    train.store %[[NEW_BV]] to @b.v : tensor<8xf32>
// CHECK-NEXT:    train.store %[[NEW_B]] to @b : tensor<8xf32>
// CHECK-NEXT:    return
module @adam {
  train.param @w param : tensor<4x8xf32> init normal(0.0, 0.02)
  train.param @b param : tensor<8xf32> init zeros
  train.optimizer @adam adam lr 1.0e-03

  func.func @step(%dw: tensor<4x8xf32>, %db: tensor<8xf32>) attributes {train.step} {
    train.apply_gradient %dw to @w with @adam : tensor<4x8xf32>
    train.apply_gradient %db to @b with @adam : tensor<8xf32>
    return
  }
}

// -----

// AdamW has the same state as Adam; only the update op differs.

// CHECK-LABEL: module @adamw
// CHECK-NEXT:    train.param @w param : tensor<4x8xf32> init normal(0.0, 0.02)
// CHECK-NEXT:    train.param @w.m slot of @w : tensor<4x8xf32> init zeros
// CHECK-NEXT:    train.param @w.v slot of @w : tensor<4x8xf32> init zeros
// CHECK-NEXT:    train.optimizer @adamw adamw
// CHECK-NEXT:    func.func @step(%[[DW:[a-z0-9]+]]: tensor<4x8xf32>)
// CHECK-NEXT:    %[[STEP:.*]] = train.step_index : tensor<i64>
// CHECK-NEXT:    %[[W:.*]] = train.load @w : tensor<4x8xf32>
// CHECK-NEXT:    %[[M:.*]] = train.load @w.m : tensor<4x8xf32>
// CHECK-NEXT:    %[[V:.*]] = train.load @w.v : tensor<4x8xf32>
// CHECK-NEXT:    %[[NEW_W:.*]], %[[NEW_M:.*]], %[[NEW_V:.*]] = train.adamw %[[W]], %[[DW]], %[[M]], %[[V]] step %[[STEP]] with @adamw : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-NEXT:    train.store %[[NEW_M]] to @w.m : tensor<4x8xf32>
// CHECK-NEXT:    train.store %[[NEW_V]] to @w.v : tensor<4x8xf32>
// CHECK-NEXT:    train.store %[[NEW_W]] to @w : tensor<4x8xf32>
// CHECK-NEXT:    return
module @adamw {
  train.param @w param : tensor<4x8xf32> init normal(0.0, 0.02)
  train.optimizer @adamw adamw lr 3.0e-04 betas(0.9, 0.95) eps 1.0e-08 weight_decay 0.1

  func.func @step(%dw: tensor<4x8xf32>) attributes {train.step} {
    train.apply_gradient %dw to @w with @adamw : tensor<4x8xf32>
    return
  }
}

// -----

// Mixed precision: a bf16 or f16 parameter gets an fp32 master copy
// (`master of @p`, no initializer: it starts as the parameter). The update
// runs on the master with the 16-bit gradient and fp32 slots; the new master
// is stored, cast back and stored into the 16-bit parameter. A stateless
// optimizer (SGD, @h) still needs the master.

// CHECK-LABEL: module @mixed_precision
// CHECK-NEXT:    train.param @w param : tensor<4x8xbf16> init normal(0.0, 0.02)
// CHECK-NEXT:    train.param @w.master master of @w : tensor<4x8xf32>{{$}}
// CHECK-NEXT:    train.param @w.m slot of @w : tensor<4x8xf32> init zeros
// CHECK-NEXT:    train.param @w.v slot of @w : tensor<4x8xf32> init zeros
// CHECK-NEXT:    train.param @h param : tensor<8xf16> init zeros
// CHECK-NEXT:    train.param @h.master master of @h : tensor<8xf32>{{$}}
// CHECK-NEXT:    train.optimizer @adamw adamw
// CHECK-NEXT:    train.optimizer @sgd sgd
// CHECK-NEXT:    func.func @step(%[[DW:[a-z0-9]+]]: tensor<4x8xbf16>, %[[DH:[a-z0-9]+]]: tensor<8xf16>)
// CHECK-NEXT:    %[[STEP:.*]] = train.step_index : tensor<i64>
// CHECK-NEXT:    %[[MASTER:.*]] = train.load @w.master : tensor<4x8xf32>
// CHECK-NEXT:    %[[M:.*]] = train.load @w.m : tensor<4x8xf32>
// CHECK-NEXT:    %[[V:.*]] = train.load @w.v : tensor<4x8xf32>
// CHECK-NEXT:    %[[NEW_MASTER:.*]], %[[NEW_M:.*]], %[[NEW_V:.*]] = train.adamw %[[MASTER]], %[[DW]], %[[M]], %[[V]] step %[[STEP]] with @adamw : tensor<4x8xf32>, tensor<4x8xbf16>, tensor<4x8xf32>
// CHECK-NEXT:    train.store %[[NEW_M]] to @w.m : tensor<4x8xf32>
// CHECK-NEXT:    train.store %[[NEW_V]] to @w.v : tensor<4x8xf32>
// CHECK-NEXT:    train.store %[[NEW_MASTER]] to @w.master : tensor<4x8xf32>
// CHECK-NEXT:    %[[NEW_W:.*]] = train.cast %[[NEW_MASTER]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK-NEXT:    train.store %[[NEW_W]] to @w : tensor<4x8xbf16>
// CHECK-NEXT:    %[[H_MASTER:.*]] = train.load @h.master : tensor<8xf32>
// CHECK-NEXT:    %[[NEW_H_MASTER:.*]] = train.sgd %[[H_MASTER]], %[[DH]] with @sgd : tensor<8xf32>, tensor<8xf16>
// CHECK-NEXT:    train.store %[[NEW_H_MASTER]] to @h.master : tensor<8xf32>
// CHECK-NEXT:    %[[NEW_H:.*]] = train.cast %[[NEW_H_MASTER]] : tensor<8xf32> -> tensor<8xf16>
// CHECK-NEXT:    train.store %[[NEW_H]] to @h : tensor<8xf16>
// CHECK-NEXT:    return
module @mixed_precision {
  train.param @w param : tensor<4x8xbf16> init normal(0.0, 0.02)
  train.param @h param : tensor<8xf16> init zeros
  train.optimizer @adamw adamw lr 1.0e-03 weight_decay 0.1
  train.optimizer @sgd sgd lr 1.0e-01

  func.func @step(%dw: tensor<4x8xbf16>, %dh: tensor<8xf16>) attributes {train.step} {
    train.apply_gradient %dw to @w with @adamw : tensor<4x8xbf16>
    train.apply_gradient %dh to @h with @sgd : tensor<8xf16>
    return
  }
}

// -----

// A frozen parameter takes no gradient: it gets no slots, and its load and
// use in the forward are left as they are. Only @w is updated.

// CHECK-LABEL: module @frozen
// CHECK-NEXT:    train.param @emb frozen : tensor<4x8xf32> init normal(0.0, 0.02)
// CHECK-NEXT:    train.param @w param : tensor<8x8xf32> init normal(0.0, 0.02)
// CHECK-NEXT:    train.param @w.momentum slot of @w : tensor<8x8xf32> init zeros
// CHECK-NEXT:    train.optimizer @momentum momentum
// CHECK-NEXT:    func.func @step(%[[X:[a-z0-9]+]]: tensor<2x4xf32>, %[[DW:[a-z0-9]+]]: tensor<8x8xf32>)
// CHECK-NEXT:    %[[EMB:.*]] = train.load @emb : tensor<4x8xf32>
// CHECK-NEXT:    %{{.*}} = train.matmul %[[X]], %[[EMB]] : tensor<2x4xf32>, tensor<4x8xf32> -> tensor<2x8xf32>
// CHECK-NOT:     @emb
// CHECK:         train.sgd_momentum %{{.*}}, %[[DW]], %{{.*}} with @momentum
// CHECK-NOT:     @emb
// CHECK:         return
module @frozen {
  train.param @emb frozen : tensor<4x8xf32> init normal(0.0, 0.02)
  train.param @w param : tensor<8x8xf32> init normal(0.0, 0.02)
  train.optimizer @momentum momentum lr 1.0e-01 momentum 0.9

  func.func @step(%x: tensor<2x4xf32>, %dw: tensor<8x8xf32>) -> tensor<2x8xf32>
      attributes {train.step} {
    %emb = train.load @emb : tensor<4x8xf32>
    %y = train.matmul %x, %emb : tensor<2x4xf32>, tensor<4x8xf32> -> tensor<2x8xf32>
    train.apply_gradient %dw to @w with @momentum : tensor<8x8xf32>
    return %y : tensor<2x8xf32>
  }
}

// -----

// The compute may be upstream linalg / arith / tensor ops: the pass only
// reads the gradient value apply_gradient names, whatever produced it.

// CHECK-LABEL: module @linalg
// CHECK-NEXT:    train.param @w param : tensor<16x4xf32>
// CHECK-NEXT:    train.param @w.m slot of @w : tensor<16x4xf32> init zeros
// CHECK-NEXT:    train.param @w.v slot of @w : tensor<16x4xf32> init zeros
// CHECK:         func.func @step
// CHECK-NEXT:    %[[STEP:.*]] = train.step_index : tensor<i64>
// CHECK:         %[[DW:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<16x8xf32>, tensor<8x4xf32>) outs(%{{.*}} : tensor<16x4xf32>) -> tensor<16x4xf32>
// CHECK-NEXT:    %[[W:.*]] = train.load @w : tensor<16x4xf32>
// CHECK-NEXT:    %[[M:.*]] = train.load @w.m : tensor<16x4xf32>
// CHECK-NEXT:    %[[V:.*]] = train.load @w.v : tensor<16x4xf32>
// CHECK-NEXT:    %[[NEW_W:.*]], %[[NEW_M:.*]], %[[NEW_V:.*]] = train.adam %[[W]], %[[DW]], %[[M]], %[[V]] step %[[STEP]] with @adam
// CHECK-NEXT:    train.store %[[NEW_M]] to @w.m : tensor<16x4xf32>
// CHECK-NEXT:    train.store %[[NEW_V]] to @w.v : tensor<16x4xf32>
// CHECK-NEXT:    train.store %[[NEW_W]] to @w : tensor<16x4xf32>
// CHECK-NEXT:    return
module @linalg {
  train.param @w param : tensor<16x4xf32> init uniform(-0.25, 0.25)
  train.optimizer @adam adam lr 1.0e-03

  func.func @step(%x: tensor<8x16xf32>, %dy: tensor<8x4xf32>) -> tensor<8x4xf32>
      attributes {train.step} {
    %w = train.load @w : tensor<16x4xf32>
    %zero = arith.constant 0.0 : f32
    %empty = tensor.empty() : tensor<8x4xf32>
    %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<8x4xf32>) -> tensor<8x4xf32>
    %y = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x4xf32>)
                       outs(%init : tensor<8x4xf32>) -> tensor<8x4xf32>
    %xt_empty = tensor.empty() : tensor<16x8xf32>
    %xt = linalg.transpose ins(%x : tensor<8x16xf32>) outs(%xt_empty : tensor<16x8xf32>) permutation = [1, 0]
    %dw_empty = tensor.empty() : tensor<16x4xf32>
    %dw_init = linalg.fill ins(%zero : f32) outs(%dw_empty : tensor<16x4xf32>) -> tensor<16x4xf32>
    %dw = linalg.matmul ins(%xt, %dy : tensor<16x8xf32>, tensor<8x4xf32>)
                        outs(%dw_init : tensor<16x4xf32>) -> tensor<16x4xf32>
    train.apply_gradient %dw to @w with @adam : tensor<16x4xf32>
    return %y : tensor<8x4xf32>
  }
}

// -----

// Gradient accumulation over 4 micro-batches (second RUN line). The step
// becomes a micro-step, marked `train.accumulate_steps = 4`, that adds each
// gradient into a zero-initialized accumulator @p.grad (role grad_accum, the
// gradient's type). A new function @step_apply, marked train.apply_step,
// averages each accumulator (scale by 1/4), runs the update as above and
// resets the accumulator to zeros. Adam's step index moves there: it counts
// optimizer steps, not micro-batches.

// ACC-LABEL: module @accumulate
// ACC-NEXT:    train.param @w param : tensor<4x8xf32> init normal(0.0, 0.02)
// ACC-NEXT:    train.param @w.grad grad_accum of @w : tensor<4x8xf32> init zeros
// ACC-NEXT:    train.param @w.m slot of @w : tensor<4x8xf32> init zeros
// ACC-NEXT:    train.param @w.v slot of @w : tensor<4x8xf32> init zeros
// ACC-NEXT:    train.optimizer @adam adam
// ACC-NEXT:    func.func @step(%[[X:[a-z0-9]+]]: tensor<2x4xf32>) -> tensor<f32> attributes {train.accumulate_steps = 4 : i64, train.step} {
// ACC-NOT:     train.step_index
// ACC:         %[[DW:.*]] = train.matmul %[[X]], %{{.*}} transpose_a
// ACC-NEXT:    %[[ACC:.*]] = train.load @w.grad : tensor<4x8xf32>
// ACC-NEXT:    %[[SUM:.*]] = train.add %[[ACC]], %[[DW]] : tensor<4x8xf32>
// ACC-NEXT:    train.store %[[SUM]] to @w.grad : tensor<4x8xf32>
// ACC-NEXT:    return
// ACC-NEXT:  }
// ACC-NEXT:  func.func @step_apply() attributes {train.apply_step} {
// ACC-NEXT:    %[[STEP:.*]] = train.step_index : tensor<i64>
// ACC-NEXT:    %[[TOTAL:.*]] = train.load @w.grad : tensor<4x8xf32>
// ACC-NEXT:    %[[MEAN:.*]] = train.scale %[[TOTAL]] by 2.500000e-01 : tensor<4x8xf32>
// ACC-NEXT:    %[[W:.*]] = train.load @w : tensor<4x8xf32>
// ACC-NEXT:    %[[M:.*]] = train.load @w.m : tensor<4x8xf32>
// ACC-NEXT:    %[[V:.*]] = train.load @w.v : tensor<4x8xf32>
// ACC-NEXT:    %[[NEW_W:.*]], %[[NEW_M:.*]], %[[NEW_V:.*]] = train.adam %[[W]], %[[MEAN]], %[[M]], %[[V]] step %[[STEP]] with @adam
// ACC-NEXT:    train.store %[[NEW_M]] to @w.m : tensor<4x8xf32>
// ACC-NEXT:    train.store %[[NEW_V]] to @w.v : tensor<4x8xf32>
// ACC-NEXT:    train.store %[[NEW_W]] to @w : tensor<4x8xf32>
// ACC-NEXT:    %[[ZEROS:.*]] = arith.constant dense<0.000000e+00> : tensor<4x8xf32>
// ACC-NEXT:    train.store %[[ZEROS]] to @w.grad : tensor<4x8xf32>
// ACC-NEXT:    return
module @accumulate {
  train.param @w param : tensor<4x8xf32> init normal(0.0, 0.02)
  train.optimizer @adam adam lr 1.0e-03

  func.func @step(%x: tensor<2x4xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<4x8xf32>
    %y = train.matmul %x, %w : tensor<2x4xf32>, tensor<4x8xf32> -> tensor<2x8xf32>
    %loss = train.reduce_sum %y dims [0, 1] : tensor<2x8xf32> -> tensor<f32>
    %dw = train.matmul %x, %y transpose_a : tensor<2x4xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
    train.apply_gradient %dw to @w with @adam : tensor<4x8xf32>
    return %loss : tensor<f32>
  }
}

// -----

// Accumulation under mixed precision: the accumulator is f32 (K additions
// rounded to bf16 would lose the gradients' low bits), so the micro-step
// widens the bf16 gradient before adding it; the apply step updates the
// fp32 master and casts back. SGD reads no step index, so the apply step
// has none.

// ACC-LABEL: module @accumulate_mixed_precision
// ACC-NEXT:    train.param @w param : tensor<8xbf16> init zeros
// ACC-NEXT:    train.param @w.grad grad_accum of @w : tensor<8xf32> init zeros
// ACC-NEXT:    train.param @w.master master of @w : tensor<8xf32>{{$}}
// ACC-NEXT:    train.optimizer @sgd sgd
// ACC-NEXT:    func.func @step(%[[DW:[a-z0-9]+]]: tensor<8xbf16>) attributes {train.accumulate_steps = 4 : i64, train.step} {
// ACC-NEXT:    %[[WIDE:.*]] = train.cast %[[DW]] : tensor<8xbf16> -> tensor<8xf32>
// ACC-NEXT:    %[[ACC:.*]] = train.load @w.grad : tensor<8xf32>
// ACC-NEXT:    %[[SUM:.*]] = train.add %[[ACC]], %[[WIDE]] : tensor<8xf32>
// ACC-NEXT:    train.store %[[SUM]] to @w.grad : tensor<8xf32>
// ACC-NEXT:    return
// ACC-NEXT:  }
// ACC-NEXT:  func.func @step_apply() attributes {train.apply_step} {
// ACC-NEXT:    %[[TOTAL:.*]] = train.load @w.grad : tensor<8xf32>
// ACC-NEXT:    %[[MEAN:.*]] = train.scale %[[TOTAL]] by 2.500000e-01 : tensor<8xf32>
// ACC-NEXT:    %[[MASTER:.*]] = train.load @w.master : tensor<8xf32>
// ACC-NEXT:    %[[NEW_MASTER:.*]] = train.sgd %[[MASTER]], %[[MEAN]] with @sgd : tensor<8xf32>, tensor<8xf32>
// ACC-NEXT:    train.store %[[NEW_MASTER]] to @w.master : tensor<8xf32>
// ACC-NEXT:    %[[NEW_W:.*]] = train.cast %[[NEW_MASTER]] : tensor<8xf32> -> tensor<8xbf16>
// ACC-NEXT:    train.store %[[NEW_W]] to @w : tensor<8xbf16>
// ACC-NEXT:    %[[ZEROS:.*]] = arith.constant dense<0.000000e+00> : tensor<8xf32>
// ACC-NEXT:    train.store %[[ZEROS]] to @w.grad : tensor<8xf32>
// ACC-NEXT:    return
module @accumulate_mixed_precision {
  train.param @w param : tensor<8xbf16> init zeros
  train.optimizer @sgd sgd lr 1.0e-01

  func.func @step(%dw: tensor<8xbf16>) attributes {train.step} {
    train.apply_gradient %dw to @w with @sgd : tensor<8xbf16>
    return
  }
}
