// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(dist-data-parallel)" | FileCheck %s
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(dist-data-parallel{ranks=4})" | FileCheck %s --check-prefix=RANKS

// dist-data-parallel makes a single-device step the SPMD step every rank of
// placement axis 0 runs on its own slice of the batch:
//
// * every step input of rank >= 1 is marked `dist.sbp = #dist.sbp<[S(0)]>`
//   (its shape stays the per-rank shape);
// * every gradient that reaches an optimizer is averaged by
//   `dist.all_reduce mean ... axis 0` inserted right after the op that
//   produced it, so the collective can overlap the rest of the backward;
// * every floating-point result (the loss) is averaged before `return`;
// * the module is marked `dist.zero_stage = 0`.
//
// The group is the module's `dist.placement` (first RUN line) or `ranks=N`
// (second RUN line, RANKS), which resizes a placement that differs.

// The basic rewrite on a hand-written linear classifier. The integer labels
// are split like the activations; the scalar seed of the backward has no
// batch dimension and is not split; the integer result is not averaged.

// CHECK-LABEL: module @basic attributes {dist.placement = #dist.placement<cpu, [2]>, dist.zero_stage = 0 : i64}
// CHECK:       func.func @step(
// CHECK-SAME:      %[[X:[a-z0-9]+]]: tensor<4x6xf32> {dist.sbp = #dist.sbp<[S(0)]>},
// CHECK-SAME:      %[[LABELS:[a-z0-9]+]]: tensor<4xi32> {dist.sbp = #dist.sbp<[S(0)]>},
// CHECK-SAME:      %[[SEED:[a-z0-9]+]]: tensor<f32>)
// CHECK-SAME:      -> (tensor<f32>, tensor<4xi32>) attributes {train.step}
// CHECK:         %[[LOSS:.*]] = train.softmax_cross_entropy
// CHECK-NEXT:    %[[DLOGITS:.*]] = train.softmax_cross_entropy_grad %{{.*}}, %[[LABELS]], %[[SEED]]
// CHECK-NEXT:    %[[DW:.*]] = train.matmul %[[X]], %[[DLOGITS]] transpose_a : tensor<4x6xf32>, tensor<4x3xf32> -> tensor<6x3xf32>
// CHECK-NEXT:    %[[DW_MEAN:.*]] = dist.all_reduce mean %[[DW]] axis 0 : tensor<6x3xf32>
// CHECK-NEXT:    %[[DB:.*]] = train.reduce_sum %[[DLOGITS]] dims [0] : tensor<4x3xf32> -> tensor<3xf32>
// CHECK-NEXT:    %[[DB_MEAN:.*]] = dist.all_reduce mean %[[DB]] axis 0 : tensor<3xf32>
// CHECK-NEXT:    train.apply_gradient %[[DW_MEAN]] to @w with @sgd : tensor<6x3xf32>
// CHECK-NEXT:    train.apply_gradient %[[DB_MEAN]] to @b with @sgd : tensor<3xf32>
// CHECK-NEXT:    %[[LOSS_MEAN:.*]] = dist.all_reduce mean %[[LOSS]] axis 0 : tensor<f32>
// CHECK-NEXT:    return %[[LOSS_MEAN]], %[[LABELS]] : tensor<f32>, tensor<4xi32>

