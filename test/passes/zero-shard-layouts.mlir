// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=3 layout=flat})" | FileCheck %s --check-prefixes=CHECK,FLAT
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=3 layout=dim0})" | FileCheck %s --check-prefixes=CHECK,DIM0
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=1 layout=flat})" | FileCheck %s --check-prefix=STAGE1

// Shard sizes of the two layouts for group sizes that do not divide the
// tensors, at stage 3 where parameters, slots, gathers and reduce-scatters all
// show the local types. A 10x3 weight and a 3-element bias:
//
//   ranks   flat (ceil(30/N), ceil(3/N))   dim0 (ceil(10/N) rows, ceil(3/N))
//     1            30, 3                        10x3, 3
//     2            15, 2                         5x3, 2
//     3            10, 1                         4x3, 1
//     4             8, 1                         3x3, 1
//     8             4, 1                         2x3, 1
//
// The padding is implicit in the local types: e.g. 4 ranks x 8 = 32 flat
// elements hold 30, 4 ranks x 3 rows = 12 rows hold 10. A single rank keeps
// full-size "shards" and still goes through the collectives.

// One rank: every shard is the whole tensor, the collectives stay.

module @ranks1 attributes {dist.placement = #dist.placement<cpu, [1]>} {
  train.param @w param : tensor<10x3xf32> init normal(0.0, 0.1)
  train.param @b param : tensor<3xf32> init zeros
  train.optimizer @momentum momentum lr 0.1 momentum 0.9
  func.func @step(%x: tensor<2x10xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<10x3xf32>
    %b = train.load @b : tensor<3xf32>
    %xw = train.matmul %x, %w : tensor<2x10xf32>, tensor<10x3xf32> -> tensor<2x3xf32>
    %y = train.bias_add %xw, %b : tensor<2x3xf32>, tensor<3xf32>
    %loss = train.reduce_sum %y dims [0, 1] : tensor<2x3xf32> -> tensor<f32>
    %dy = arith.constant dense<1.0> : tensor<2x3xf32>
    %dw = train.matmul %x, %dy transpose_a : tensor<2x10xf32>, tensor<2x3xf32> -> tensor<10x3xf32>
    %db = train.reduce_sum %dy dims [0] : tensor<2x3xf32> -> tensor<3xf32>
    train.apply_gradient %dw to @w with @momentum : tensor<10x3xf32>
    train.apply_gradient %db to @b with @momentum : tensor<3xf32>
    return %loss : tensor<f32>
  }
}

// At stage 1 with one rank the replicated parameter is "sliced" whole, and
// the update is still reduce-scattered and gathered.
// STAGE1-LABEL: module @ranks1
// STAGE1:         %[[DW:.+]] = train.matmul %{{.+}}, %{{.+}} transpose_a
// STAGE1:         %[[DW_FLAT:.+]] = train.reshape %[[DW]] : tensor<10x3xf32> -> tensor<30xf32>
// STAGE1-NEXT:    %[[DW_SHARD:.+]] = dist.reduce_scatter mean %[[DW_FLAT]] axis 0 dim 0 : tensor<30xf32> -> tensor<30xf32>
// STAGE1-NEXT:    %[[DB_SHARD:.+]] = dist.reduce_scatter mean %{{.+}} axis 0 dim 0 : tensor<3xf32> -> tensor<3xf32>
// STAGE1-NEXT:    %[[W:.+]] = train.load @w : tensor<10x3xf32>
// STAGE1-NEXT:    %[[W_FLAT:.+]] = train.reshape %[[W]] : tensor<10x3xf32> -> tensor<30xf32>
// STAGE1-NEXT:    %[[W_SLICE:.+]] = dist.slice %[[W_FLAT]] axis 0 dim 0 : tensor<30xf32> -> tensor<30xf32>
// STAGE1-NEXT:    %[[W_BUF:.+]] = train.load @w.momentum : tensor<30xf32>
// STAGE1-NEXT:    %[[W_NEW:[^ ,]+]], %{{[^ ,]+}} = train.sgd_momentum %[[W_SLICE]], %[[DW_SHARD]], %[[W_BUF]]
// STAGE1:         %[[W_GATHERED:.+]] = dist.all_gather %[[W_NEW]] axis 0 dim 0 : tensor<30xf32> -> tensor<30xf32>
// STAGE1-NEXT:    dist.all_gather %{{.+}} axis 0 dim 0 : tensor<3xf32> -> tensor<3xf32>
// STAGE1-NEXT:    %[[W_FULL:.+]] = train.reshape %[[W_GATHERED]] : tensor<30xf32> -> tensor<10x3xf32>
// STAGE1-NEXT:    train.store %[[W_FULL]] to @w : tensor<10x3xf32>

