// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=1 layout=flat})" | FileCheck %s --check-prefixes=CHECK,FLAT
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=1 layout=dim0})" | FileCheck %s --check-prefixes=CHECK,DIM0

// ZeRO stage 1: optimizer slots and fp32 master copies are stored sharded,
// parameters stay replicated. Each gradient stays full-size until the first
// update of the step, where all of them are reduce-scattered (mean) together;
// each update runs on this rank's shard and the new shards are all-gathered
// back into the replicated parameters at the end of the step.

// A linear layer trained with Adam over 4 ranks. 10x3 does not divide:
// flat shards hold ceil(30 / 4) = 8 elements, dim0 shards ceil(10 / 4) = 3
// rows; the 3-element bias gets 1 element per rank either way. The
// dist.all_reduce of each gradient is replaced; the loss is still averaged.

// CHECK-LABEL: module @stage1_linear
// CHECK-SAME:    dist.zero_stage = 1 : i64
// CHECK-NEXT:    train.param @w param : tensor<10x3xf32> init normal(0.0, 0.1)
// FLAT-NEXT:     train.param @w.m slot of @w : tensor<10x3xf32> sharded flat over 0 -> tensor<8xf32> init zeros
// FLAT-NEXT:     train.param @w.v slot of @w : tensor<10x3xf32> sharded flat over 0 -> tensor<8xf32> init zeros
// DIM0-NEXT:     train.param @w.m slot of @w : tensor<10x3xf32> sharded dim0 over 0 -> tensor<3x3xf32> init zeros
// DIM0-NEXT:     train.param @w.v slot of @w : tensor<10x3xf32> sharded dim0 over 0 -> tensor<3x3xf32> init zeros
// CHECK-NEXT:    train.param @b param : tensor<3xf32> init zeros
// FLAT-NEXT:     train.param @b.m slot of @b : tensor<3xf32> sharded flat over 0 -> tensor<1xf32> init zeros
// FLAT-NEXT:     train.param @b.v slot of @b : tensor<3xf32> sharded flat over 0 -> tensor<1xf32> init zeros
// DIM0-NEXT:     train.param @b.m slot of @b : tensor<3xf32> sharded dim0 over 0 -> tensor<1xf32> init zeros
// DIM0-NEXT:     train.param @b.v slot of @b : tensor<3xf32> sharded dim0 over 0 -> tensor<1xf32> init zeros
// CHECK-NEXT:    train.optimizer @adam
// CHECK-NEXT:    func.func @step(%[[X:[^:]+]]: tensor<2x10xf32> {{.*}}, %[[LABELS:[^:]+]]: tensor<2xi32>
// CHECK-NEXT:    %[[STEP:.+]] = train.step_index : tensor<i64>
// CHECK-NEXT:    %[[W:.+]] = train.load @w : tensor<10x3xf32>
// CHECK-NEXT:    %[[B:.+]] = train.load @b : tensor<3xf32>
// CHECK-NEXT:    %[[XW:.+]] = train.matmul %[[X]], %[[W]] :
// CHECK-NEXT:    %[[LOGITS:.+]] = train.bias_add %[[XW]], %[[B]] :
// CHECK-NEXT:    %[[LOSS:.+]] = train.softmax_cross_entropy %[[LOGITS]], %[[LABELS]] :
// CHECK-NEXT:    %[[ONE:.+]] = arith.constant
// CHECK-NEXT:    %[[DLOGITS:.+]] = train.softmax_cross_entropy_grad %[[LOGITS]], %[[LABELS]], %[[ONE]] :
// CHECK-NEXT:    %[[DW:.+]] = train.matmul %[[X]], %[[DLOGITS]] transpose_a : tensor<2x10xf32>, tensor<2x3xf32> -> tensor<10x3xf32>
// CHECK-NEXT:    %[[DB:.+]] = train.reduce_sum %[[DLOGITS]] dims [0] : tensor<2x3xf32> -> tensor<3xf32>
//
// Both gradients are reduce-scattered together just before the first update.
// FLAT-NEXT:     %[[DW_FLAT:.+]] = train.reshape %[[DW]] : tensor<10x3xf32> -> tensor<30xf32>
// FLAT-NEXT:     %[[DW_SHARD:.+]] = dist.reduce_scatter mean %[[DW_FLAT]] axis 0 dim 0 : tensor<30xf32> -> tensor<8xf32>
// DIM0-NEXT:     %[[DW_SHARD:.+]] = dist.reduce_scatter mean %[[DW]] axis 0 dim 0 : tensor<10x3xf32> -> tensor<3x3xf32>
// CHECK-NEXT:    %[[DB_SHARD:.+]] = dist.reduce_scatter mean %[[DB]] axis 0 dim 0 : tensor<3xf32> -> tensor<1xf32>
//
// Adam runs on this rank's slice of the replicated parameter.
// CHECK-NEXT:    %[[W_FULL:.+]] = train.load @w : tensor<10x3xf32>
// FLAT-NEXT:     %[[W_FLAT:.+]] = train.reshape %[[W_FULL]] : tensor<10x3xf32> -> tensor<30xf32>
// FLAT-NEXT:     %[[W_SLICE:.+]] = dist.slice %[[W_FLAT]] axis 0 dim 0 : tensor<30xf32> -> tensor<8xf32>
// FLAT-NEXT:     %[[WM:.+]] = train.load @w.m : tensor<8xf32>
// FLAT-NEXT:     %[[WV:.+]] = train.load @w.v : tensor<8xf32>
// FLAT-NEXT:     %[[W_NEW:[^ ,]+]], %[[WM_NEW:[^ ,]+]], %[[WV_NEW:[^ ,]+]] = train.adam %[[W_SLICE]], %[[DW_SHARD]], %[[WM]], %[[WV]] step %[[STEP]] with @adam : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
// DIM0-NEXT:     %[[W_SLICE:.+]] = dist.slice %[[W_FULL]] axis 0 dim 0 : tensor<10x3xf32> -> tensor<3x3xf32>
// DIM0-NEXT:     %[[WM:.+]] = train.load @w.m : tensor<3x3xf32>
// DIM0-NEXT:     %[[WV:.+]] = train.load @w.v : tensor<3x3xf32>
// DIM0-NEXT:     %[[W_NEW:[^ ,]+]], %[[WM_NEW:[^ ,]+]], %[[WV_NEW:[^ ,]+]] = train.adam %[[W_SLICE]], %[[DW_SHARD]], %[[WM]], %[[WV]] step %[[STEP]] with @adam : tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>
// CHECK-NEXT:    train.store %[[WM_NEW]] to @w.m
// CHECK-NEXT:    train.store %[[WV_NEW]] to @w.v
// CHECK-NEXT:    %[[B_FULL:.+]] = train.load @b : tensor<3xf32>
// CHECK-NEXT:    %[[B_SLICE:.+]] = dist.slice %[[B_FULL]] axis 0 dim 0 : tensor<3xf32> -> tensor<1xf32>
// CHECK-NEXT:    %[[BM:.+]] = train.load @b.m : tensor<1xf32>
// CHECK-NEXT:    %[[BV:.+]] = train.load @b.v : tensor<1xf32>
// CHECK-NEXT:    %[[B_NEW:[^ ,]+]], %[[BM_NEW:[^ ,]+]], %[[BV_NEW:[^ ,]+]] = train.adam %[[B_SLICE]], %[[DB_SHARD]], %[[BM]], %[[BV]] step %[[STEP]] with @adam : tensor<1xf32>, tensor<1xf32>, tensor<1xf32>
// CHECK-NEXT:    train.store %[[BM_NEW]] to @b.m : tensor<1xf32>
// CHECK-NEXT:    train.store %[[BV_NEW]] to @b.v : tensor<1xf32>
// CHECK-NEXT:    %[[MEAN_LOSS:.+]] = dist.all_reduce mean %[[LOSS]] axis 0 : tensor<f32>
//
// The new shards are gathered at the end of the step, then stored.
// FLAT-NEXT:     %[[W_GATHERED:.+]] = dist.all_gather %[[W_NEW]] axis 0 dim 0 : tensor<8xf32> -> tensor<30xf32>
// DIM0-NEXT:     %[[W_GATHERED:.+]] = dist.all_gather %[[W_NEW]] axis 0 dim 0 : tensor<3x3xf32> -> tensor<10x3xf32>
// CHECK-NEXT:    %[[B_GATHERED:.+]] = dist.all_gather %[[B_NEW]] axis 0 dim 0 : tensor<1xf32> -> tensor<3xf32>
// FLAT-NEXT:     %[[W_RESHAPED:.+]] = train.reshape %[[W_GATHERED]] : tensor<30xf32> -> tensor<10x3xf32>
// FLAT-NEXT:     train.store %[[W_RESHAPED]] to @w : tensor<10x3xf32>
// DIM0-NEXT:     train.store %[[W_GATHERED]] to @w : tensor<10x3xf32>
// CHECK-NEXT:    train.store %[[B_GATHERED]] to @b : tensor<3xf32>
// CHECK-NEXT:    return %[[MEAN_LOSS]] : tensor<f32>