// RANKS-LABEL: module @basic attributes {dist.placement = #dist.placement<cpu, [4]>, dist.zero_stage = 0 : i64}
// RANKS-COUNT-3: dist.all_reduce mean
// RANKS-NOT:     dist.all_reduce
// RANKS:         return
module @basic attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<6x3xf32> init normal(0.0, 0.02)
  train.param @b param : tensor<3xf32> init zeros
  train.optimizer @sgd sgd lr 1.0e-01

  func.func @step(%x: tensor<4x6xf32>, %labels: tensor<4xi32>, %seed: tensor<f32>)
      -> (tensor<f32>, tensor<4xi32>) attributes {train.step} {
    %w = train.load @w : tensor<6x3xf32>
    %b = train.load @b : tensor<3xf32>
    %xw = train.matmul %x, %w : tensor<4x6xf32>, tensor<6x3xf32> -> tensor<4x3xf32>
    %logits = train.bias_add %xw, %b : tensor<4x3xf32>, tensor<3xf32>
    %loss = train.softmax_cross_entropy %logits, %labels : tensor<4x3xf32>, tensor<4xi32> -> tensor<f32>
    %dlogits = train.softmax_cross_entropy_grad %logits, %labels, %seed : tensor<4x3xf32>, tensor<4xi32>
    %dw = train.matmul %x, %dlogits transpose_a : tensor<4x6xf32>, tensor<4x3xf32> -> tensor<6x3xf32>
    %db = train.reduce_sum %dlogits dims [0] : tensor<4x3xf32> -> tensor<3xf32>
    train.apply_gradient %dw to @w with @sgd : tensor<6x3xf32>
    train.apply_gradient %db to @b with @sgd : tensor<3xf32>
    return %loss, %labels : tensor<f32>, tensor<4xi32>
  }
}

// -----

// After train-materialize-optimizer the gradient reaches an explicit update
// op instead; it is averaged the same way, right where it is produced and
// not next to the update. Only the update's operand is redirected: another
// use of the gradient (%sq) still reads the local value.

// CHECK-LABEL: module @explicit_update
// CHECK:         func.func @step(%[[X:[a-z0-9]+]]: tensor<4x6xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %[[DY:[a-z0-9]+]]: tensor<4x3xf32> {dist.sbp = #dist.sbp<[S(0)]>})
// CHECK-NEXT:    %[[STEP:.*]] = train.step_index : tensor<i64>
// CHECK-NEXT:    %[[DW:.*]] = train.matmul %[[X]], %[[DY]] transpose_a
// CHECK-NEXT:    %[[DW_MEAN:.*]] = dist.all_reduce mean %[[DW]] axis 0 : tensor<6x3xf32>
// CHECK-NEXT:    %{{.*}} = train.mul %[[DW]], %[[DW]] : tensor<6x3xf32>
// CHECK-NEXT:    %[[W:.*]] = train.load @w : tensor<6x3xf32>
// CHECK-NEXT:    %[[M:.*]] = train.load @w.m : tensor<6x3xf32>
// CHECK-NEXT:    %[[V:.*]] = train.load @w.v : tensor<6x3xf32>
// CHECK-NEXT:    %[[NEW_W:.*]], %[[NEW_M:.*]], %[[NEW_V:.*]] = train.adam %[[W]], %[[DW_MEAN]], %[[M]], %[[V]] step %[[STEP]] with @adam
// CHECK-NEXT:    train.store %[[NEW_M]] to @w.m
// CHECK-NEXT:    train.store %[[NEW_V]] to @w.v
// CHECK-NEXT:    train.store %[[NEW_W]] to @w
// CHECK-NEXT:    return{{$}}
module @explicit_update attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<6x3xf32> init normal(0.0, 0.02)
  train.param @w.m slot of @w : tensor<6x3xf32> init zeros
  train.param @w.v slot of @w : tensor<6x3xf32> init zeros
  train.optimizer @adam adam lr 1.0e-03

  func.func @step(%x: tensor<4x6xf32>, %dy: tensor<4x3xf32>) attributes {train.step} {
    %step = train.step_index : tensor<i64>
    %dw = train.matmul %x, %dy transpose_a : tensor<4x6xf32>, tensor<4x3xf32> -> tensor<6x3xf32>
    %sq = train.mul %dw, %dw : tensor<6x3xf32>
    %w = train.load @w : tensor<6x3xf32>
    %m = train.load @w.m : tensor<6x3xf32>
    %v = train.load @w.v : tensor<6x3xf32>
    %new_w, %new_m, %new_v = train.adam %w, %dw, %m, %v step %step with @adam
        : tensor<6x3xf32>, tensor<6x3xf32>, tensor<6x3xf32>
    train.store %new_m to @w.m : tensor<6x3xf32>
    train.store %new_v to @w.v : tensor<6x3xf32>
    train.store %new_w to @w : tensor<6x3xf32>
    return
  }
}

// -----