// CHECK-LABEL: module @ranks1
// CHECK-SAME:    #dist.placement<cpu, [1]>
// FLAT-NEXT:     train.param @w param : tensor<10x3xf32> sharded flat over 0 -> tensor<30xf32>
// FLAT-NEXT:     train.param @w.momentum slot of @w : tensor<10x3xf32> sharded flat over 0 -> tensor<30xf32>
// FLAT-NEXT:     train.param @b param : tensor<3xf32> sharded flat over 0 -> tensor<3xf32>
// FLAT-NEXT:     train.param @b.momentum slot of @b : tensor<3xf32> sharded flat over 0 -> tensor<3xf32>
// DIM0-NEXT:     train.param @w param : tensor<10x3xf32> sharded dim0 over 0 -> tensor<10x3xf32>
// DIM0-NEXT:     train.param @w.momentum slot of @w : tensor<10x3xf32> sharded dim0 over 0 -> tensor<10x3xf32>
// DIM0-NEXT:     train.param @b param : tensor<3xf32> sharded dim0 over 0 -> tensor<3xf32>
// DIM0-NEXT:     train.param @b.momentum slot of @b : tensor<3xf32> sharded dim0 over 0 -> tensor<3xf32>
// CHECK:         func.func @step
// FLAT-NEXT:     %[[W:.+]] = train.load @w : tensor<30xf32>
// FLAT-NEXT:     %[[B:.+]] = train.load @b : tensor<3xf32>
// FLAT-NEXT:     %[[W_GATHERED:.+]] = dist.all_gather %[[W]] axis 0 dim 0 : tensor<30xf32> -> tensor<30xf32>
// FLAT-NEXT:     %[[W_FULL:.+]] = train.reshape %[[W_GATHERED]] : tensor<30xf32> -> tensor<10x3xf32>
// DIM0-NEXT:     %[[W:.+]] = train.load @w : tensor<10x3xf32>
// DIM0-NEXT:     %[[B:.+]] = train.load @b : tensor<3xf32>
// DIM0-NEXT:     %[[W_FULL:.+]] = dist.all_gather %[[W]] axis 0 dim 0 : tensor<10x3xf32> -> tensor<10x3xf32>
// CHECK-NEXT:    %[[XW:.+]] = train.matmul %{{.+}}, %[[W_FULL]]
// FLAT-NEXT:     %[[B_FULL:.+]] = dist.all_gather %[[B]] axis 0 dim 0 : tensor<3xf32> -> tensor<3xf32>
// DIM0-NEXT:     %[[B_FULL:.+]] = dist.all_gather %[[B]] axis 0 dim 0 : tensor<3xf32> -> tensor<3xf32>
// CHECK-NEXT:    train.bias_add %[[XW]], %[[B_FULL]]
// CHECK:         %[[DW:.+]] = train.matmul %{{.+}}, %{{.+}} transpose_a
// FLAT-NEXT:     %[[DW_FLAT:.+]] = train.reshape %[[DW]] : tensor<10x3xf32> -> tensor<30xf32>
// FLAT-NEXT:     %[[DW_SHARD:.+]] = dist.reduce_scatter mean %[[DW_FLAT]] axis 0 dim 0 : tensor<30xf32> -> tensor<30xf32>
// DIM0-NEXT:     %[[DW_SHARD:.+]] = dist.reduce_scatter mean %[[DW]] axis 0 dim 0 : tensor<10x3xf32> -> tensor<10x3xf32>
// CHECK-NEXT:    %[[DB:.+]] = train.reduce_sum
// FLAT-NEXT:     %[[DB_SHARD:.+]] = dist.reduce_scatter mean %[[DB]] axis 0 dim 0 : tensor<3xf32> -> tensor<3xf32>
// DIM0-NEXT:     %[[DB_SHARD:.+]] = dist.reduce_scatter mean %[[DB]] axis 0 dim 0 : tensor<3xf32> -> tensor<3xf32>
// CHECK-NEXT:    %[[W_SHARD:.+]] = train.load @w :
// CHECK-NEXT:    %[[W_BUF:.+]] = train.load @w.momentum :
// FLAT-NEXT:     %[[W_NEW:[^ ,]+]], %[[W_BUF_NEW:[^ ,]+]] = train.sgd_momentum %[[W_SHARD]], %[[DW_SHARD]], %[[W_BUF]] with @momentum : tensor<30xf32>, tensor<30xf32>, tensor<30xf32>
// DIM0-NEXT:     %[[W_NEW:[^ ,]+]], %[[W_BUF_NEW:[^ ,]+]] = train.sgd_momentum %[[W_SHARD]], %[[DW_SHARD]], %[[W_BUF]] with @momentum : tensor<10x3xf32>, tensor<10x3xf32>, tensor<10x3xf32>
// CHECK-NEXT:    train.store %[[W_BUF_NEW]] to @w.momentum
// CHECK-NEXT:    train.store %[[W_NEW]] to @w
// CHECK-NEXT:    %[[B_SHARD:.+]] = train.load @b :
// CHECK-NEXT:    %[[B_BUF:.+]] = train.load @b.momentum :
// CHECK-NEXT:    %[[B_NEW:[^ ,]+]], %[[B_BUF_NEW:[^ ,]+]] = train.sgd_momentum %[[B_SHARD]], %[[DB_SHARD]], %[[B_BUF]] with @momentum
// CHECK-NEXT:    train.store %[[B_BUF_NEW]] to @b.momentum
// CHECK-NEXT:    train.store %[[B_NEW]] to @b
// CHECK-NEXT:    dist.all_reduce mean
// CHECK-NEXT:    return

// -----

// Two ranks: 30 elements split evenly; the 3-element bias pads to 4.

