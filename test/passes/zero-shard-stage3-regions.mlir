// RUN: zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=3 layout=dim0})" | FileCheck %s --check-prefix=REGATHER
// RUN: zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=3 layout=dim0 regather-in-backward=false})" | FileCheck %s --check-prefix=REUSE
// RUN: zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=3 layout=dim0 regather-in-backward=false max-reuse-distance=6})" | FileCheck %s --check-prefix=REUSE
// RUN: zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=3 layout=dim0 regather-in-backward=false max-reuse-distance=5})" | FileCheck %s --check-prefix=DIST3
// RUN: zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=3 layout=dim0 regather-in-backward=false max-reuse-distance=3})" | FileCheck %s --check-prefix=DIST3
// RUN: zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=3 layout=dim0 regather-in-backward=false max-reuse-distance=2})" | FileCheck %s --check-prefix=DIST2
// RUN: zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=3 layout=dim0 max-reuse-distance=100})" | FileCheck %s --check-prefix=REGATHER

// Stage 3 use regions: which uses of a loaded parameter share one
// all-gather. A tied weight @w (4x4, 2 rows per rank) is used by both forward
// matmuls and by one backward matmul; a frozen @e (5x4, 3 rows per rank, 6
// with padding) by the loss projection and by one backward matmul. The ops of
// the step body, numbered as zero-shard counts distances:
//
//   0 load @w   1 load @e   2 mm(x, w)   3 mm(h, w)   4 mm(y, e^T)   5 sum
//   6 constant  7 mm(dz, e) 8 mm(h^T, dy) 9 mm(dy, w^T) ...
//
// * default: the backward use of each parameter starts a new region, whatever
//   max-reuse-distance says (a large one does not merge regions);
// * regather-in-backward=false: one gather per parameter serves all uses,
//   also when no two consecutive uses are more than max-reuse-distance=6 ops
//   apart (@w: 3 -> 9 is exactly 6);
// * max-reuse-distance=5 or 3: @w's uses 3 -> 9 are 6 apart, so the backward
//   use regathers; @e's uses 4 -> 7 are only 3 apart (exactly 3 is not more
//   than 3) and share one gather;
// * max-reuse-distance=2: both backward uses regather.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<4x4xf32> init normal(0.0, 0.1)
  train.param @e frozen : tensor<5x4xf32> init ones
  train.optimizer @sgd sgd lr 0.1
  func.func @step(%x: tensor<2x4xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<4x4xf32>
    %e = train.load @e : tensor<5x4xf32>
    %h = train.matmul %x, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %y = train.matmul %h, %w : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %z = train.matmul %y, %e transpose_b : tensor<2x4xf32>, tensor<5x4xf32> -> tensor<2x5xf32>
    %loss = train.reduce_sum %z dims [0, 1] : tensor<2x5xf32> -> tensor<f32>
    %dz = arith.constant dense<1.0> : tensor<2x5xf32>
    %dy = train.matmul %dz, %e : tensor<2x5xf32>, tensor<5x4xf32> -> tensor<2x4xf32>
    %dw2 = train.matmul %h, %dy transpose_a : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
    %dh = train.matmul %dy, %w transpose_b : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %dw1 = train.matmul %x, %dh transpose_a : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
    %dw = train.add %dw1, %dw2 : tensor<4x4xf32>
    train.apply_gradient %dw to @w with @sgd : tensor<4x4xf32>
    return %loss : tensor<f32>
  }
}

// REGATHER-LABEL: func.func @step
// REGATHER-SAME:    (%[[X:[^:]+]]: tensor<2x4xf32>
// REGATHER-NEXT:    %[[W:.+]] = train.load @w : tensor<2x4xf32>
// REGATHER-NEXT:    %[[E:.+]] = train.load @e : tensor<3x4xf32>
// REGATHER-NEXT:    %[[W_FWD:.+]] = dist.all_gather %[[W]] axis 0 dim 0 : tensor<2x4xf32> -> tensor<4x4xf32>
// REGATHER-NEXT:    %[[H:.+]] = train.matmul %[[X]], %[[W_FWD]] :
// REGATHER-NEXT:    %[[Y:.+]] = train.matmul %[[H]], %[[W_FWD]] :
// REGATHER-NEXT:    %[[E_FWD:.+]] = dist.all_gather %[[E]] axis 0 dim 0 : tensor<3x4xf32> -> tensor<5x4xf32>
// REGATHER-NEXT:    train.matmul %[[Y]], %[[E_FWD]] transpose_b :
// REGATHER-NEXT:    train.reduce_sum
// REGATHER-NEXT:    %[[DZ:.+]] = arith.constant
// REGATHER-NEXT:    %[[E_BWD:.+]] = dist.all_gather %[[E]] axis 0 dim 0 : tensor<3x4xf32> -> tensor<5x4xf32>
// REGATHER-NEXT:    %[[DY:.+]] = train.matmul %[[DZ]], %[[E_BWD]] :
// REGATHER-NEXT:    train.matmul %[[H]], %[[DY]] transpose_a :
// REGATHER-NEXT:    %[[W_BWD:.+]] = dist.all_gather %[[W]] axis 0 dim 0 : tensor<2x4xf32> -> tensor<4x4xf32>
// REGATHER-NEXT:    train.matmul %[[DY]], %[[W_BWD]] transpose_b :
// REGATHER-NOT:     dist.all_gather
// REGATHER:         return