// One gradient feeding two optimizers (here two parameters of one shape) is
// averaged once, and both read the average.

// CHECK-LABEL: module @shared_gradient
// CHECK:         %[[G:.*]] = train.matmul
// CHECK-NEXT:    %[[G_MEAN:.*]] = dist.all_reduce mean %[[G]] axis 0 : tensor<6x3xf32>
// CHECK-NEXT:    train.apply_gradient %[[G_MEAN]] to @a with @sgd
// CHECK-NEXT:    train.apply_gradient %[[G_MEAN]] to @b with @sgd
// CHECK-NEXT:    return
module @shared_gradient attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @a param : tensor<6x3xf32> init zeros
  train.param @b param : tensor<6x3xf32> init zeros
  train.optimizer @sgd sgd lr 1.0e-01

  func.func @step(%x: tensor<4x6xf32>, %dy: tensor<4x3xf32>) attributes {train.step} {
    %g = train.matmul %x, %dy transpose_a : tensor<4x6xf32>, tensor<4x3xf32> -> tensor<6x3xf32>
    train.apply_gradient %g to @a with @sgd : tensor<6x3xf32>
    train.apply_gradient %g to @b with @sgd : tensor<6x3xf32>
    return
  }
}

// -----

// With no ranks option the group is the module's placement, device
// included; ranks=4 replaces it with a 4-rank group on the same device.

// CHECK-LABEL: module @placement_from_module attributes {dist.placement = #dist.placement<cuda, [8]>, dist.zero_stage = 0 : i64}
// CHECK:         dist.all_reduce mean %{{.*}} axis 0 : tensor<6xf32>
// RANKS-LABEL: module @placement_from_module attributes {dist.placement = #dist.placement<cuda, [4]>, dist.zero_stage = 0 : i64}
module @placement_from_module attributes {dist.placement = #dist.placement<cuda, [8]>} {
  train.param @w param : tensor<6xf32> init zeros
  train.optimizer @sgd sgd lr 1.0e-01

  func.func @step(%x: tensor<4x6xf32>) attributes {train.step} {
    %g = train.reduce_sum %x dims [0] : tensor<4x6xf32> -> tensor<6xf32>
    train.apply_gradient %g to @w with @sgd : tensor<6xf32>
    return
  }
}

// -----

// A single-device module, placed on one rank: ranks=4 makes it four.

// CHECK-LABEL: module @one_rank attributes {dist.placement = #dist.placement<cpu, [1]>, dist.zero_stage = 0 : i64}
// RANKS-LABEL: module @one_rank attributes {dist.placement = #dist.placement<cpu, [4]>, dist.zero_stage = 0 : i64}
// RANKS:         func.func @step(%{{.*}}: tensor<4x6xf32> {dist.sbp = #dist.sbp<[S(0)]>})
// RANKS-NEXT:    %[[G:.*]] = train.reduce_sum
// RANKS-NEXT:    dist.all_reduce mean %[[G]] axis 0 : tensor<6xf32>
module @one_rank attributes {dist.placement = #dist.placement<cpu, [1]>} {
  train.param @w param : tensor<6xf32> init zeros
  train.optimizer @sgd sgd lr 1.0e-01

  func.func @step(%x: tensor<4x6xf32>) attributes {train.step} {
    %g = train.reduce_sum %x dims [0] : tensor<4x6xf32> -> tensor<6xf32>
    train.apply_gradient %g to @w with @sgd : tensor<6xf32>
    return
  }
}

// -----

// Compute written in upstream linalg: the gradient is a linalg.matmul
// result and is averaged right after it.

