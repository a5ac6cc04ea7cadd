// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-autodiff,dist-tensor-parallel{tp=2})" | FileCheck %s
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-autodiff,dist-tensor-parallel{tp=2},train-materialize-optimizer,dist-data-parallel{mesh=2,2},dist-lower-reshard)" | FileCheck %s --check-prefix=MESH
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-pipeline{stage=3 ranks=2 tp=2})" | FileCheck %s --check-prefix=ZERO3

// dist-tensor-parallel{tp=N} splits each parameter its `dist.sbp` plans
// over a tensor-parallel axis of N ranks and lets the split flow through
// the step op by op (zero/analysis/SbpRules.h): every op runs by the
// signature its operands already have where one exists, and a
// `dist.reshard` boxes what disagrees. Megatron-LM's collectives are not
// written in; they fall out of the rules.

// A column-parallel linear (weight [S(1)], bias [S(0)]) feeding a
// row-parallel one (weight [S(0)]): the hidden layer stays split on every
// rank, the row-parallel matmul contracts the split dimension, so its
// result is partial and is all-reduced before the whole bias and the loss.
// The backward needs no collective here: the step's input takes no
// gradient, and every weight gradient comes out in its parameter's split.

// CHECK-LABEL: module @mlp attributes {dist.placement = #dist.placement<cpu, [2]>, dist.tp_axis = 0 : i64}
// CHECK:         train.param @fc1.w param : tensor<8x16xf32> split dim 1 over 0 init normal(0.0, 0.02)
// CHECK-NEXT:    train.param @fc1.b param : tensor<16xf32> split dim 0 over 0 init zeros
// CHECK-NEXT:    train.param @fc2.w param : tensor<16x4xf32> split dim 0 over 0 init normal(0.0, 0.02)
// CHECK-NEXT:    train.param @fc2.b param : tensor<4xf32> init zeros
// CHECK:         %[[W1:.*]] = train.load @fc1.w : tensor<8x8xf32>
// CHECK:         %[[W2:.*]] = train.load @fc2.w : tensor<8x4xf32>
// CHECK:         %[[XW1:.*]] = train.matmul %{{.*}}, %[[W1]] : tensor<6x8xf32>, tensor<8x8xf32> -> tensor<6x8xf32>
// CHECK:         %[[H:.*]] = train.gelu %{{.*}} : tensor<6x8xf32>
// CHECK-NEXT:    %[[HW2:.*]] = train.matmul %[[H]], %[[W2]] : tensor<6x8xf32>, tensor<8x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT:    %[[SUM:.*]] = dist.reshard %[[HW2]] from [P(sum)] to [B] : tensor<6x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT:    train.bias_add %[[SUM]], %{{.*}} : tensor<6x4xf32>, tensor<4xf32>
// CHECK-NOT:     dist.reshard
// CHECK:         train.apply_gradient %{{.*}} to @fc1.w with @adam : tensor<8x8xf32>
// CHECK-NEXT:    train.apply_gradient %{{.*}} to @fc1.b with @adam : tensor<8xf32>
// CHECK-NEXT:    train.apply_gradient %{{.*}} to @fc2.w with @adam : tensor<8x4xf32>
// CHECK-NEXT:    train.apply_gradient %{{.*}} to @fc2.b with @adam : tensor<4xf32>

// Composed with dist-data-parallel on a 2x2 mesh: the data axes go first,
// the tensor-parallel one last (its ranks consecutive), the batch is split
// over the data axes only, the tensor-parallel all-reduce names axis 2 and
// the gradient averages axes 1 and 0. The optimizer's slots are split as
// their parameters.

// MESH-LABEL: module @mlp attributes {dist.placement = #dist.placement<cpu, [2, 2, 2]>, dist.tp_axis = 2 : i64, dist.zero_stage = 0 : i64}
// MESH:         train.param @fc1.w param : tensor<8x16xf32> split dim 1 over 2
// MESH:         train.param @fc1.w.m slot of @fc1.w : tensor<8x16xf32> split dim 1 over 2 init zeros
// MESH:         func.func @step(%{{.*}}: tensor<6x8xf32> {dist.sbp = #dist.sbp<[S(0), S(0), B]>}, %{{.*}}: tensor<6xi32> {dist.sbp = #dist.sbp<[S(0), S(0), B]>})
// MESH:         dist.all_reduce sum %{{.*}} axis 2 : tensor<6x4xf32>
// MESH-NOT:     axis 2
// MESH:         %[[DW:.*]] = train.matmul %{{.*}} transpose_a : tensor<6x8xf32>, tensor<6x8xf32> -> tensor<8x8xf32>
// MESH-NEXT:    %[[DW1:.*]] = dist.all_reduce mean %[[DW]] axis 1 : tensor<8x8xf32>
// MESH-NEXT:    dist.all_reduce mean %[[DW1]] axis 0 : tensor<8x8xf32>
// ZeRO on top (zero-pipeline stage=3 on 2 data-parallel ranks x tp 2):
// zero-shard cuts each tensor-parallel shard (8x8 of fc1.w's 8x16) flat
// over the data-parallel axis 0 only, and its gathers and reduce-scatters
// run over axis 0 carrying the tensor-parallel shards; the tensor-parallel
// all-reduce stays on axis 1.