// REUSE-LABEL: func.func @step
// REUSE-SAME:    (%[[X:[^:]+]]: tensor<2x4xf32>
// REUSE-NEXT:    %[[W:.+]] = train.load @w : tensor<2x4xf32>
// REUSE-NEXT:    %[[E:.+]] = train.load @e : tensor<3x4xf32>
// REUSE-NEXT:    %[[W_FULL:.+]] = dist.all_gather %[[W]] axis 0 dim 0 : tensor<2x4xf32> -> tensor<4x4xf32>
// REUSE-NEXT:    %[[H:.+]] = train.matmul %[[X]], %[[W_FULL]] :
// REUSE-NEXT:    %[[Y:.+]] = train.matmul %[[H]], %[[W_FULL]] :
// REUSE-NEXT:    %[[E_FULL:.+]] = dist.all_gather %[[E]] axis 0 dim 0 : tensor<3x4xf32> -> tensor<5x4xf32>
// REUSE-NEXT:    train.matmul %[[Y]], %[[E_FULL]] transpose_b :
// REUSE-NEXT:    train.reduce_sum
// REUSE-NEXT:    %[[DZ:.+]] = arith.constant
// REUSE-NEXT:    %[[DY:.+]] = train.matmul %[[DZ]], %[[E_FULL]] :
// REUSE-NEXT:    train.matmul %[[H]], %[[DY]] transpose_a :
// REUSE-NEXT:    train.matmul %[[DY]], %[[W_FULL]] transpose_b :
// REUSE-NOT:     dist.all_gather
// REUSE:         return

// DIST3-LABEL: func.func @step
// DIST3-SAME:    (%[[X:[^:]+]]: tensor<2x4xf32>
// DIST3-NEXT:    %[[W:.+]] = train.load @w : tensor<2x4xf32>
// DIST3-NEXT:    %[[E:.+]] = train.load @e : tensor<3x4xf32>
// DIST3-NEXT:    %[[W_FWD:.+]] = dist.all_gather %[[W]] axis 0 dim 0 : tensor<2x4xf32> -> tensor<4x4xf32>
// DIST3-NEXT:    %[[H:.+]] = train.matmul %[[X]], %[[W_FWD]] :
// DIST3-NEXT:    %[[Y:.+]] = train.matmul %[[H]], %[[W_FWD]] :
// DIST3-NEXT:    %[[E_FULL:.+]] = dist.all_gather %[[E]] axis 0 dim 0 : tensor<3x4xf32> -> tensor<5x4xf32>
// DIST3-NEXT:    train.matmul %[[Y]], %[[E_FULL]] transpose_b :
// DIST3-NEXT:    train.reduce_sum
// DIST3-NEXT:    %[[DZ:.+]] = arith.constant
// DIST3-NEXT:    %[[DY:.+]] = train.matmul %[[DZ]], %[[E_FULL]] :
// DIST3-NEXT:    train.matmul %[[H]], %[[DY]] transpose_a :
// DIST3-NEXT:    %[[W_BWD:.+]] = dist.all_gather %[[W]] axis 0 dim 0 : tensor<2x4xf32> -> tensor<4x4xf32>
// DIST3-NEXT:    train.matmul %[[DY]], %[[W_BWD]] transpose_b :
// DIST3-NOT:     dist.all_gather
// DIST3:         return

// DIST2-LABEL: func.func @step
// DIST2:         %[[W:.+]] = train.load @w : tensor<2x4xf32>
// DIST2-NEXT:    %[[E:.+]] = train.load @e : tensor<3x4xf32>
// DIST2-NEXT:    %[[W_FWD:.+]] = dist.all_gather %[[W]]
// DIST2-NEXT:    %[[H:.+]] = train.matmul %{{.+}}, %[[W_FWD]] :
// DIST2-NEXT:    %[[Y:.+]] = train.matmul %[[H]], %[[W_FWD]] :
// DIST2-NEXT:    %[[E_FWD:.+]] = dist.all_gather %[[E]]
// DIST2-NEXT:    train.matmul %[[Y]], %[[E_FWD]] transpose_b :
// DIST2-NEXT:    train.reduce_sum
// DIST2-NEXT:    %[[DZ:.+]] = arith.constant
// DIST2-NEXT:    %[[E_BWD:.+]] = dist.all_gather %[[E]]
// DIST2-NEXT:    %[[DY:.+]] = train.matmul %[[DZ]], %[[E_BWD]] :
// DIST2-NEXT:    train.matmul %[[H]], %[[DY]] transpose_a :
// DIST2-NEXT:    %[[W_BWD:.+]] = dist.all_gather %[[W]]
// DIST2-NEXT:    train.matmul %[[DY]], %[[W_BWD]] transpose_b :
// DIST2-NOT:     dist.all_gather
// DIST2:         return