// CHECK-LABEL: module @linalg
// CHECK:         func.func @step(%[[X:[a-z0-9]+]]: tensor<8x16xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %[[DY:[a-z0-9]+]]: tensor<8x4xf32> {dist.sbp = #dist.sbp<[S(0)]>})
// CHECK:         linalg.transpose ins(%[[X]] : tensor<8x16xf32>)
// CHECK:         %[[DW:.*]] = linalg.matmul ins(%{{.*}}, %[[DY]] : tensor<16x8xf32>, tensor<8x4xf32>) outs(%{{.*}} : tensor<16x4xf32>) -> tensor<16x4xf32>
// CHECK-NEXT:    %[[DW_MEAN:.*]] = dist.all_reduce mean %[[DW]] axis 0 : tensor<16x4xf32>
// CHECK-NEXT:    train.apply_gradient %[[DW_MEAN]] to @w with @sgd : tensor<16x4xf32>
// CHECK-NEXT:    return{{$}}
module @linalg attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<16x4xf32> init uniform(-0.25, 0.25)
  train.optimizer @sgd sgd lr 1.0e-01

  func.func @step(%x: tensor<8x16xf32>, %dy: tensor<8x4xf32>) attributes {train.step} {
    %zero = arith.constant 0.0 : f32
    %xt_empty = tensor.empty() : tensor<16x8xf32>
    %xt = linalg.transpose ins(%x : tensor<8x16xf32>) outs(%xt_empty : tensor<16x8xf32>) permutation = [1, 0]
    %dw_empty = tensor.empty() : tensor<16x4xf32>
    %dw_init = linalg.fill ins(%zero : f32) outs(%dw_empty : tensor<16x4xf32>) -> tensor<16x4xf32>
    %dw = linalg.matmul ins(%xt, %dy : tensor<16x8xf32>, tensor<8x4xf32>)
                        outs(%dw_init : tensor<16x4xf32>) -> tensor<16x4xf32>
    train.apply_gradient %dw to @w with @sgd : tensor<16x4xf32>
    return
  }
}

// -----

// With gradient accumulation (train-materialize-optimizer accumulate-steps)
// the micro-step only adds local gradients into the accumulator: nothing is
// reduced there but the loss. The gradient is averaged once per optimizer
// step, in the apply function, where the averaged accumulator reaches the
// update (DDP's no_sync).

// CHECK-LABEL: module @accumulated
// CHECK:         func.func @step(%[[DW:[a-z0-9]+]]: tensor<6xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %[[LOSS:[a-z0-9]+]]: tensor<f32>) -> tensor<f32> attributes {train.accumulate_steps = 4 : i64, train.step}
// CHECK-NEXT:    %[[ACC:.*]] = train.load @w.grad : tensor<6xf32>
// CHECK-NEXT:    %[[SUM:.*]] = train.add %[[ACC]], %[[DW]] : tensor<6xf32>
// CHECK-NEXT:    train.store %[[SUM]] to @w.grad : tensor<6xf32>
// CHECK-NEXT:    %[[LOSS_MEAN:.*]] = dist.all_reduce mean %[[LOSS]] axis 0 : tensor<f32>
// CHECK-NEXT:    return %[[LOSS_MEAN]] : tensor<f32>
// CHECK:         func.func @step_apply() attributes {train.apply_step}
// CHECK-NEXT:    %[[TOTAL:.*]] = train.load @w.grad : tensor<6xf32>
// CHECK-NEXT:    %[[LOCAL_MEAN:.*]] = train.scale %[[TOTAL]] by 2.500000e-01 : tensor<6xf32>
// CHECK-NEXT:    %[[MEAN:.*]] = dist.all_reduce mean %[[LOCAL_MEAN]] axis 0 : tensor<6xf32>
// CHECK-NEXT:    %[[W:.*]] = train.load @w : tensor<6xf32>
// CHECK-NEXT:    %{{.*}} = train.sgd %[[W]], %[[MEAN]] with @sgd
module @accumulated attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<6xf32> init zeros
  train.param @w.grad grad_accum of @w : tensor<6xf32> init zeros
  train.optimizer @sgd sgd lr 1.0e-01

  func.func @step(%dw: tensor<6xf32>, %loss: tensor<f32>) -> tensor<f32>
      attributes {train.accumulate_steps = 4 : i64, train.step} {
    %acc = train.load @w.grad : tensor<6xf32>
    %sum = train.add %acc, %dw : tensor<6xf32>
    train.store %sum to @w.grad : tensor<6xf32>
    return %loss : tensor<f32>
  }
  func.func @step_apply() attributes {train.apply_step} {
    %total = train.load @w.grad : tensor<6xf32>
    %mean = train.scale %total by 2.500000e-01 : tensor<6xf32>
    %w = train.load @w : tensor<6xf32>
    %new_w = train.sgd %w, %mean with @sgd : tensor<6xf32>, tensor<6xf32>
    train.store %new_w to @w : tensor<6xf32>
    %zeros = arith.constant dense<0.0> : tensor<6xf32>
    train.store %zeros to @w.grad : tensor<6xf32>
    return
  }
}