module @stage1_linear attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @w param : tensor<10x3xf32> init normal(0.0, 0.1)
  train.param @b param : tensor<3xf32> init zeros
  train.optimizer @adam adam lr 1.0e-3
  func.func @step(%x: tensor<2x10xf32>, %labels: tensor<2xi32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<10x3xf32>
    %b = train.load @b : tensor<3xf32>
    %xw = train.matmul %x, %w : tensor<2x10xf32>, tensor<10x3xf32> -> tensor<2x3xf32>
    %logits = train.bias_add %xw, %b : tensor<2x3xf32>, tensor<3xf32>
    %loss = train.softmax_cross_entropy %logits, %labels : tensor<2x3xf32>, tensor<2xi32> -> tensor<f32>
    %one = arith.constant dense<1.0> : tensor<f32>
    %dlogits = train.softmax_cross_entropy_grad %logits, %labels, %one : tensor<2x3xf32>, tensor<2xi32>
    %dw = train.matmul %x, %dlogits transpose_a : tensor<2x10xf32>, tensor<2x3xf32> -> tensor<10x3xf32>
    %db = train.reduce_sum %dlogits dims [0] : tensor<2x3xf32> -> tensor<3xf32>
    train.apply_gradient %dw to @w with @adam : tensor<10x3xf32>
    train.apply_gradient %db to @b with @adam : tensor<3xf32>
    return %loss : tensor<f32>
  }
}