module @ranks2 attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<10x3xf32> init normal(0.0, 0.1)
  train.param @b param : tensor<3xf32> init zeros
  train.optimizer @momentum momentum lr 0.1 momentum 0.9
  func.func @step(%x: tensor<2x10xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<10x3xf32>
    %b = train.load @b : tensor<3xf32>
    %xw = train.matmul %x, %w : tensor<2x10xf32>, tensor<10x3xf32> -> tensor<2x3xf32>
    %y = train.bias_add %xw, %b : tensor<2x3xf32>, tensor<3xf32>
    %loss = train.reduce_sum %y dims [0, 1] : tensor<2x3xf32> -> tensor<f32>
    %dy = arith.constant dense<1.0> : tensor<2x3xf32>
    %dw = train.matmul %x, %dy transpose_a : tensor<2x10xf32>, tensor<2x3xf32> -> tensor<10x3xf32>
    %db = train.reduce_sum %dy dims [0] : tensor<2x3xf32> -> tensor<3xf32>
    train.apply_gradient %dw to @w with @momentum : tensor<10x3xf32>
    train.apply_gradient %db to @b with @momentum : tensor<3xf32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: module @ranks2
// CHECK-SAME:    #dist.placement<cpu, [2]>
// FLAT-NEXT:     train.param @w param : tensor<10x3xf32> sharded flat over 0 -> tensor<15xf32>
// FLAT-NEXT:     train.param @w.momentum slot of @w : tensor<10x3xf32> sharded flat over 0 -> tensor<15xf32>
// FLAT-NEXT:     train.param @b param : tensor<3xf32> sharded flat over 0 -> tensor<2xf32>
// FLAT-NEXT:     train.param @b.momentum slot of @b : tensor<3xf32> sharded flat over 0 -> tensor<2xf32>
// DIM0-NEXT:     train.param @w param : tensor<10x3xf32> sharded dim0 over 0 -> tensor<5x3xf32>
// DIM0-NEXT:     train.param @w.momentum slot of @w : tensor<10x3xf32> sharded dim0 over 0 -> tensor<5x3xf32>
// DIM0-NEXT:     train.param @b param : tensor<3xf32> sharded dim0 over 0 -> tensor<2xf32>
// DIM0-NEXT:     train.param @b.momentum slot of @b : tensor<3xf32> sharded dim0 over 0 -> tensor<2xf32>
// CHECK:         func.func @step
// FLAT-NEXT:     %[[W:.+]] = train.load @w : tensor<15xf32>
// FLAT-NEXT:     %[[B:.+]] = train.load @b : tensor<2xf32>
// FLAT-NEXT:     %[[W_GATHERED:.+]] = dist.all_gather %[[W]] axis 0 dim 0 : tensor<15xf32> -> tensor<30xf32>
// FLAT-NEXT:     %[[W_FULL:.+]] = train.reshape %[[W_GATHERED]] : tensor<30xf32> -> tensor<10x3xf32>
// DIM0-NEXT:     %[[W:.+]] = train.load @w : tensor<5x3xf32>
// DIM0-NEXT:     %[[B:.+]] = train.load @b : tensor<2xf32>
// DIM0-NEXT:     %[[W_FULL:.+]] = dist.all_gather %[[W]] axis 0 dim 0 : tensor<5x3xf32> -> tensor<10x3xf32>
// CHECK-NEXT:    %[[XW:.+]] = train.matmul %{{.+}}, %[[W_FULL]]
// FLAT-NEXT:     %[[B_FULL:.+]] = dist.all_gather %[[B]] axis 0 dim 0 : tensor<2xf32> -> tensor<3xf32>
// DIM0-NEXT:     %[[B_FULL:.+]] = dist.all_gather %[[B]] axis 0 dim 0 : tensor<2xf32> -> tensor<3xf32>
// CHECK-NEXT:    train.bias_add %[[XW]], %[[B_FULL]]
// CHECK:         %[[DW:.+]] = train.matmul %{{.+}}, %{{.+}} transpose_a
// FLAT-NEXT:     %[[DW_FLAT:.+]] = train.reshape %[[DW]] : tensor<10x3xf32> -> tensor<30xf32>
// FLAT-NEXT:     %[[DW_SHARD:.+]] = dist.reduce_scatter mean %[[DW_FLAT]] axis 0 dim 0 : tensor<30xf32> -> tensor<15xf32>
// DIM0-NEXT:     %[[DW_SHARD:.+]] = dist.reduce_scatter mean %[[DW]] axis 0 dim 0 : tensor<10x3xf32> -> tensor<5x3xf32>
// CHECK-NEXT:    %[[DB:.+]] = train.reduce_sum
// FLAT-NEXT:     %[[DB_SHARD:.+]] = dist.reduce_scatter mean %[[DB]] axis 0 dim 0 : tensor<3xf32> -> tensor<2xf32>
// DIM0-NEXT:     %[[DB_SHARD:.+]] = dist.reduce_scatter mean %[[DB]] axis 0 dim 0 : tensor<3xf32> -> tensor<2xf32>
// CHECK-NEXT:    %[[W_SHARD:.+]] = train.load @w :
// CHECK-NEXT:    %[[W_BUF:.+]] = train.load @w.momentum :
// FLAT-NEXT:     %[[W_NEW:[^ ,]+]], %[[W_BUF_NEW:[^ ,]+]] = train.sgd_momentum %[[W_SHARD]], %[[DW_SHARD]], %[[W_BUF]] with @momentum : tensor<15xf32>, tensor<15xf32>, tensor<15xf32>
// DIM0-NEXT:     %[[W_NEW:[^ ,]+]], %[[W_BUF_NEW:[^ ,]+]] = train.sgd_momentum %[[W_SHARD]], %[[DW_SHARD]], %[[W_BUF]] with @momentum : tensor<5x3xf32>, tensor<5x3xf32>, tensor<5x3xf32>
// CHECK-NEXT:    train.store %[[W_BUF_NEW]] to @w.momentum
// CHECK-NEXT:    train.store %[[W_NEW]] to @w
// CHECK-NEXT:    %[[B_SHARD:.+]] = train.load @b :
// CHECK-NEXT:    %[[B_BUF:.+]] = train.load @b.momentum :
// CHECK-NEXT:    %[[B_NEW:[^ ,]+]], %[[B_BUF_NEW:[^ ,]+]] = train.sgd_momentum %[[B_SHARD]], %[[DB_SHARD]], %[[B_BUF]] with @momentum
// CHECK-NEXT:    train.store %[[B_BUF_NEW]] to @b.momentum
// CHECK-NEXT:    train.store %[[B_NEW]] to @b
// CHECK-NEXT:    dist.all_reduce mean
// CHECK-NEXT:    return

// -----

// Three ranks: flat splits 30 evenly, dim0 pads 10 rows to 12.

module @ranks3 attributes {dist.placement = #dist.placement<cpu, [3]>} {
  train.param @w param : tensor<10x3xf32> init normal(0.0, 0.1)
  train.param @b param : tensor<3xf32> init zeros
  train.optimizer @momentum momentum lr 0.1 momentum 0.9
  func.func @step(%x: tensor<2x10xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<10x3xf32>
    %b = train.load @b : tensor<3xf32>
    %xw = train.matmul %x, %w : tensor<2x10xf32>, tensor<10x3xf32> -> tensor<2x3xf32>
    %y = train.bias_add %xw, %b : tensor<2x3xf32>, tensor<3xf32>
    %loss = train.reduce_sum %y dims [0, 1] : tensor<2x3xf32> -> tensor<f32>
    %dy = arith.constant dense<1.0> : tensor<2x3xf32>
    %dw = train.matmul %x, %dy transpose_a : tensor<2x10xf32>, tensor<2x3xf32> -> tensor<10x3xf32>
    %db = train.reduce_sum %dy dims [0] : tensor<2x3xf32> -> tensor<3xf32>
    train.apply_gradient %dw to @w with @momentum : tensor<10x3xf32>
    train.apply_gradient %db to @b with @momentum : tensor<3xf32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: module @ranks3
// CHECK-SAME:    #dist.placement<cpu, [3]>
// FLAT-NEXT:     train.param @w param : tensor<10x3xf32> sharded flat over 0 -> tensor<10xf32>
// FLAT-NEXT:     train.param @w.momentum slot of @w : tensor<10x3xf32> sharded flat over 0 -> tensor<10xf32>
// FLAT-NEXT:     train.param @b param : tensor<3xf32> sharded flat over 0 -> tensor<1xf32>
// FLAT-NEXT:     train.param @b.momentum slot of @b : tensor<3xf32> sharded flat over 0 -> tensor<1xf32>
// DIM0-NEXT:     train.param @w param : tensor<10x3xf32> sharded dim0 over 0 -> tensor<4x3xf32>
// DIM0-NEXT:     train.param @w.momentum slot of @w : tensor<10x3xf32> sharded dim0 over 0 -> tensor<4x3xf32>
// DIM0-NEXT:     train.param @b param : tensor<3xf32> sharded dim0 over 0 -> tensor<1xf32>
// DIM0-NEXT:     train.param @b.momentum slot of @b : tensor<3xf32> sharded dim0 over 0 -> tensor<1xf32>
// CHECK:         func.func @step
// FLAT-NEXT:     %[[W:.+]] = train.load @w : tensor<10xf32>
// FLAT-NEXT:     %[[B:.+]] = train.load @b : tensor<1xf32>
// FLAT-NEXT:     %[[W_GATHERED:.+]] = dist.all_gather %[[W]] axis 0 dim 0 : tensor<10xf32> -> tensor<30xf32>
// FLAT-NEXT:     %[[W_FULL:.+]] = train.reshape %[[W_GATHERED]] : tensor<30xf32> -> tensor<10x3xf32>
// DIM0-NEXT:     %[[W:.+]] = train.load @w : tensor<4x3xf32>
// DIM0-NEXT:     %[[B:.+]] = train.load @b : tensor<1xf32>
// DIM0-NEXT:     %[[W_FULL:.+]] = dist.all_gather %[[W]] axis 0 dim 0 : tensor<4x3xf32> -> tensor<10x3xf32>
// CHECK-NEXT:    %[[XW:.+]] = train.matmul %{{.+}}, %[[W_FULL]]
// FLAT-NEXT:     %[[B_FULL:.+]] = dist.all_gather %[[B]] axis 0 dim 0 : tensor<1xf32> -> tensor<3xf32>
// DIM0-NEXT:     %[[B_FULL:.+]] = dist.all_gather %[[B]] axis 0 dim 0 : tensor<1xf32> -> tensor<3xf32>
// CHECK-NEXT:    train.bias_add %[[XW]], %[[B_FULL]]
// CHECK:         %[[DW:.+]] = train.matmul %{{.+}}, %{{.+}} transpose_a
// FLAT-NEXT:     %[[DW_FLAT:.+]] = train.reshape %[[DW]] : tensor<10x3xf32> -> tensor<30xf32>
// FLAT-NEXT:     %[[DW_SHARD:.+]] = dist.reduce_scatter mean %[[DW_FLAT]] axis 0 dim 0 : tensor<30xf32> -> tensor<10xf32>
// DIM0-NEXT:     %[[DW_SHARD:.+]] = dist.reduce_scatter mean %[[DW]] axis 0 dim 0 : tensor<10x3xf32> -> tensor<4x3xf32>
// CHECK-NEXT:    %[[DB:.+]] = train.reduce_sum
// FLAT-NEXT:     %[[DB_SHARD:.+]] = dist.reduce_scatter mean %[[DB]] axis 0 dim 0 : tensor<3xf32> -> tensor<1xf32>
// DIM0-NEXT:     %[[DB_SHARD:.+]] = dist.reduce_scatter mean %[[DB]] axis 0 dim 0 : tensor<3xf32> -> tensor<1xf32>
// CHECK-NEXT:    %[[W_SHARD:.+]] = train.load @w :
// CHECK-NEXT:    %[[W_BUF:.+]] = train.load @w.momentum :
// FLAT-NEXT:     %[[W_NEW:[^ ,]+]], %[[W_BUF_NEW:[^ ,]+]] = train.sgd_momentum %[[W_SHARD]], %[[DW_SHARD]], %[[W_BUF]] with @momentum : tensor<10xf32>, tensor<10xf32>, tensor<10xf32>
// DIM0-NEXT:     %[[W_NEW:[^ ,]+]], %[[W_BUF_NEW:[^ ,]+]] = train.sgd_momentum %[[W_SHARD]], %[[DW_SHARD]], %[[W_BUF]] with @momentum : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>
// CHECK-NEXT:    train.store %[[W_BUF_NEW]] to @w.momentum
// CHECK-NEXT:    train.store %[[W_NEW]] to @w
// CHECK-NEXT:    %[[B_SHARD:.+]] = train.load @b :
// CHECK-NEXT:    %[[B_BUF:.+]] = train.load @b.momentum :
// CHECK-NEXT:    %[[B_NEW:[^ ,]+]], %[[B_BUF_NEW:[^ ,]+]] = train.sgd_momentum %[[B_SHARD]], %[[DB_SHARD]], %[[B_BUF]] with @momentum
// CHECK-NEXT:    train.store %[[B_BUF_NEW]] to @b.momentum
// CHECK-NEXT:    train.store %[[B_NEW]] to @b
// CHECK-NEXT:    dist.all_reduce mean
// CHECK-NEXT:    return

// -----

// Four ranks: flat pads 30 to 32, dim0 pads 10 rows to 12.

module @ranks4 attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @w param : tensor<10x3xf32> init normal(0.0, 0.1)
  train.param @b param : tensor<3xf32> init zeros
  train.optimizer @momentum momentum lr 0.1 momentum 0.9
  func.func @step(%x: tensor<2x10xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<10x3xf32>
    %b = train.load @b : tensor<3xf32>
    %xw = train.matmul %x, %w : tensor<2x10xf32>, tensor<10x3xf32> -> tensor<2x3xf32>
    %y = train.bias_add %xw, %b : tensor<2x3xf32>, tensor<3xf32>
    %loss = train.reduce_sum %y dims [0, 1] : tensor<2x3xf32> -> tensor<f32>
    %dy = arith.constant dense<1.0> : tensor<2x3xf32>
    %dw = train.matmul %x, %dy transpose_a : tensor<2x10xf32>, tensor<2x3xf32> -> tensor<10x3xf32>
    %db = train.reduce_sum %dy dims [0] : tensor<2x3xf32> -> tensor<3xf32>
    train.apply_gradient %dw to @w with @momentum : tensor<10x3xf32>
    train.apply_gradient %db to @b with @momentum : tensor<3xf32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: module @ranks4
// CHECK-SAME:    #dist.placement<cpu, [4]>
// FLAT-NEXT:     train.param @w param : tensor<10x3xf32> sharded flat over 0 -> tensor<8xf32>
// FLAT-NEXT:     train.param @w.momentum slot of @w : tensor<10x3xf32> sharded flat over 0 -> tensor<8xf32>
// FLAT-NEXT:     train.param @b param : tensor<3xf32> sharded flat over 0 -> tensor<1xf32>
// FLAT-NEXT:     train.param @b.momentum slot of @b : tensor<3xf32> sharded flat over 0 -> tensor<1xf32>
// DIM0-NEXT:     train.param @w param : tensor<10x3xf32> sharded dim0 over 0 -> tensor<3x3xf32>
// DIM0-NEXT:     train.param @w.momentum slot of @w : tensor<10x3xf32> sharded dim0 over 0 -> tensor<3x3xf32>
// DIM0-NEXT:     train.param @b param : tensor<3xf32> sharded dim0 over 0 -> tensor<1xf32>
// DIM0-NEXT:     train.param @b.momentum slot of @b : tensor<3xf32> sharded dim0 over 0 -> tensor<1xf32>
// CHECK:         func.func @step
// FLAT-NEXT:     %[[W:.+]] = train.load @w : tensor<8xf32>
// FLAT-NEXT:     %[[B:.+]] = train.load @b : tensor<1xf32>
// FLAT-NEXT:     %[[W_GATHERED:.+]] = dist.all_gather %[[W]] axis 0 dim 0 : tensor<8xf32> -> tensor<30xf32>
// FLAT-NEXT:     %[[W_FULL:.+]] = train.reshape %[[W_GATHERED]] : tensor<30xf32> -> tensor<10x3xf32>
// DIM0-NEXT:     %[[W:.+]] = train.load @w : tensor<3x3xf32>
// DIM0-NEXT:     %[[B:.+]] = train.load @b : tensor<1xf32>
// DIM0-NEXT:     %[[W_FULL:.+]] = dist.all_gather %[[W]] axis 0 dim 0 : tensor<3x3xf32> -> tensor<10x3xf32>
// CHECK-NEXT:    %[[XW:.+]] = train.matmul %{{.+}}, %[[W_FULL]]
// FLAT-NEXT:     %[[B_FULL:.+]] = dist.all_gather %[[B]] axis 0 dim 0 : tensor<1xf32> -> tensor<3xf32>
// DIM0-NEXT:     %[[B_FULL:.+]] = dist.all_gather %[[B]] axis 0 dim 0 : tensor<1xf32> -> tensor<3xf32>
// CHECK-NEXT:    train.bias_add %[[XW]], %[[B_FULL]]
// CHECK:         %[[DW:.+]] = train.matmul %{{.+}}, %{{.+}} transpose_a
// FLAT-NEXT:     %[[DW_FLAT:.+]] = train.reshape %[[DW]] : tensor<10x3xf32> -> tensor<30xf32>
// FLAT-NEXT:     %[[DW_SHARD:.+]] = dist.reduce_scatter mean %[[DW_FLAT]] axis 0 dim 0 : tensor<30xf32> -> tensor<8xf32>
// DIM0-NEXT:     %[[DW_SHARD:.+]] = dist.reduce_scatter mean %[[DW]] axis 0 dim 0 : tensor<10x3xf32> -> tensor<3x3xf32>
// CHECK-NEXT:    %[[DB:.+]] = train.reduce_sum
// FLAT-NEXT:     %[[DB_SHARD:.+]] = dist.reduce_scatter mean %[[DB]] axis 0 dim 0 : tensor<3xf32> -> tensor<1xf32>
// DIM0-NEXT:     %[[DB_SHARD:.+]] = dist.reduce_scatter mean %[[DB]] axis 0 dim 0 : tensor<3xf32> -> tensor<1xf32>
// CHECK-NEXT:    %[[W_SHARD:.+]] = train.load @w :
// CHECK-NEXT:    %[[W_BUF:.+]] = train.load @w.momentum :
// FLAT-NEXT:     %[[W_NEW:[^ ,]+]], %[[W_BUF_NEW:[^ ,]+]] = train.sgd_momentum %[[W_SHARD]], %[[DW_SHARD]], %[[W_BUF]] with @momentum : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
// DIM0-NEXT:     %[[W_NEW:[^ ,]+]], %[[W_BUF_NEW:[^ ,]+]] = train.sgd_momentum %[[W_SHARD]], %[[DW_SHARD]], %[[W_BUF]] with @momentum : tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>
// CHECK-NEXT:    train.store %[[W_BUF_NEW]] to @w.momentum
// CHECK-NEXT:    train.store %[[W_NEW]] to @w
// CHECK-NEXT:    %[[B_SHARD:.+]] = train.load @b :
// CHECK-NEXT:    %[[B_BUF:.+]] = train.load @b.momentum :
// CHECK-NEXT:    %[[B_NEW:[^ ,]+]], %[[B_BUF_NEW:[^ ,]+]] = train.sgd_momentum %[[B_SHARD]], %[[DB_SHARD]], %[[B_BUF]] with @momentum
// CHECK-NEXT:    train.store %[[B_BUF_NEW]] to @b.momentum
// CHECK-NEXT:    train.store %[[B_NEW]] to @b
// CHECK-NEXT:    dist.all_reduce mean
// CHECK-NEXT:    return

// -----

// Eight ranks: flat pads 30 to 32, dim0 pads 10 rows to 16; the bias pads 3 to 8.

module @ranks8 attributes {dist.placement = #dist.placement<cpu, [8]>} {
  train.param @w param : tensor<10x3xf32> init normal(0.0, 0.1)
  train.param @b param : tensor<3xf32> init zeros
  train.optimizer @momentum momentum lr 0.1 momentum 0.9
  func.func @step(%x: tensor<2x10xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<10x3xf32>
    %b = train.load @b : tensor<3xf32>
    %xw = train.matmul %x, %w : tensor<2x10xf32>, tensor<10x3xf32> -> tensor<2x3xf32>
    %y = train.bias_add %xw, %b : tensor<2x3xf32>, tensor<3xf32>
    %loss = train.reduce_sum %y dims [0, 1] : tensor<2x3xf32> -> tensor<f32>
    %dy = arith.constant dense<1.0> : tensor<2x3xf32>
    %dw = train.matmul %x, %dy transpose_a : tensor<2x10xf32>, tensor<2x3xf32> -> tensor<10x3xf32>
    %db = train.reduce_sum %dy dims [0] : tensor<2x3xf32> -> tensor<3xf32>
    train.apply_gradient %dw to @w with @momentum : tensor<10x3xf32>
    train.apply_gradient %db to @b with @momentum : tensor<3xf32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: module @ranks8
// CHECK-SAME:    #dist.placement<cpu, [8]>
// FLAT-NEXT:     train.param @w param : tensor<10x3xf32> sharded flat over 0 -> tensor<4xf32>
// FLAT-NEXT:     train.param @w.momentum slot of @w : tensor<10x3xf32> sharded flat over 0 -> tensor<4xf32>
// FLAT-NEXT:     train.param @b param : tensor<3xf32> sharded flat over 0 -> tensor<1xf32>
// FLAT-NEXT:     train.param @b.momentum slot of @b : tensor<3xf32> sharded flat over 0 -> tensor<1xf32>
// DIM0-NEXT:     train.param @w param : tensor<10x3xf32> sharded dim0 over 0 -> tensor<2x3xf32>
// DIM0-NEXT:     train.param @w.momentum slot of @w : tensor<10x3xf32> sharded dim0 over 0 -> tensor<2x3xf32>
// DIM0-NEXT:     train.param @b param : tensor<3xf32> sharded dim0 over 0 -> tensor<1xf32>
// DIM0-NEXT:     train.param @b.momentum slot of @b : tensor<3xf32> sharded dim0 over 0 -> tensor<1xf32>
// CHECK:         func.func @step
// FLAT-NEXT:     %[[W:.+]] = train.load @w : tensor<4xf32>
// FLAT-NEXT:     %[[B:.+]] = train.load @b : tensor<1xf32>
// FLAT-NEXT:     %[[W_GATHERED:.+]] = dist.all_gather %[[W]] axis 0 dim 0 : tensor<4xf32> -> tensor<30xf32>
// FLAT-NEXT:     %[[W_FULL:.+]] = train.reshape %[[W_GATHERED]] : tensor<30xf32> -> tensor<10x3xf32>
// DIM0-NEXT:     %[[W:.+]] = train.load @w : tensor<2x3xf32>
// DIM0-NEXT:     %[[B:.+]] = train.load @b : tensor<1xf32>
// DIM0-NEXT:     %[[W_FULL:.+]] = dist.all_gather %[[W]] axis 0 dim 0 : tensor<2x3xf32> -> tensor<10x3xf32>
// CHECK-NEXT:    %[[XW:.+]] = train.matmul %{{.+}}, %[[W_FULL]]
// FLAT-NEXT:     %[[B_FULL:.+]] = dist.all_gather %[[B]] axis 0 dim 0 : tensor<1xf32> -> tensor<3xf32>
// DIM0-NEXT:     %[[B_FULL:.+]] = dist.all_gather %[[B]] axis 0 dim 0 : tensor<1xf32> -> tensor<3xf32>
// CHECK-NEXT:    train.bias_add %[[XW]], %[[B_FULL]]
// CHECK:         %[[DW:.+]] = train.matmul %{{.+}}, %{{.+}} transpose_a
// FLAT-NEXT:     %[[DW_FLAT:.+]] = train.reshape %[[DW]] : tensor<10x3xf32> -> tensor<30xf32>
// FLAT-NEXT:     %[[DW_SHARD:.+]] = dist.reduce_scatter mean %[[DW_FLAT]] axis 0 dim 0 : tensor<30xf32> -> tensor<4xf32>
// DIM0-NEXT:     %[[DW_SHARD:.+]] = dist.reduce_scatter mean %[[DW]] axis 0 dim 0 : tensor<10x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %[[DB:.+]] = train.reduce_sum
// FLAT-NEXT:     %[[DB_SHARD:.+]] = dist.reduce_scatter mean %[[DB]] axis 0 dim 0 : tensor<3xf32> -> tensor<1xf32>
// DIM0-NEXT:     %[[DB_SHARD:.+]] = dist.reduce_scatter mean %[[DB]] axis 0 dim 0 : tensor<3xf32> -> tensor<1xf32>
// CHECK-NEXT:    %[[W_SHARD:.+]] = train.load @w :
// CHECK-NEXT:    %[[W_BUF:.+]] = train.load @w.momentum :
// FLAT-NEXT:     %[[W_NEW:[^ ,]+]], %[[W_BUF_NEW:[^ ,]+]] = train.sgd_momentum %[[W_SHARD]], %[[DW_SHARD]], %[[W_BUF]] with @momentum : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
// DIM0-NEXT:     %[[W_NEW:[^ ,]+]], %[[W_BUF_NEW:[^ ,]+]] = train.sgd_momentum %[[W_SHARD]], %[[DW_SHARD]], %[[W_BUF]] with @momentum : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
// CHECK-NEXT:    train.store %[[W_BUF_NEW]] to @w.momentum
// CHECK-NEXT:    train.store %[[W_NEW]] to @w
// CHECK-NEXT:    %[[B_SHARD:.+]] = train.load @b :
// CHECK-NEXT:    %[[B_BUF:.+]] = train.load @b.momentum :
// CHECK-NEXT:    %[[B_NEW:[^ ,]+]], %[[B_BUF_NEW:[^ ,]+]] = train.sgd_momentum %[[B_SHARD]], %[[DB_SHARD]], %[[B_BUF]] with @momentum
// CHECK-NEXT:    train.store %[[B_BUF_NEW]] to @b.momentum
// CHECK-NEXT:    train.store %[[B_NEW]] to @b
// CHECK-NEXT:    dist.all_reduce mean
// CHECK-NEXT:    return

// -----

// More ranks than rows: 3x5 over 8 ranks is 1 row per rank under dim0 (five
// of the eight shards are all padding) and ceil(15 / 8) = 2 elements flat.

module @more_ranks_than_rows attributes {dist.placement = #dist.placement<cpu, [8]>} {
  train.param @w param : tensor<3x5xf32> init normal(0.0, 0.1)
  train.optimizer @sgd sgd lr 0.1
  func.func @step(%x: tensor<2x3xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<3x5xf32>
    %y = train.matmul %x, %w : tensor<2x3xf32>, tensor<3x5xf32> -> tensor<2x5xf32>
    %loss = train.reduce_sum %y dims [0, 1] : tensor<2x5xf32> -> tensor<f32>
    %dy = arith.constant dense<1.0> : tensor<2x5xf32>
    %dw = train.matmul %x, %dy transpose_a : tensor<2x3xf32>, tensor<2x5xf32> -> tensor<3x5xf32>
    train.apply_gradient %dw to @w with @sgd : tensor<3x5xf32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: module @more_ranks_than_rows
// FLAT-NEXT:     train.param @w param : tensor<3x5xf32> sharded flat over 0 -> tensor<2xf32>
// DIM0-NEXT:     train.param @w param : tensor<3x5xf32> sharded dim0 over 0 -> tensor<1x5xf32>
// CHECK:         %[[W:.+]] = train.load @w
// FLAT-NEXT:     %[[GATHERED:.+]] = dist.all_gather %[[W]] axis 0 dim 0 : tensor<2xf32> -> tensor<15xf32>
// FLAT-NEXT:     train.reshape %[[GATHERED]] : tensor<15xf32> -> tensor<3x5xf32>
// DIM0-NEXT:     dist.all_gather %[[W]] axis 0 dim 0 : tensor<1x5xf32> -> tensor<3x5xf32>
// CHECK:         %[[DW:.+]] = train.matmul %{{.+}}, %{{.+}} transpose_a
// FLAT-NEXT:     %[[DW_FLAT:.+]] = train.reshape %[[DW]] : tensor<3x5xf32> -> tensor<15xf32>
// FLAT-NEXT:     dist.reduce_scatter mean %[[DW_FLAT]] axis 0 dim 0 : tensor<15xf32> -> tensor<2xf32>
// DIM0-NEXT:     dist.reduce_scatter mean %[[DW]] axis 0 dim 0 : tensor<3x5xf32> -> tensor<1x5xf32>

// -----

// A rank-0 parameter always uses the flat layout, also under layout=dim0: it
// is reshaped to tensor<1xf32> and each of the 4 ranks holds 1 element (the
// single value plus 3 of padding); the gather is reshaped back to a scalar.

module @scalar attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @scale param : tensor<f32> init ones
  train.optimizer @adam adam lr 1.0e-3
  func.func @step(%x: tensor<2x3xf32>) -> tensor<f32> attributes {train.step} {
    %scale = train.load @scale : tensor<f32>
    %sum = train.reduce_sum %x dims [0, 1] : tensor<2x3xf32> -> tensor<f32>
    %loss = train.mul %sum, %scale : tensor<f32>
    train.apply_gradient %sum to @scale with @adam : tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: module @scalar
// CHECK-NEXT:    train.param @scale param : tensor<f32> sharded flat over 0 -> tensor<1xf32> init ones
// CHECK-NEXT:    train.param @scale.m slot of @scale : tensor<f32> sharded flat over 0 -> tensor<1xf32> init zeros
// CHECK-NEXT:    train.param @scale.v slot of @scale : tensor<f32> sharded flat over 0 -> tensor<1xf32> init zeros
// CHECK:         %[[SCALE:.+]] = train.load @scale : tensor<1xf32>
// CHECK-NEXT:    %[[SUM:.+]] = train.reduce_sum
// CHECK-NEXT:    %[[SUM_FLAT:.+]] = train.reshape %[[SUM]] : tensor<f32> -> tensor<1xf32>
// CHECK-NEXT:    %[[SHARD:.+]] = dist.reduce_scatter mean %[[SUM_FLAT]] axis 0 dim 0 : tensor<1xf32> -> tensor<1xf32>
// CHECK-NEXT:    %[[GATHERED:.+]] = dist.all_gather %[[SCALE]] axis 0 dim 0 : tensor<1xf32> -> tensor<1xf32>
// CHECK-NEXT:    %[[FULL:.+]] = train.reshape %[[GATHERED]] : tensor<1xf32> -> tensor<f32>
// CHECK-NEXT:    train.mul %[[SUM]], %[[FULL]] : tensor<f32>
// CHECK-NEXT:    %[[SCALE_SHARD:.+]] = train.load @scale : tensor<1xf32>
// CHECK-NEXT:    %[[M:.+]] = train.load @scale.m : tensor<1xf32>
// CHECK-NEXT:    %[[V:.+]] = train.load @scale.v : tensor<1xf32>
// CHECK-NEXT:    %[[NEW:[^ ,]+]], %{{[^ ,]+}}, %{{[^ ,]+}} = train.adam %[[SCALE_SHARD]], %[[SHARD]], %[[M]], %[[V]]
// CHECK:         train.store %[[NEW]] to @scale : tensor<1xf32>