// -----

// Only scalar results (the loss) are averaged over the ranks: a batch-shaped
// result holds this rank's own samples and is returned as it is.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  // CHECK-LABEL: func.func @batch_result_stays_local
  func.func @batch_result_stays_local(%x: tensor<8x4xf32>) -> (tensor<f32>, tensor<8x4xf32>)
      attributes {train.step} {
    %y = train.relu %x : tensor<8x4xf32>
    %loss = train.reduce_mean %y dims [0, 1] : tensor<8x4xf32> -> tensor<f32>
    // CHECK:      %[[MEAN:.*]] = dist.all_reduce mean %{{.*}} axis 0 : tensor<f32>
    // CHECK-NOT:  dist.all_reduce
    // CHECK:      return %[[MEAN]], %{{.*}} : tensor<f32>, tensor<8x4xf32>
    return %loss, %y : tensor<f32>, tensor<8x4xf32>
  }
}

// -----

// A loss that ignores labels (PyTorch's ignore_index, e.g. -100 on the
// prompt and the padding) divides by the count of the labels it keeps. The
// count is averaged over the ranks right where it is computed, before the
// loss and its gradient use it: each rank's loss is then its own sum over
// the global batch's mean count, and the mean over ranks is the global
// batch's mean over its real labels. A rank holding fewer real labels
// weighs less, as in one process training on the whole batch.

module @ignored_labels attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<6x3xf32> init normal(0.0, 0.02)
  train.optimizer @sgd sgd lr 1.0e-01
  // CHECK-LABEL: func.func @step(
  // CHECK-SAME:      %[[X:[a-z0-9]+]]: tensor<4x6xf32> {dist.sbp = #dist.sbp<[S(0)]>},
  // CHECK-SAME:      %[[LABELS:[a-z0-9]+]]: tensor<4xi32> {dist.sbp = #dist.sbp<[S(0)]>})
  // CHECK:         %[[COUNT:.*]] = train.count_labels %[[LABELS]] {ignore_index = -100 : i64}
  // CHECK-NEXT:    %[[MEAN_COUNT:.*]] = dist.all_reduce mean %[[COUNT]] axis 0 : tensor<f32>
  // CHECK:         train.softmax_cross_entropy %{{.*}}, %[[LABELS]] count %[[MEAN_COUNT]] {ignore_index = -100 : i64}
  // CHECK:         train.softmax_cross_entropy_grad %{{.*}}, %[[LABELS]], %{{.*}} count %[[MEAN_COUNT]] {ignore_index = -100 : i64}
  func.func @step(%x: tensor<4x6xf32>, %labels: tensor<4xi32>) -> tensor<f32>
      attributes {train.step} {
    %count = train.count_labels %labels {ignore_index = -100 : i64} : tensor<4xi32> -> tensor<f32>
    %w = train.load @w : tensor<6x3xf32>
    %logits = train.matmul %x, %w : tensor<4x6xf32>, tensor<6x3xf32> -> tensor<4x3xf32>
    %loss = train.softmax_cross_entropy %logits, %labels count %count {ignore_index = -100 : i64} : tensor<4x3xf32>, tensor<4xi32> -> tensor<f32>
    %one = arith.constant dense<1.0> : tensor<f32>
    %dlogits = train.softmax_cross_entropy_grad %logits, %labels, %one count %count {ignore_index = -100 : i64} : tensor<4x3xf32>, tensor<4xi32>
    %dw = train.matmul %x, %dlogits transpose_a : tensor<4x6xf32>, tensor<4x3xf32> -> tensor<6x3xf32>
    train.apply_gradient %dw to @w with @sgd : tensor<6x3xf32>
    return %loss : tensor<f32>
  }
}