// ZERO3-LABEL: module @mlp attributes {dist.placement = #dist.placement<cpu, [2, 2]>, dist.tp_axis = 1 : i64, dist.zero_stage = 3 : i64}
// ZERO3:         train.param @fc1.w param : tensor<8x16xf32> split dim 1 over 1 sharded flat over 0 -> tensor<32xf32>
// ZERO3-NEXT:    train.param @fc1.w.m slot of @fc1.w : tensor<8x16xf32> split dim 1 over 1 sharded flat over 0 -> tensor<32xf32>
// ZERO3:         dist.all_gather %{{.*}} axis 0 dim 0 : tensor<54xf32> -> tensor<108xf32>
// ZERO3:         dist.all_reduce sum %{{.*}} axis 1 : tensor<6x4xf32>
// ZERO3:         dist.reduce_scatter mean %{{.*}} axis 0 dim 0 : tensor<108xf32> -> tensor<54xf32>
// ZERO3-NOT:     axis 1
// ZERO3:         return
module @mlp {
  train.param @fc1.w param : tensor<8x16xf32> init normal(0.0, 0.02) {dist.sbp = #dist.sbp<[S(1)]>}
  train.param @fc1.b param : tensor<16xf32> init zeros {dist.sbp = #dist.sbp<[S(0)]>}
  train.param @fc2.w param : tensor<16x4xf32> init normal(0.0, 0.02) {dist.sbp = #dist.sbp<[S(0)]>}
  train.param @fc2.b param : tensor<4xf32> init zeros
  train.optimizer @adam adam lr 1.0e-03 betas(0.9, 0.999) eps 1.0e-08

  func.func @step(%x: tensor<6x8xf32>, %labels: tensor<6xi32>) -> tensor<f32>
      attributes {train.step} {
    %w1 = train.load @fc1.w : tensor<8x16xf32>
    %b1 = train.load @fc1.b : tensor<16xf32>
    %w2 = train.load @fc2.w : tensor<16x4xf32>
    %b2 = train.load @fc2.b : tensor<4xf32>
    %xw1 = train.matmul %x, %w1 : tensor<6x8xf32>, tensor<8x16xf32> -> tensor<6x16xf32>
    %pre = train.bias_add %xw1, %b1 : tensor<6x16xf32>, tensor<16xf32>
    %h = train.gelu %pre : tensor<6x16xf32>
    %hw2 = train.matmul %h, %w2 : tensor<6x16xf32>, tensor<16x4xf32> -> tensor<6x4xf32>
    %logits = train.bias_add %hw2, %b2 : tensor<6x4xf32>, tensor<4xf32>
    %loss = train.softmax_cross_entropy %logits, %labels : tensor<6x4xf32>, tensor<6xi32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A layer norm before a column-parallel projection whose output a whole
// loss reads. The output is gathered for the loss (no loss parallelism yet)
// and the loss gradient sliced back; the slice moves before the weight
// gradient, so each rank computes only its split of it. The projection's
// input gradient is partial, so the layer norm's gain and bias gradients
// are too: each is all-reduced once, before its update.

// CHECK-LABEL: module @norm
// CHECK:         %[[LN:[a-z0-9_]+]], %{{.*}}, %{{.*}} = train.layer_norm
// CHECK:         %[[Y:.*]] = train.matmul %[[LN]], %{{.*}} : tensor<6x8xf32>, tensor<8x8xf32> -> tensor<6x8xf32>
// CHECK-NEXT:    %[[WHOLE:.*]] = dist.reshard %[[Y]] from [S(1)] to [B] : tensor<6x8xf32> -> tensor<6x16xf32>
// CHECK-NEXT:    train.softmax_cross_entropy %[[WHOLE]]
// CHECK:         %[[DY:.*]] = train.softmax_cross_entropy_grad
// CHECK-NEXT:    %[[DYS:.*]] = dist.reshard %[[DY]] from [B] to [S(1)] : tensor<6x16xf32> -> tensor<6x8xf32>
// CHECK-NEXT:    %[[DX:.*]] = train.matmul %[[DYS]], %{{.*}} transpose_b : tensor<6x8xf32>, tensor<8x8xf32> -> tensor<6x8xf32>
// CHECK-NEXT:    %[[DW:.*]] = train.matmul %[[LN]], %[[DYS]] transpose_a : tensor<6x8xf32>, tensor<6x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT:    %{{.*}}, %[[DG:.*]], %[[DB:.*]] = train.layer_norm_grad %[[DX]]
// CHECK-NEXT:    %[[G:.*]] = dist.reshard %[[DG]] from [P(sum)] to [B] : tensor<8xf32> -> tensor<8xf32>
// CHECK-NEXT:    train.apply_gradient %[[G]] to @ln.g
// CHECK-NEXT:    %[[B:.*]] = dist.reshard %[[DB]] from [P(sum)] to [B] : tensor<8xf32> -> tensor<8xf32>
// CHECK-NEXT:    train.apply_gradient %[[B]] to @ln.b
// CHECK-NEXT:    train.apply_gradient %[[DW]] to @fc.w with @sgd : tensor<8x8xf32>
module @norm {
  train.param @ln.g param : tensor<8xf32> init ones
  train.param @ln.b param : tensor<8xf32> init zeros
  train.param @fc.w param : tensor<8x16xf32> init normal(0.0, 0.02) {dist.sbp = #dist.sbp<[S(1)]>}
  train.optimizer @sgd sgd lr 1.0e-01

  func.func @step(%x: tensor<6x8xf32>, %labels: tensor<6xi32>) -> tensor<f32>
      attributes {train.step} {
    %g = train.load @ln.g : tensor<8xf32>
    %b = train.load @ln.b : tensor<8xf32>
    %w = train.load @fc.w : tensor<8x16xf32>
    %y, %mean, %rstd = train.layer_norm %x, %g, %b eps 1.0e-05 : tensor<6x8xf32>, tensor<8xf32> -> tensor<6xf32>
    %h = train.matmul %y, %w : tensor<6x8xf32>, tensor<8x16xf32> -> tensor<6x16xf32>
    %loss = train.softmax_cross_entropy %h, %labels : tensor<6x16xf32>, tensor<6xi32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Heads split: the query projection's split features are split heads
// after the reshape ([4, 8] -> [1, 4, 4, 2] keeps the features' major part
// as the heads), and the scores, the causal mask and the softmax run on
// each rank's two heads with no collective; the row-parallel output
// projection's partial result is all-reduced where the step returns it.

// CHECK-LABEL: module @heads
// CHECK:         %[[Q:.*]] = train.matmul %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT:    %[[Q4:.*]] = train.reshape %[[Q]] : tensor<4x4xf32> -> tensor<1x4x2x2xf32>
// CHECK-NEXT:    %[[QT:.*]] = train.transpose %[[Q4]] permutation [0, 2, 1, 3] : tensor<1x4x2x2xf32> -> tensor<1x2x4x2xf32>
// CHECK-NEXT:    train.matmul %[[QT]], %[[QT]] transpose_b : tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32> -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    train.causal_mask %{{.*}} : tensor<1x2x4x4xf32>
// CHECK-NEXT:    train.softmax %{{.*}} : tensor<1x2x4x4xf32>
// CHECK-NOT:     dist.reshard
// CHECK:         %[[O:.*]] = train.matmul %{{.*}}, %{{.*}} : tensor<4x4xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK:         %[[OUT:.*]] = dist.reshard %[[O]] from [P(sum)] to [B] : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    return %[[OUT]] : tensor<4x8xf32>
module @heads {
  train.param @q.w param : tensor<8x8xf32> init normal(0.0, 0.02) {dist.sbp = #dist.sbp<[S(1)]>}
  train.param @o.w param : tensor<8x8xf32> init normal(0.0, 0.02) {dist.sbp = #dist.sbp<[S(0)]>}
  train.optimizer @sgd sgd lr 1.0e-01

  func.func @step(%x: tensor<1x4x8xf32>, %dy: tensor<4x8xf32>) -> tensor<4x8xf32>
      attributes {train.step} {
    %wq = train.load @q.w : tensor<8x8xf32>
    %wo = train.load @o.w : tensor<8x8xf32>
    %x2 = train.reshape %x : tensor<1x4x8xf32> -> tensor<4x8xf32>
    %q = train.matmul %x2, %wq : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %q4 = train.reshape %q : tensor<4x8xf32> -> tensor<1x4x4x2xf32>
    %qt = train.transpose %q4 permutation [0, 2, 1, 3] : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
    %s = train.matmul %qt, %qt transpose_b : tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32> -> tensor<1x4x4x4xf32>
    %m = train.causal_mask %s fill 0xFFF0000000000000 : tensor<1x4x4x4xf32>
    %p = train.softmax %m : tensor<1x4x4x4xf32>
    %a = train.matmul %p, %qt : tensor<1x4x4x4xf32>, tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
    %at = train.transpose %a permutation [0, 2, 1, 3] : tensor<1x4x4x2xf32> -> tensor<1x4x4x2xf32>
    %a2 = train.reshape %at : tensor<1x4x4x2xf32> -> tensor<4x8xf32>
    %o = train.matmul %a2, %wo : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %dwo = train.matmul %a2, %dy transpose_a : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
    train.apply_gradient %dwo to @o.w with @sgd : tensor<8x8xf32>
    return %o : tensor<4x8xf32>
  }
}
