// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=2 layout=flat})" | FileCheck %s --check-prefixes=CHECK,FLAT
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=2 layout=dim0})" | FileCheck %s --check-prefixes=CHECK,DIM0

// ZeRO stage 2: as stage 1 (sharded slots and master copies, replicated
// parameters, updated shards all-gathered at the end of the step), but each
// gradient is reduce-scattered (mean) right after the op that produces it,
// where dist-data-parallel had put its all-reduce, so that the full-size
// gradient dies at once and the reduction overlaps the rest of the backward.

// A linear layer trained with Adam over 4 ranks: the weight gradient is
// reduce-scattered before the bias gradient is even computed. 10x3 over 4:
// flat shards of 8 elements, dim0 shards of 3 rows.

module @stage2_linear attributes {dist.placement = #dist.placement<cpu, [4]>} {
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

// CHECK-LABEL: module @stage2_linear
// CHECK-SAME:    dist.zero_stage = 2 : i64
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
// CHECK:         func.func @step(%[[X:[^:]+]]: tensor<2x10xf32>
// CHECK-NEXT:    %[[STEP:.+]] = train.step_index : tensor<i64>
// CHECK-NEXT:    %[[W:.+]] = train.load @w : tensor<10x3xf32>
// CHECK-NEXT:    %[[B:.+]] = train.load @b : tensor<3xf32>
// CHECK-NEXT:    train.matmul %[[X]], %[[W]] :
// CHECK-NEXT:    train.bias_add %{{.+}}, %[[B]] :
// CHECK-NEXT:    %[[LOSS:.+]] = train.softmax_cross_entropy
// CHECK-NEXT:    arith.constant
// CHECK-NEXT:    %[[DLOGITS:.+]] = train.softmax_cross_entropy_grad
// CHECK-NEXT:    %[[DW:.+]] = train.matmul %[[X]], %[[DLOGITS]] transpose_a : tensor<2x10xf32>, tensor<2x3xf32> -> tensor<10x3xf32>
// FLAT-NEXT:     %[[DW_FLAT:.+]] = train.reshape %[[DW]] : tensor<10x3xf32> -> tensor<30xf32>
// FLAT-NEXT:     %[[DW_SHARD:.+]] = dist.reduce_scatter mean %[[DW_FLAT]] axis 0 dim 0 : tensor<30xf32> -> tensor<8xf32>
// DIM0-NEXT:     %[[DW_SHARD:.+]] = dist.reduce_scatter mean %[[DW]] axis 0 dim 0 : tensor<10x3xf32> -> tensor<3x3xf32>
// CHECK-NEXT:    %[[DB:.+]] = train.reduce_sum %[[DLOGITS]] dims [0] : tensor<2x3xf32> -> tensor<3xf32>
// CHECK-NEXT:    %[[DB_SHARD:.+]] = dist.reduce_scatter mean %[[DB]] axis 0 dim 0 : tensor<3xf32> -> tensor<1xf32>
// CHECK-NEXT:    %[[W_FULL:.+]] = train.load @w : tensor<10x3xf32>
// FLAT-NEXT:     %[[W_FLAT:.+]] = train.reshape %[[W_FULL]] : tensor<10x3xf32> -> tensor<30xf32>
// FLAT-NEXT:     %[[W_SLICE:.+]] = dist.slice %[[W_FLAT]] axis 0 dim 0 : tensor<30xf32> -> tensor<8xf32>
// DIM0-NEXT:     %[[W_SLICE:.+]] = dist.slice %[[W_FULL]] axis 0 dim 0 : tensor<10x3xf32> -> tensor<3x3xf32>
// CHECK-NEXT:    %[[WM:.+]] = train.load @w.m
// CHECK-NEXT:    %[[WV:.+]] = train.load @w.v
// CHECK-NEXT:    %[[W_NEW:[^ ,]+]], %[[WM_NEW:[^ ,]+]], %[[WV_NEW:[^ ,]+]] = train.adam %[[W_SLICE]], %[[DW_SHARD]], %[[WM]], %[[WV]] step %[[STEP]] with @adam
// CHECK-NEXT:    train.store %[[WM_NEW]] to @w.m
// CHECK-NEXT:    train.store %[[WV_NEW]] to @w.v
// CHECK-NEXT:    %[[B_FULL:.+]] = train.load @b : tensor<3xf32>
// CHECK-NEXT:    %[[B_SLICE:.+]] = dist.slice %[[B_FULL]] axis 0 dim 0 : tensor<3xf32> -> tensor<1xf32>
// CHECK-NEXT:    %[[BM:.+]] = train.load @b.m : tensor<1xf32>
// CHECK-NEXT:    %[[BV:.+]] = train.load @b.v : tensor<1xf32>
// CHECK-NEXT:    %[[B_NEW:[^ ,]+]], %[[BM_NEW:[^ ,]+]], %[[BV_NEW:[^ ,]+]] = train.adam %[[B_SLICE]], %[[DB_SHARD]], %[[BM]], %[[BV]] step %[[STEP]] with @adam
// CHECK-NEXT:    train.store %[[BM_NEW]] to @b.m
// CHECK-NEXT:    train.store %[[BV_NEW]] to @b.v
// CHECK-NEXT:    %[[MEAN_LOSS:.+]] = dist.all_reduce mean %[[LOSS]] axis 0 : tensor<f32>
// FLAT-NEXT:     %[[W_GATHERED:.+]] = dist.all_gather %[[W_NEW]] axis 0 dim 0 : tensor<8xf32> -> tensor<30xf32>
// DIM0-NEXT:     %[[W_GATHERED:.+]] = dist.all_gather %[[W_NEW]] axis 0 dim 0 : tensor<3x3xf32> -> tensor<10x3xf32>
// CHECK-NEXT:    %[[B_GATHERED:.+]] = dist.all_gather %[[B_NEW]] axis 0 dim 0 : tensor<1xf32> -> tensor<3xf32>
// FLAT-NEXT:     %[[W_RESHAPED:.+]] = train.reshape %[[W_GATHERED]] : tensor<30xf32> -> tensor<10x3xf32>
// FLAT-NEXT:     train.store %[[W_RESHAPED]] to @w : tensor<10x3xf32>
// DIM0-NEXT:     train.store %[[W_GATHERED]] to @w : tensor<10x3xf32>
// CHECK-NEXT:    train.store %[[B_GATHERED]] to @b : tensor<3xf32>
// CHECK-NEXT:    return %[[MEAN_LOSS]] : tensor<f32>

// -----

// A frozen parameter used in the forward and again in the backward (for the
// input gradient) is left alone: replicated, no slots, no gradient. @w's
// gradient is reduce-scattered before that backward use of @emb.

module @stage2_frozen attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @emb frozen : tensor<5x4xf32> init ones
  train.param @w param : tensor<4x2xf32> init normal(0.0, 0.1)
  train.optimizer @momentum momentum lr 0.1 momentum 0.9
  func.func @step(%x: tensor<3x5xf32>) -> (tensor<f32>, tensor<3x5xf32>) attributes {train.step} {
    %emb = train.load @emb : tensor<5x4xf32>
    %w = train.load @w : tensor<4x2xf32>
    %h = train.matmul %x, %emb : tensor<3x5xf32>, tensor<5x4xf32> -> tensor<3x4xf32>
    %y = train.matmul %h, %w : tensor<3x4xf32>, tensor<4x2xf32> -> tensor<3x2xf32>
    %loss = train.reduce_sum %y dims [0, 1] : tensor<3x2xf32> -> tensor<f32>
    %dy = arith.constant dense<1.0> : tensor<3x2xf32>
    %dw = train.matmul %h, %dy transpose_a : tensor<3x4xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
    %dh = train.matmul %dy, %w transpose_b : tensor<3x2xf32>, tensor<4x2xf32> -> tensor<3x4xf32>
    %dx = train.matmul %dh, %emb transpose_b : tensor<3x4xf32>, tensor<5x4xf32> -> tensor<3x5xf32>
    train.apply_gradient %dw to @w with @momentum : tensor<4x2xf32>
    return %loss, %dx : tensor<f32>, tensor<3x5xf32>
  }
}