// -----

// A frozen parameter takes no gradient and has no optimizer state: stage 1
// leaves its declaration and its load alone. Only @w gets sharded slots.

// CHECK-LABEL: module @stage1_frozen
// CHECK-NEXT:    train.param @emb frozen : tensor<5x4xf32> init ones
// CHECK-NEXT:    train.param @w param : tensor<4x2xf32> init normal(0.0, 0.1)
// FLAT-NEXT:     train.param @w.momentum slot of @w : tensor<4x2xf32> sharded flat over 0 -> tensor<4xf32> init zeros
// DIM0-NEXT:     train.param @w.momentum slot of @w : tensor<4x2xf32> sharded dim0 over 0 -> tensor<2x2xf32> init zeros
// CHECK-NEXT:    train.optimizer @momentum
// CHECK-NEXT:    func.func @step(%[[X:[^:]+]]: tensor<3x5xf32>
// CHECK-NEXT:    %[[EMB:.+]] = train.load @emb : tensor<5x4xf32>
// CHECK-NEXT:    %[[W:.+]] = train.load @w : tensor<4x2xf32>
// CHECK-NEXT:    %[[H:.+]] = train.matmul %[[X]], %[[EMB]] : tensor<3x5xf32>, tensor<5x4xf32> -> tensor<3x4xf32>
// CHECK-NEXT:    train.matmul %[[H]], %[[W]] :
// CHECK-NOT:     @emb
// CHECK:         %[[NEW:[^ ,]+]], %[[MOMENTUM:[^ ,]+]] = train.sgd_momentum
// CHECK-NOT:     @emb
// CHECK:         return

module @stage1_frozen attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @emb frozen : tensor<5x4xf32> init ones
  train.param @w param : tensor<4x2xf32> init normal(0.0, 0.1)
  train.optimizer @momentum momentum lr 0.1 momentum 0.9
  func.func @step(%x: tensor<3x5xf32>) -> tensor<f32> attributes {train.step} {
    %emb = train.load @emb : tensor<5x4xf32>
    %w = train.load @w : tensor<4x2xf32>
    %h = train.matmul %x, %emb : tensor<3x5xf32>, tensor<5x4xf32> -> tensor<3x4xf32>
    %y = train.matmul %h, %w : tensor<3x4xf32>, tensor<4x2xf32> -> tensor<3x2xf32>
    %loss = train.reduce_sum %y dims [0, 1] : tensor<3x2xf32> -> tensor<f32>
    %dy = arith.constant dense<1.0> : tensor<3x2xf32>
    %dw = train.matmul %h, %dy transpose_a : tensor<3x4xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
    train.apply_gradient %dw to @w with @momentum : tensor<4x2xf32>
    return %loss : tensor<f32>
  }
}

