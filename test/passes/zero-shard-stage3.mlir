// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=3 layout=flat})" | FileCheck %s --check-prefixes=CHECK,FLAT
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=3 layout=dim0})" | FileCheck %s --check-prefixes=CHECK,DIM0

// ZeRO stage 3: parameters (frozen ones too) are stored sharded as well.
// Every use region of a loaded parameter is preceded by an all-gather of the
// shard; by default the backward (what the returned loss does not depend on)
// gathers again instead of keeping the forward's copy alive. Gradients are
// reduce-scattered as soon as they exist (as at stage 2), and the update
// writes the new shard straight back: no all-gather follows it.

// A two-layer MLP with momentum over 4 ranks. @w1 (10x3) is only used in the
// forward; @w2 (3x2) is used in the forward and again in the backward for the
// hidden gradient, so it is gathered twice. Flat: 8 and 2 elements per rank
// (30 padded to 32, 6 to 8); dim0: 3x3 and 1x2 (10 rows padded to 12, 3 to 4).

module @stage3_mlp attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @w1 param : tensor<10x3xf32> init normal(0.0, 0.1)
  train.param @w2 param : tensor<3x2xf32> init normal(0.0, 0.1)
  train.optimizer @momentum momentum lr 0.1 momentum 0.9
  func.func @step(%x: tensor<2x10xf32>, %labels: tensor<2xi32>) -> tensor<f32> attributes {train.step} {
    %w1 = train.load @w1 : tensor<10x3xf32>
    %w2 = train.load @w2 : tensor<3x2xf32>
    %pre = train.matmul %x, %w1 : tensor<2x10xf32>, tensor<10x3xf32> -> tensor<2x3xf32>
    %h = train.relu %pre : tensor<2x3xf32>
    %logits = train.matmul %h, %w2 : tensor<2x3xf32>, tensor<3x2xf32> -> tensor<2x2xf32>
    %loss = train.softmax_cross_entropy %logits, %labels : tensor<2x2xf32>, tensor<2xi32> -> tensor<f32>
    %one = arith.constant dense<1.0> : tensor<f32>
    %dlogits = train.softmax_cross_entropy_grad %logits, %labels, %one : tensor<2x2xf32>, tensor<2xi32>
    %dw2 = train.matmul %h, %dlogits transpose_a : tensor<2x3xf32>, tensor<2x2xf32> -> tensor<3x2xf32>
    %dh = train.matmul %dlogits, %w2 transpose_b : tensor<2x2xf32>, tensor<3x2xf32> -> tensor<2x3xf32>
    %dpre = train.relu_grad %pre, %dh : tensor<2x3xf32>
    %dw1 = train.matmul %x, %dpre transpose_a : tensor<2x10xf32>, tensor<2x3xf32> -> tensor<10x3xf32>
    train.apply_gradient %dw1 to @w1 with @momentum : tensor<10x3xf32>
    train.apply_gradient %dw2 to @w2 with @momentum : tensor<3x2xf32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: module @stage3_mlp
// CHECK-SAME:    dist.zero_stage = 3 : i64
// FLAT-NEXT:     train.param @w1 param : tensor<10x3xf32> sharded flat over 0 -> tensor<8xf32> init normal(0.0, 0.1)
// FLAT-NEXT:     train.param @w1.momentum slot of @w1 : tensor<10x3xf32> sharded flat over 0 -> tensor<8xf32> init zeros
// FLAT-NEXT:     train.param @w2 param : tensor<3x2xf32> sharded flat over 0 -> tensor<2xf32> init normal(0.0, 0.1)
// FLAT-NEXT:     train.param @w2.momentum slot of @w2 : tensor<3x2xf32> sharded flat over 0 -> tensor<2xf32> init zeros
// DIM0-NEXT:     train.param @w1 param : tensor<10x3xf32> sharded dim0 over 0 -> tensor<3x3xf32> init normal(0.0, 0.1)
// DIM0-NEXT:     train.param @w1.momentum slot of @w1 : tensor<10x3xf32> sharded dim0 over 0 -> tensor<3x3xf32> init zeros
// DIM0-NEXT:     train.param @w2 param : tensor<3x2xf32> sharded dim0 over 0 -> tensor<1x2xf32> init normal(0.0, 0.1)
// DIM0-NEXT:     train.param @w2.momentum slot of @w2 : tensor<3x2xf32> sharded dim0 over 0 -> tensor<1x2xf32> init zeros
// CHECK-NEXT:    train.optimizer @momentum
// CHECK-NEXT:    func.func @step(%[[X:[^:]+]]: tensor<2x10xf32>
//
// The loads now read shards; each is gathered right before its first use.
// FLAT-NEXT:     %[[W1:.+]] = train.load @w1 : tensor<8xf32>
// FLAT-NEXT:     %[[W2:.+]] = train.load @w2 : tensor<2xf32>
// FLAT-NEXT:     %[[W1_GATHERED:.+]] = dist.all_gather %[[W1]] axis 0 dim 0 : tensor<8xf32> -> tensor<30xf32>
// FLAT-NEXT:     %[[W1_FULL:.+]] = train.reshape %[[W1_GATHERED]] : tensor<30xf32> -> tensor<10x3xf32>
// DIM0-NEXT:     %[[W1:.+]] = train.load @w1 : tensor<3x3xf32>
// DIM0-NEXT:     %[[W2:.+]] = train.load @w2 : tensor<1x2xf32>
// DIM0-NEXT:     %[[W1_FULL:.+]] = dist.all_gather %[[W1]] axis 0 dim 0 : tensor<3x3xf32> -> tensor<10x3xf32>
// CHECK-NEXT:    %[[PRE:.+]] = train.matmul %[[X]], %[[W1_FULL]] : tensor<2x10xf32>, tensor<10x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %[[H:.+]] = train.relu %[[PRE]]
// FLAT-NEXT:     %[[W2_GATHERED:.+]] = dist.all_gather %[[W2]] axis 0 dim 0 : tensor<2xf32> -> tensor<6xf32>
// FLAT-NEXT:     %[[W2_FWD:.+]] = train.reshape %[[W2_GATHERED]] : tensor<6xf32> -> tensor<3x2xf32>
// DIM0-NEXT:     %[[W2_FWD:.+]] = dist.all_gather %[[W2]] axis 0 dim 0 : tensor<1x2xf32> -> tensor<3x2xf32>
// CHECK-NEXT:    %[[LOGITS:.+]] = train.matmul %[[H]], %[[W2_FWD]] :
// CHECK-NEXT:    %[[LOSS:.+]] = train.softmax_cross_entropy %[[LOGITS]]
// CHECK-NEXT:    arith.constant
// CHECK-NEXT:    %[[DLOGITS:.+]] = train.softmax_cross_entropy_grad %[[LOGITS]]
// CHECK-NEXT:    %[[DW2:.+]] = train.matmul %[[H]], %[[DLOGITS]] transpose_a : tensor<2x3xf32>, tensor<2x2xf32> -> tensor<3x2xf32>
// FLAT-NEXT:     %[[DW2_FLAT:.+]] = train.reshape %[[DW2]] : tensor<3x2xf32> -> tensor<6xf32>
// FLAT-NEXT:     %[[DW2_SHARD:.+]] = dist.reduce_scatter mean %[[DW2_FLAT]] axis 0 dim 0 : tensor<6xf32> -> tensor<2xf32>
// DIM0-NEXT:     %[[DW2_SHARD:.+]] = dist.reduce_scatter mean %[[DW2]] axis 0 dim 0 : tensor<3x2xf32> -> tensor<1x2xf32>
//
// The backward use of @w2 gathers the same shard again.
// FLAT-NEXT:     %[[W2_GATHERED_BWD:.+]] = dist.all_gather %[[W2]] axis 0 dim 0 : tensor<2xf32> -> tensor<6xf32>
// FLAT-NEXT:     %[[W2_BWD:.+]] = train.reshape %[[W2_GATHERED_BWD]] : tensor<6xf32> -> tensor<3x2xf32>
// DIM0-NEXT:     %[[W2_BWD:.+]] = dist.all_gather %[[W2]] axis 0 dim 0 : tensor<1x2xf32> -> tensor<3x2xf32>
// CHECK-NEXT:    %[[DH:.+]] = train.matmul %[[DLOGITS]], %[[W2_BWD]] transpose_b :
// CHECK-NEXT:    %[[DPRE:.+]] = train.relu_grad %[[PRE]], %[[DH]]
// CHECK-NEXT:    %[[DW1:.+]] = train.matmul %[[X]], %[[DPRE]] transpose_a : tensor<2x10xf32>, tensor<2x3xf32> -> tensor<10x3xf32>
// FLAT-NEXT:     %[[DW1_FLAT:.+]] = train.reshape %[[DW1]] : tensor<10x3xf32> -> tensor<30xf32>
// FLAT-NEXT:     %[[DW1_SHARD:.+]] = dist.reduce_scatter mean %[[DW1_FLAT]] axis 0 dim 0 : tensor<30xf32> -> tensor<8xf32>
// DIM0-NEXT:     %[[DW1_SHARD:.+]] = dist.reduce_scatter mean %[[DW1]] axis 0 dim 0 : tensor<10x3xf32> -> tensor<3x3xf32>
//
// The updates read and write shards only.
// FLAT-NEXT:     %[[W1_SHARD:.+]] = train.load @w1 : tensor<8xf32>
// DIM0-NEXT:     %[[W1_SHARD:.+]] = train.load @w1 : tensor<3x3xf32>
// CHECK-NEXT:    %[[W1_BUF:.+]] = train.load @w1.momentum
// CHECK-NEXT:    %[[W1_NEW:[^ ,]+]], %[[W1_BUF_NEW:[^ ,]+]] = train.sgd_momentum %[[W1_SHARD]], %[[DW1_SHARD]], %[[W1_BUF]] with @momentum
// CHECK-NEXT:    train.store %[[W1_BUF_NEW]] to @w1.momentum
// FLAT-NEXT:     train.store %[[W1_NEW]] to @w1 : tensor<8xf32>
// DIM0-NEXT:     train.store %[[W1_NEW]] to @w1 : tensor<3x3xf32>
// FLAT-NEXT:     %[[W2_SHARD:.+]] = train.load @w2 : tensor<2xf32>
// DIM0-NEXT:     %[[W2_SHARD:.+]] = train.load @w2 : tensor<1x2xf32>
// CHECK-NEXT:    %[[W2_BUF:.+]] = train.load @w2.momentum
// CHECK-NEXT:    %[[W2_NEW:[^ ,]+]], %[[W2_BUF_NEW:[^ ,]+]] = train.sgd_momentum %[[W2_SHARD]], %[[DW2_SHARD]], %[[W2_BUF]] with @momentum
// CHECK-NEXT:    train.store %[[W2_BUF_NEW]] to @w2.momentum
// FLAT-NEXT:     train.store %[[W2_NEW]] to @w2 : tensor<2xf32>
// DIM0-NEXT:     train.store %[[W2_NEW]] to @w2 : tensor<1x2xf32>
// CHECK-NEXT:    %[[MEAN_LOSS:.+]] = dist.all_reduce mean %[[LOSS]] axis 0 : tensor<f32>
// CHECK-NEXT:    return %[[MEAN_LOSS]] : tensor<f32>

// -----

// A frozen parameter has no optimizer state and no gradient, but at stage 3
// its storage is sharded too: it is gathered before its forward use and
// again before its backward use (the gradient of the layer below it). Over
// 3 ranks: @w (4x5) flat 7 / dim0 2x5, @proj (5x2) flat 4 / dim0 2x2.

module @stage3_frozen attributes {dist.placement = #dist.placement<cpu, [3]>} {
  train.param @w param : tensor<4x5xf32> init normal(0.0, 0.1)
  train.param @proj frozen : tensor<5x2xf32> init ones
  train.optimizer @sgd sgd lr 0.1
  func.func @step(%x: tensor<3x4xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<4x5xf32>
    %proj = train.load @proj : tensor<5x2xf32>
    %h = train.matmul %x, %w : tensor<3x4xf32>, tensor<4x5xf32> -> tensor<3x5xf32>
    %y = train.matmul %h, %proj : tensor<3x5xf32>, tensor<5x2xf32> -> tensor<3x2xf32>
    %loss = train.reduce_sum %y dims [0, 1] : tensor<3x2xf32> -> tensor<f32>
    %dy = arith.constant dense<1.0> : tensor<3x2xf32>
    %dh = train.matmul %dy, %proj transpose_b : tensor<3x2xf32>, tensor<5x2xf32> -> tensor<3x5xf32>
    %dw = train.matmul %x, %dh transpose_a : tensor<3x4xf32>, tensor<3x5xf32> -> tensor<4x5xf32>
    train.apply_gradient %dw to @w with @sgd : tensor<4x5xf32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: module @stage3_frozen
// FLAT-NEXT:     train.param @w param : tensor<4x5xf32> sharded flat over 0 -> tensor<7xf32> init normal(0.0, 0.1)
// FLAT-NEXT:     train.param @proj frozen : tensor<5x2xf32> sharded flat over 0 -> tensor<4xf32> init ones
// DIM0-NEXT:     train.param @w param : tensor<4x5xf32> sharded dim0 over 0 -> tensor<2x5xf32> init normal(0.0, 0.1)
// DIM0-NEXT:     train.param @proj frozen : tensor<5x2xf32> sharded dim0 over 0 -> tensor<2x2xf32> init ones
// CHECK-NEXT:    train.optimizer @sgd
// CHECK-NEXT:    func.func @step
// CHECK-NEXT:    %[[W:.+]] = train.load @w
// FLAT-NEXT:     %[[PROJ:.+]] = train.load @proj : tensor<4xf32>
// DIM0-NEXT:     %[[PROJ:.+]] = train.load @proj : tensor<2x2xf32>
// CHECK-NEXT:    dist.all_gather %[[W]]
// FLAT-NEXT:     train.reshape
// CHECK-NEXT:    %[[H:.+]] = train.matmul
// FLAT-NEXT:     %[[PROJ_GATHERED:.+]] = dist.all_gather %[[PROJ]] axis 0 dim 0 : tensor<4xf32> -> tensor<10xf32>
// FLAT-NEXT:     %[[PROJ_FWD:.+]] = train.reshape %[[PROJ_GATHERED]] : tensor<10xf32> -> tensor<5x2xf32>
// DIM0-NEXT:     %[[PROJ_FWD:.+]] = dist.all_gather %[[PROJ]] axis 0 dim 0 : tensor<2x2xf32> -> tensor<5x2xf32>
// CHECK-NEXT:    train.matmul %[[H]], %[[PROJ_FWD]] :
// CHECK-NEXT:    train.reduce_sum
// CHECK-NEXT:    %[[DY:.+]] = arith.constant
// FLAT-NEXT:     %[[PROJ_GATHERED_BWD:.+]] = dist.all_gather %[[PROJ]] axis 0 dim 0 : tensor<4xf32> -> tensor<10xf32>
// FLAT-NEXT:     %[[PROJ_BWD:.+]] = train.reshape %[[PROJ_GATHERED_BWD]] : tensor<10xf32> -> tensor<5x2xf32>
// DIM0-NEXT:     %[[PROJ_BWD:.+]] = dist.all_gather %[[PROJ]] axis 0 dim 0 : tensor<2x2xf32> -> tensor<5x2xf32>
// CHECK-NEXT:    train.matmul %[[DY]], %[[PROJ_BWD]] transpose_b :
// CHECK-NEXT:    %[[DW:.+]] = train.matmul
// FLAT-NEXT:     train.reshape %[[DW]]
// CHECK-NEXT:    %[[SHARD:.+]] = dist.reduce_scatter mean
// CHECK-NEXT:    %[[W_SHARD:.+]] = train.load @w
// CHECK-NEXT:    %[[NEW:.+]] = train.sgd %[[W_SHARD]], %[[SHARD]] with @sgd
// CHECK-NEXT:    train.store %[[NEW]] to @w
// CHECK-NEXT:    dist.all_reduce mean
// CHECK-NEXT:    return

// -----

// A tied parameter loaded once and used twice in the forward and once in the
// backward: one gather serves both forward uses, the backward use gets its
// own, and the summed gradient is reduce-scattered once.

module @stage3_tied attributes {dist.placement = #dist.placement<cpu, [2]>} {
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

// CHECK-LABEL: module @stage3_tied
// FLAT-NEXT:     train.param @w param : tensor<4x4xf32> sharded flat over 0 -> tensor<8xf32>
// DIM0-NEXT:     train.param @w param : tensor<4x4xf32> sharded dim0 over 0 -> tensor<2x4xf32>
// CHECK-NEXT:    train.optimizer @sgd
// CHECK-NEXT:    func.func @step(%[[X:[^:]+]]: tensor<2x4xf32>
// CHECK-NEXT:    %[[W:.+]] = train.load @w
// FLAT-NEXT:     %[[GATHERED:.+]] = dist.all_gather %[[W]] axis 0 dim 0 : tensor<8xf32> -> tensor<16xf32>
// FLAT-NEXT:     %[[W_FWD:.+]] = train.reshape %[[GATHERED]] : tensor<16xf32> -> tensor<4x4xf32>
// DIM0-NEXT:     %[[W_FWD:.+]] = dist.all_gather %[[W]] axis 0 dim 0 : tensor<2x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT:    %[[H:.+]] = train.matmul %[[X]], %[[W_FWD]] :
// CHECK-NEXT:    train.matmul %[[H]], %[[W_FWD]] :
// CHECK-NEXT:    train.reduce_sum
// CHECK-NEXT:    %[[DY:.+]] = arith.constant
// CHECK-NEXT:    %[[DW2:.+]] = train.matmul %[[H]], %[[DY]] transpose_a
// FLAT-NEXT:     %[[GATHERED_BWD:.+]] = dist.all_gather %[[W]] axis 0 dim 0 : tensor<8xf32> -> tensor<16xf32>
// FLAT-NEXT:     %[[W_BWD:.+]] = train.reshape %[[GATHERED_BWD]] : tensor<16xf32> -> tensor<4x4xf32>
// DIM0-NEXT:     %[[W_BWD:.+]] = dist.all_gather %[[W]] axis 0 dim 0 : tensor<2x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT:    %[[DH:.+]] = train.matmul %[[DY]], %[[W_BWD]] transpose_b
// CHECK-NEXT:    %[[DW1:.+]] = train.matmul %[[X]], %[[DH]] transpose_a
// CHECK-NEXT:    %[[DW:.+]] = train.add %[[DW1]], %[[DW2]]
// FLAT-NEXT:     %[[DW_FLAT:.+]] = train.reshape %[[DW]] : tensor<4x4xf32> -> tensor<16xf32>
// FLAT-NEXT:     %[[SHARD:.+]] = dist.reduce_scatter mean %[[DW_FLAT]] axis 0 dim 0 : tensor<16xf32> -> tensor<8xf32>
// DIM0-NEXT:     %[[SHARD:.+]] = dist.reduce_scatter mean %[[DW]] axis 0 dim 0 : tensor<4x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %[[W_SHARD:.+]] = train.load @w
// CHECK-NEXT:    %[[NEW:.+]] = train.sgd %[[W_SHARD]], %[[SHARD]] with @sgd
// CHECK-NEXT:    train.store %[[NEW]] to @w
// CHECK-NEXT:    dist.all_reduce mean
// CHECK-NEXT:    return

// -----

// Mixed precision: the bf16 parameter itself is stored sharded next to its
// fp32 master copy and moments. The forward gathers bf16; Adam runs on the
// master shard and the result, cast to bf16, is stored as the new bf16 shard.

module @stage3_mixed attributes {dist.placement = #dist.placement<cpu, [4]>} {
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

// CHECK-LABEL: module @stage3_mixed
// FLAT-NEXT:     train.param @w param : tensor<10x3xbf16> sharded flat over 0 -> tensor<8xbf16> init normal(0.0, 0.1)
// FLAT-NEXT:     train.param @w.master master of @w : tensor<10x3xf32> sharded flat over 0 -> tensor<8xf32>
// FLAT-NEXT:     train.param @w.m slot of @w : tensor<10x3xf32> sharded flat over 0 -> tensor<8xf32> init zeros
// FLAT-NEXT:     train.param @w.v slot of @w : tensor<10x3xf32> sharded flat over 0 -> tensor<8xf32> init zeros
// DIM0-NEXT:     train.param @w param : tensor<10x3xbf16> sharded dim0 over 0 -> tensor<3x3xbf16> init normal(0.0, 0.1)
// DIM0-NEXT:     train.param @w.master master of @w : tensor<10x3xf32> sharded dim0 over 0 -> tensor<3x3xf32>
// DIM0-NEXT:     train.param @w.m slot of @w : tensor<10x3xf32> sharded dim0 over 0 -> tensor<3x3xf32> init zeros
// DIM0-NEXT:     train.param @w.v slot of @w : tensor<10x3xf32> sharded dim0 over 0 -> tensor<3x3xf32> init zeros
// CHECK-NEXT:    train.optimizer @adam
// CHECK-NEXT:    func.func @step(%[[X:[^:]+]]: tensor<2x10xbf16>
// CHECK-NEXT:    %[[STEP:.+]] = train.step_index
// FLAT-NEXT:     %[[W:.+]] = train.load @w : tensor<8xbf16>
// FLAT-NEXT:     %[[GATHERED:.+]] = dist.all_gather %[[W]] axis 0 dim 0 : tensor<8xbf16> -> tensor<30xbf16>
// FLAT-NEXT:     %[[W_FULL:.+]] = train.reshape %[[GATHERED]] : tensor<30xbf16> -> tensor<10x3xbf16>
// DIM0-NEXT:     %[[W:.+]] = train.load @w : tensor<3x3xbf16>
// DIM0-NEXT:     %[[W_FULL:.+]] = dist.all_gather %[[W]] axis 0 dim 0 : tensor<3x3xbf16> -> tensor<10x3xbf16>
// CHECK-NEXT:    train.matmul %[[X]], %[[W_FULL]] :
// CHECK-NEXT:    train.reduce_sum
// CHECK-NEXT:    arith.constant
// CHECK-NEXT:    %[[DW:.+]] = train.matmul
// FLAT-NEXT:     %[[DW_FLAT:.+]] = train.reshape %[[DW]] : tensor<10x3xbf16> -> tensor<30xbf16>
// FLAT-NEXT:     %[[SHARD:.+]] = dist.reduce_scatter mean %[[DW_FLAT]] axis 0 dim 0 : tensor<30xbf16> -> tensor<8xbf16>
// DIM0-NEXT:     %[[SHARD:.+]] = dist.reduce_scatter mean %[[DW]] axis 0 dim 0 : tensor<10x3xbf16> -> tensor<3x3xbf16>
// CHECK-NEXT:    %[[MASTER:.+]] = train.load @w.master
// CHECK-NEXT:    %[[M:.+]] = train.load @w.m
// CHECK-NEXT:    %[[V:.+]] = train.load @w.v
// CHECK-NEXT:    %[[NEW:[^ ,]+]], %[[M_NEW:[^ ,]+]], %[[V_NEW:[^ ,]+]] = train.adam %[[MASTER]], %[[SHARD]], %[[M]], %[[V]] step %[[STEP]] with @adam
// CHECK-NEXT:    train.store %[[M_NEW]] to @w.m
// CHECK-NEXT:    train.store %[[V_NEW]] to @w.v
// CHECK-NEXT:    train.store %[[NEW]] to @w.master
// FLAT-NEXT:     %[[CAST:.+]] = train.cast %[[NEW]] : tensor<8xf32> -> tensor<8xbf16>
// FLAT-NEXT:     train.store %[[CAST]] to @w : tensor<8xbf16>
// DIM0-NEXT:     %[[CAST:.+]] = train.cast %[[NEW]] : tensor<3x3xf32> -> tensor<3x3xbf16>
// DIM0-NEXT:     train.store %[[CAST]] to @w : tensor<3x3xbf16>
// CHECK-NEXT:    dist.all_reduce mean %{{.+}} axis 0 : tensor<bf16>
// CHECK-NEXT:    return