// CHECK-LABEL: module @stage2_frozen
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
// CHECK-NEXT:    train.reduce_sum
// CHECK-NEXT:    %[[DY:.+]] = arith.constant
// CHECK-NEXT:    %[[DW:.+]] = train.matmul %[[H]], %[[DY]] transpose_a
// FLAT-NEXT:     %[[DW_FLAT:.+]] = train.reshape %[[DW]] : tensor<4x2xf32> -> tensor<8xf32>
// FLAT-NEXT:     %[[SHARD:.+]] = dist.reduce_scatter mean %[[DW_FLAT]] axis 0 dim 0 : tensor<8xf32> -> tensor<4xf32>
// DIM0-NEXT:     %[[SHARD:.+]] = dist.reduce_scatter mean %[[DW]] axis 0 dim 0 : tensor<4x2xf32> -> tensor<2x2xf32>
// CHECK-NEXT:    %[[DH:.+]] = train.matmul %[[DY]], %[[W]] transpose_b
// CHECK-NEXT:    train.matmul %[[DH]], %[[EMB]] transpose_b : tensor<3x4xf32>, tensor<5x4xf32> -> tensor<3x5xf32>
// CHECK-NOT:     @emb
// CHECK:         train.sgd_momentum %{{.+}}, %[[SHARD]], %{{.+}} with @momentum
// CHECK-NOT:     @emb
// CHECK:         return