// -----

// A tied parameter: @w is loaded once, used twice in the forward and once in
// the backward, and its two gradient contributions are summed before the one
// apply_gradient. The summed gradient is reduce-scattered once, updated once
// and gathered once.

// CHECK-LABEL: module @stage1_tied
// CHECK:         %[[W:.+]] = train.load @w : tensor<4x4xf32>
// CHECK-NEXT:    %[[H:.+]] = train.matmul %{{.+}}, %[[W]] :
// CHECK-NEXT:    train.matmul %[[H]], %[[W]] :
// CHECK:         train.matmul %{{.+}}, %[[W]] transpose_b :
// CHECK-NOT:     dist.
// CHECK:         %[[DW:.+]] = train.add
// FLAT-NEXT:     %[[DW_FLAT:.+]] = train.reshape %[[DW]] : tensor<4x4xf32> -> tensor<16xf32>
// FLAT-NEXT:     %[[SHARD:.+]] = dist.reduce_scatter mean %[[DW_FLAT]] axis 0 dim 0 : tensor<16xf32> -> tensor<8xf32>
// DIM0-NEXT:     %[[SHARD:.+]] = dist.reduce_scatter mean %[[DW]] axis 0 dim 0 : tensor<4x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    train.load @w : tensor<4x4xf32>
// FLAT-NEXT:     train.reshape
// CHECK-NEXT:    %[[SLICE:.+]] = dist.slice
// CHECK-NEXT:    %[[NEW:.+]] = train.sgd %[[SLICE]], %[[SHARD]] with @sgd
// CHECK-NEXT:    dist.all_reduce mean %{{.+}} axis 0 : tensor<f32>
// CHECK-NEXT:    %[[GATHERED:.+]] = dist.all_gather %[[NEW]]
// FLAT-NEXT:     %[[FULL:.+]] = train.reshape %[[GATHERED]] : tensor<16xf32> -> tensor<4x4xf32>
// FLAT-NEXT:     train.store %[[FULL]] to @w : tensor<4x4xf32>
// DIM0-NEXT:     train.store %[[GATHERED]] to @w : tensor<4x4xf32>
// CHECK-NEXT:    return

module @stage1_tied attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<4x4xf32> init normal(0.0, 0.1)
  train.optimizer @sgd sgd lr 0.1
  func.func @step(%x: tensor<2x4xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<4x4xf32>
    %h = train.matmul %x, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %y = train.matmul %h, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %loss = train.reduce_sum %y dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    %dy = arith.constant dense<1.0> : tensor<2x4xf32>
    %dw2 = train.matmul %h, %dy transpose_a : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
    %dh = train.matmul %dy, %w transpose_b : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %dw1 = train.matmul %x, %dh transpose_a : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
    %dw = train.add %dw1, %dw2 : tensor<4x4xf32>
    train.apply_gradient %dw to @w with @sgd : tensor<4x4xf32>
    return %loss : tensor<f32>
  }
}

// -----

// Mixed precision: a bf16 parameter trained with Adam has an fp32 master copy
// and fp32 moments, all three sharded. The bf16 gradient is reduce-scattered
// in bf16, Adam runs on the master shard, its result is cast to bf16 and the
// bf16 shard is gathered into the replicated bf16 parameter.

