// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(dist-data-parallel{mesh=2,4})" | FileCheck %s
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(dist-data-parallel)" | FileCheck %s --check-prefix=PLACED
// RUN: not zero-opt %s --pass-pipeline="builtin.module(dist-data-parallel{mesh=2,0})" 2>&1 | FileCheck %s --check-prefix=EXTENT
// RUN: not zero-opt %s --pass-pipeline="builtin.module(dist-data-parallel{mesh=2,4 ranks=4})" 2>&1 | FileCheck %s --check-prefix=COUNT

// dist-data-parallel{mesh=R,S} places the step on a two-level grid,
// `#dist.placement<cpu, [R, S]>`: axis 0 across nodes (R), axis 1 within a
// node (S ranks), ranks numbered node by node. The batch is split over both
// axes in rank order (`[S(0), S(0)]`), and every average is taken within
// the node first, then across nodes: `dist.all_reduce mean ... axis 1`
// followed by `axis 0`, so that the slow links carry one all-reduce of each
// gradient per node pair. A module already placed on a grid (PLACED) is
// parallelized on its own grid.

// The linear classifier of dist-data-parallel.mlir on 2 nodes of 4 ranks:
// each gradient and the loss are averaged over axis 1, then axis 0.

// CHECK-LABEL: module @mesh attributes {dist.placement = #dist.placement<cpu, [2, 4]>, dist.zero_stage = 0 : i64}
// CHECK:       func.func @step(
// CHECK-SAME:      %[[X:[a-z0-9]+]]: tensor<4x6xf32> {dist.sbp = #dist.sbp<[S(0), S(0)]>},
// CHECK-SAME:      %[[LABELS:[a-z0-9]+]]: tensor<4xi32> {dist.sbp = #dist.sbp<[S(0), S(0)]>},
// CHECK-SAME:      %[[SEED:[a-z0-9]+]]: tensor<f32>)
// CHECK:         %[[DW:.*]] = train.matmul %[[X]], %{{.*}} transpose_a
// CHECK-NEXT:    %[[DW_NODE:.*]] = dist.all_reduce mean %[[DW]] axis 1 : tensor<6x3xf32>
// CHECK-NEXT:    %[[DW_MEAN:.*]] = dist.all_reduce mean %[[DW_NODE]] axis 0 : tensor<6x3xf32>
// CHECK-NEXT:    %[[DB:.*]] = train.reduce_sum
// CHECK-NEXT:    %[[DB_NODE:.*]] = dist.all_reduce mean %[[DB]] axis 1 : tensor<3xf32>
// CHECK-NEXT:    %[[DB_MEAN:.*]] = dist.all_reduce mean %[[DB_NODE]] axis 0 : tensor<3xf32>
// CHECK-NEXT:    train.apply_gradient %[[DW_MEAN]] to @w with @sgd
// CHECK-NEXT:    train.apply_gradient %[[DB_MEAN]] to @b with @sgd
// CHECK-NEXT:    %[[LOSS_NODE:.*]] = dist.all_reduce mean %{{.*}} axis 1 : tensor<f32>
// CHECK-NEXT:    %[[LOSS_MEAN:.*]] = dist.all_reduce mean %[[LOSS_NODE]] axis 0 : tensor<f32>
// CHECK-NEXT:    return %[[LOSS_MEAN]] : tensor<f32>

// PLACED-LABEL: module @mesh attributes {dist.placement = #dist.placement<cpu, [2, 2]>, dist.zero_stage = 0 : i64}
// PLACED:         dist.all_reduce mean %{{.*}} axis 1
// PLACED-NEXT:    dist.all_reduce mean %{{.*}} axis 0

// EXTENT: error: dist-data-parallel: every extent of mesh must be at least 1, got 0
// COUNT: error: dist-data-parallel: ranks=4 but the mesh has 8 ranks
module @mesh attributes {dist.placement = #dist.placement<cpu, [2, 2]>} {
  train.param @w param : tensor<6x3xf32> init normal(0.0, 0.02)
  train.param @b param : tensor<3xf32> init zeros
  train.optimizer @sgd sgd lr 1.0e-01

  func.func @step(%x: tensor<4x6xf32>, %labels: tensor<4xi32>, %seed: tensor<f32>)
      -> tensor<f32> attributes {train.step} {
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
    return %loss : tensor<f32>
  }
}