// -----

// A tied parameter: @w is loaded once, used twice in the forward and once in
// the backward; the two gradient contributions are summed and the sum is
// reduce-scattered once, right after the add, while the backward goes on.

module @stage2_tied attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<4x4xf32> init normal(0.0, 0.1)
  train.optimizer @sgd sgd lr 0.1
  func.func @step(%x: tensor<2x4xf32>) -> (tensor<f32>, tensor<2x4xf32>) attributes {train.step} {
    %w = train.load @w : tensor<4x4xf32>
    %h = train.matmul %x, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %y = train.matmul %h, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %loss = train.reduce_sum %y dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    %dy = arith.constant dense<1.0> : tensor<2x4xf32>
    %dw2 = train.matmul %h, %dy transpose_a : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
    %dh = train.matmul %dy, %w transpose_b : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %dw1 = train.matmul %x, %dh transpose_a : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
    %dw = train.add %dw1, %dw2 : tensor<4x4xf32>
    %dx = train.relu_grad %x, %dh : tensor<2x4xf32>
    train.apply_gradient %dw to @w with @sgd : tensor<4x4xf32>
    return %loss, %dx : tensor<f32>, tensor<2x4xf32>
  }
}

// CHECK-LABEL: module @stage2_tied
// CHECK-NEXT:    train.param @w param : tensor<4x4xf32> init normal(0.0, 0.1)
// CHECK-NEXT:    train.optimizer @sgd
// CHECK-NEXT:    func.func @step(%[[X:[^:]+]]: tensor<2x4xf32>
// CHECK-NEXT:    %[[W:.+]] = train.load @w : tensor<4x4xf32>
// CHECK-NEXT:    %[[H:.+]] = train.matmul %[[X]], %[[W]] :
// CHECK-NEXT:    train.matmul %[[H]], %[[W]] :
// CHECK-NEXT:    train.reduce_sum
// CHECK-NEXT:    arith.constant
// CHECK-NEXT:    %[[DW2:.+]] = train.matmul %[[H]], %{{.+}} transpose_a
// CHECK-NEXT:    %[[DH:.+]] = train.matmul %{{.+}}, %[[W]] transpose_b
// CHECK-NEXT:    %[[DW1:.+]] = train.matmul %[[X]], %[[DH]] transpose_a
// CHECK-NEXT:    %[[DW:.+]] = train.add %[[DW1]], %[[DW2]] : tensor<4x4xf32>
// FLAT-NEXT:     %[[DW_FLAT:.+]] = train.reshape %[[DW]] : tensor<4x4xf32> -> tensor<16xf32>
// FLAT-NEXT:     %[[SHARD:.+]] = dist.reduce_scatter mean %[[DW_FLAT]] axis 0 dim 0 : tensor<16xf32> -> tensor<8xf32>
// DIM0-NEXT:     %[[SHARD:.+]] = dist.reduce_scatter mean %[[DW]] axis 0 dim 0 : tensor<4x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    train.relu_grad %[[X]], %[[DH]]
// CHECK-NEXT:    %[[W_FULL:.+]] = train.load @w : tensor<4x4xf32>
// FLAT-NEXT:     %[[W_FLAT:.+]] = train.reshape %[[W_FULL]] : tensor<4x4xf32> -> tensor<16xf32>
// FLAT-NEXT:     %[[SLICE:.+]] = dist.slice %[[W_FLAT]] axis 0 dim 0 : tensor<16xf32> -> tensor<8xf32>
// DIM0-NEXT:     %[[SLICE:.+]] = dist.slice %[[W_FULL]] axis 0 dim 0 : tensor<4x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %[[NEW:.+]] = train.sgd %[[SLICE]], %[[SHARD]] with @sgd
// CHECK-NEXT:    dist.all_reduce mean %{{.+}} axis 0 : tensor<f32>
// CHECK-NEXT:    %[[GATHERED:.+]] = dist.all_gather %[[NEW]]
// FLAT-NEXT:     %[[FULL:.+]] = train.reshape %[[GATHERED]] : tensor<16xf32> -> tensor<4x4xf32>
// FLAT-NEXT:     train.store %[[FULL]] to @w : tensor<4x4xf32>
// DIM0-NEXT:     train.store %[[GATHERED]] to @w : tensor<4x4xf32>
// CHECK-NEXT:    return