// CHECK-LABEL: module @stage1_mixed
// CHECK-NEXT:    train.param @w param : tensor<10x3xbf16> init normal(0.0, 0.1)
// FLAT-NEXT:     train.param @w.master master of @w : tensor<10x3xf32> sharded flat over 0 -> tensor<8xf32>
// FLAT-NEXT:     train.param @w.m slot of @w : tensor<10x3xf32> sharded flat over 0 -> tensor<8xf32> init zeros
// FLAT-NEXT:     train.param @w.v slot of @w : tensor<10x3xf32> sharded flat over 0 -> tensor<8xf32> init zeros
// DIM0-NEXT:     train.param @w.master master of @w : tensor<10x3xf32> sharded dim0 over 0 -> tensor<3x3xf32>
// DIM0-NEXT:     train.param @w.m slot of @w : tensor<10x3xf32> sharded dim0 over 0 -> tensor<3x3xf32> init zeros
// DIM0-NEXT:     train.param @w.v slot of @w : tensor<10x3xf32> sharded dim0 over 0 -> tensor<3x3xf32> init zeros
// CHECK:         %[[DW:.+]] = train.matmul %{{.+}}, %{{.+}} transpose_a : tensor<2x10xbf16>, tensor<2x3xbf16> -> tensor<10x3xbf16>
// FLAT-NEXT:     %[[DW_FLAT:.+]] = train.reshape %[[DW]] : tensor<10x3xbf16> -> tensor<30xbf16>
// FLAT-NEXT:     %[[SHARD:.+]] = dist.reduce_scatter mean %[[DW_FLAT]] axis 0 dim 0 : tensor<30xbf16> -> tensor<8xbf16>
// DIM0-NEXT:     %[[SHARD:.+]] = dist.reduce_scatter mean %[[DW]] axis 0 dim 0 : tensor<10x3xbf16> -> tensor<3x3xbf16>
// CHECK-NEXT:    %[[MASTER:.+]] = train.load @w.master
// CHECK-NEXT:    %[[M:.+]] = train.load @w.m
// CHECK-NEXT:    %[[V:.+]] = train.load @w.v
// FLAT-NEXT:     %[[NEW:[^ ,]+]], %[[M_NEW:[^ ,]+]], %[[V_NEW:[^ ,]+]] = train.adam %[[MASTER]], %[[SHARD]], %[[M]], %[[V]] step %{{.+}} with @adam : tensor<8xf32>, tensor<8xbf16>, tensor<8xf32>
// DIM0-NEXT:     %[[NEW:[^ ,]+]], %[[M_NEW:[^ ,]+]], %[[V_NEW:[^ ,]+]] = train.adam %[[MASTER]], %[[SHARD]], %[[M]], %[[V]] step %{{.+}} with @adam : tensor<3x3xf32>, tensor<3x3xbf16>, tensor<3x3xf32>
// CHECK-NEXT:    train.store %[[M_NEW]] to @w.m
// CHECK-NEXT:    train.store %[[V_NEW]] to @w.v
// CHECK-NEXT:    train.store %[[NEW]] to @w.master
// FLAT-NEXT:     %[[CAST:.+]] = train.cast %[[NEW]] : tensor<8xf32> -> tensor<8xbf16>
// DIM0-NEXT:     %[[CAST:.+]] = train.cast %[[NEW]] : tensor<3x3xf32> -> tensor<3x3xbf16>
// CHECK-NEXT:    dist.all_reduce mean %{{.+}} axis 0 : tensor<bf16>
// FLAT-NEXT:     %[[GATHERED:.+]] = dist.all_gather %[[CAST]] axis 0 dim 0 : tensor<8xbf16> -> tensor<30xbf16>
// FLAT-NEXT:     %[[FULL:.+]] = train.reshape %[[GATHERED]] : tensor<30xbf16> -> tensor<10x3xbf16>
// FLAT-NEXT:     train.store %[[FULL]] to @w : tensor<10x3xbf16>
// DIM0-NEXT:     %[[GATHERED:.+]] = dist.all_gather %[[CAST]] axis 0 dim 0 : tensor<3x3xbf16> -> tensor<10x3xbf16>
// DIM0-NEXT:     train.store %[[GATHERED]] to @w : tensor<10x3xbf16>
// CHECK-NEXT:    return

module @stage1_mixed attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @w param : tensor<10x3xbf16> init normal(0.0, 0.1)
  train.optimizer @adam adam lr 1.0e-3
  func.func @step(%x: tensor<2x10xbf16>) -> tensor<bf16> attributes {train.step} {
    %w = train.load @w : tensor<10x3xbf16>
    %y = train.matmul %x, %w : tensor<2x10xbf16>, tensor<10x3xbf16> -> tensor<2x3xbf16>
    %loss = train.reduce_sum %y dims [0, 1] : tensor<2x3xbf16> -> tensor<bf16>
    %dy = arith.constant dense<1.0> : tensor<2x3xbf16>
    %dw = train.matmul %x, %dy transpose_a : tensor<2x10xbf16>, tensor<2x3xbf16> -> tensor<10x3xbf16>
    train.apply_gradient %dw to @w with @adam : tensor<10x3xbf16>
    return %loss : tensor<bf16>
  }
}