// -----

// Mixed precision: the bf16 weight gradient is reduce-scattered in bf16 as
// soon as it exists; Adam runs on the fp32 master shard, the result is cast
// to bf16 and gathered. The small bf16 bias follows the same path.

module @stage2_mixed attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @w param : tensor<10x3xbf16> init normal(0.0, 0.1)
  train.param @b param : tensor<3xbf16> init zeros
  train.optimizer @adamw adamw lr 1.0e-3 weight_decay 0.1
  func.func @step(%x: tensor<2x10xbf16>) -> tensor<bf16> attributes {train.step} {
    %w = train.load @w : tensor<10x3xbf16>
    %b = train.load @b : tensor<3xbf16>
    %xw = train.matmul %x, %w : tensor<2x10xbf16>, tensor<10x3xbf16> -> tensor<2x3xbf16>
    %y = train.bias_add %xw, %b : tensor<2x3xbf16>, tensor<3xbf16>
    %loss = train.reduce_sum %y dims [0, 1] : tensor<2x3xbf16> -> tensor<bf16>
    %dy = arith.constant dense<1.0> : tensor<2x3xbf16>
    %dw = train.matmul %x, %dy transpose_a : tensor<2x10xbf16>, tensor<2x3xbf16> -> tensor<10x3xbf16>
    %db = train.reduce_sum %dy dims [0] : tensor<2x3xbf16> -> tensor<3xbf16>
    train.apply_gradient %dw to @w with @adamw : tensor<10x3xbf16>
    train.apply_gradient %db to @b with @adamw : tensor<3xbf16>
    return %loss : tensor<bf16>
  }
}

// CHECK-LABEL: module @stage2_mixed
// CHECK-NEXT:    train.param @w param : tensor<10x3xbf16> init normal(0.0, 0.1)
// FLAT-NEXT:     train.param @w.master master of @w : tensor<10x3xf32> sharded flat over 0 -> tensor<8xf32>
// FLAT-NEXT:     train.param @w.m slot of @w : tensor<10x3xf32> sharded flat over 0 -> tensor<8xf32> init zeros
// FLAT-NEXT:     train.param @w.v slot of @w : tensor<10x3xf32> sharded flat over 0 -> tensor<8xf32> init zeros
// DIM0-NEXT:     train.param @w.master master of @w : tensor<10x3xf32> sharded dim0 over 0 -> tensor<3x3xf32>
// DIM0-NEXT:     train.param @w.m slot of @w : tensor<10x3xf32> sharded dim0 over 0 -> tensor<3x3xf32> init zeros
// DIM0-NEXT:     train.param @w.v slot of @w : tensor<10x3xf32> sharded dim0 over 0 -> tensor<3x3xf32> init zeros
// CHECK-NEXT:    train.param @b param : tensor<3xbf16> init zeros
// CHECK-NEXT:    train.param @b.master master of @b : tensor<3xf32> sharded {{flat|dim0}} over 0 -> tensor<1xf32>
// CHECK-NEXT:    train.param @b.m slot of @b : tensor<3xf32> sharded {{flat|dim0}} over 0 -> tensor<1xf32> init zeros
// CHECK-NEXT:    train.param @b.v slot of @b : tensor<3xf32> sharded {{flat|dim0}} over 0 -> tensor<1xf32> init zeros
// CHECK:         %[[DW:.+]] = train.matmul %{{.+}}, %{{.+}} transpose_a : tensor<2x10xbf16>, tensor<2x3xbf16> -> tensor<10x3xbf16>
// FLAT-NEXT:     %[[DW_FLAT:.+]] = train.reshape %[[DW]] : tensor<10x3xbf16> -> tensor<30xbf16>
// FLAT-NEXT:     %[[DW_SHARD:.+]] = dist.reduce_scatter mean %[[DW_FLAT]] axis 0 dim 0 : tensor<30xbf16> -> tensor<8xbf16>
// DIM0-NEXT:     %[[DW_SHARD:.+]] = dist.reduce_scatter mean %[[DW]] axis 0 dim 0 : tensor<10x3xbf16> -> tensor<3x3xbf16>
// CHECK-NEXT:    %[[DB:.+]] = train.reduce_sum %{{.+}} dims [0] : tensor<2x3xbf16> -> tensor<3xbf16>
// CHECK-NEXT:    %[[DB_SHARD:.+]] = dist.reduce_scatter mean %[[DB]] axis 0 dim 0 : tensor<3xbf16> -> tensor<1xbf16>
// CHECK-NEXT:    %[[W_MASTER:.+]] = train.load @w.master
// CHECK-NEXT:    %[[WM:.+]] = train.load @w.m
// CHECK-NEXT:    %[[WV:.+]] = train.load @w.v
// FLAT-NEXT:     %[[W_NEW:[^ ,]+]], %{{[^ ,]+}}, %{{[^ ,]+}} = train.adamw %[[W_MASTER]], %[[DW_SHARD]], %[[WM]], %[[WV]] step %{{.+}} with @adamw : tensor<8xf32>, tensor<8xbf16>, tensor<8xf32>
// DIM0-NEXT:     %[[W_NEW:[^ ,]+]], %{{[^ ,]+}}, %{{[^ ,]+}} = train.adamw %[[W_MASTER]], %[[DW_SHARD]], %[[WM]], %[[WV]] step %{{.+}} with @adamw : tensor<3x3xf32>, tensor<3x3xbf16>, tensor<3x3xf32>
// CHECK-NEXT:    train.store %{{.+}} to @w.m
// CHECK-NEXT:    train.store %{{.+}} to @w.v
// CHECK-NEXT:    train.store %[[W_NEW]] to @w.master
// CHECK-NEXT:    %[[W_CAST:.+]] = train.cast %[[W_NEW]]
// CHECK-NEXT:    %[[B_MASTER:.+]] = train.load @b.master : tensor<1xf32>
// CHECK-NEXT:    %[[BM:.+]] = train.load @b.m : tensor<1xf32>
// CHECK-NEXT:    %[[BV:.+]] = train.load @b.v : tensor<1xf32>
// CHECK-NEXT:    %[[B_NEW:[^ ,]+]], %{{[^ ,]+}}, %{{[^ ,]+}} = train.adamw %[[B_MASTER]], %[[DB_SHARD]], %[[BM]], %[[BV]] step %{{.+}} with @adamw : tensor<1xf32>, tensor<1xbf16>, tensor<1xf32>
// CHECK-NEXT:    train.store %{{.+}} to @b.m
// CHECK-NEXT:    train.store %{{.+}} to @b.v
// CHECK-NEXT:    train.store %[[B_NEW]] to @b.master : tensor<1xf32>
// CHECK-NEXT:    %[[B_CAST:.+]] = train.cast %[[B_NEW]] : tensor<1xf32> -> tensor<1xbf16>
// CHECK-NEXT:    dist.all_reduce mean %{{.+}} axis 0 : tensor<bf16>
// FLAT-NEXT:     %[[W_GATHERED:.+]] = dist.all_gather %[[W_CAST]] axis 0 dim 0 : tensor<8xbf16> -> tensor<30xbf16>
// DIM0-NEXT:     %[[W_GATHERED:.+]] = dist.all_gather %[[W_CAST]] axis 0 dim 0 : tensor<3x3xbf16> -> tensor<10x3xbf16>
// CHECK-NEXT:    %[[B_GATHERED:.+]] = dist.all_gather %[[B_CAST]] axis 0 dim 0 : tensor<1xbf16> -> tensor<3xbf16>
// FLAT-NEXT:     %[[W_FULL:.+]] = train.reshape %[[W_GATHERED]] : tensor<30xbf16> -> tensor<10x3xbf16>
// FLAT-NEXT:     train.store %[[W_FULL]] to @w : tensor<10x3xbf16>
// DIM0-NEXT:     train.store %[[W_GATHERED]] to @w : tensor<10x3xbf16>
// CHECK-NEXT:    train.store %[[B_GATHERED]] to @b : tensor<3xbf16>
// CHECK-NEXT:    return
