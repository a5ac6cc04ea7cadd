// RUN: zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=1 layout=dim0})" | FileCheck %s --check-prefix=STAGE1
// RUN: zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=2 layout=flat})" | FileCheck %s --check-prefix=STAGE2
// RUN: zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=3 layout=dim0})" | FileCheck %s --check-prefix=STAGE3

// zero-shard only looks at persistent state, gradients and collectives, so
// a step whose compute is upstream linalg / tensor / arith is sharded the
// same way: the forward linalg.matmul and the backward
// linalg.matmul_transpose_b read the (gathered) weight, the gradient comes
// from linalg.matmul_transpose_a. 6x4 over 4 ranks: dim0 shards of 2 rows
// (8 rows with padding), flat shards of 6 elements (24 split evenly).

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @w param : tensor<6x4xf32> init uniform(-0.25, 0.25)
  train.optimizer @sgd sgd lr 0.1
  func.func @step(%x: tensor<8x6xf32>, %dy: tensor<8x4xf32>) -> tensor<8x4xf32> attributes {train.step} {
    %w = train.load @w : tensor<6x4xf32>
    %zero = arith.constant 0.0 : f32
    %empty = tensor.empty() : tensor<8x4xf32>
    %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<8x4xf32>) -> tensor<8x4xf32>
    %y = linalg.matmul ins(%x, %w : tensor<8x6xf32>, tensor<6x4xf32>) outs(%init : tensor<8x4xf32>) -> tensor<8x4xf32>
    %dx_empty = tensor.empty() : tensor<8x6xf32>
    %dx = linalg.matmul_transpose_b ins(%dy, %w : tensor<8x4xf32>, tensor<6x4xf32>) outs(%dx_empty : tensor<8x6xf32>) -> tensor<8x6xf32>
    %dw_empty = tensor.empty() : tensor<6x4xf32>
    %dw = linalg.matmul_transpose_a ins(%x, %dy : tensor<8x6xf32>, tensor<8x4xf32>) outs(%dw_empty : tensor<6x4xf32>) -> tensor<6x4xf32>
    train.apply_gradient %dw to @w with @sgd : tensor<6x4xf32>
    return %y : tensor<8x4xf32>
  }
}

// STAGE1-LABEL: func.func @step
// STAGE1:         %[[W:.+]] = train.load @w : tensor<6x4xf32>
// STAGE1:         linalg.matmul ins(%{{.+}}, %[[W]] : tensor<8x6xf32>, tensor<6x4xf32>)
// STAGE1:         linalg.matmul_transpose_b ins(%{{.+}}, %[[W]] : tensor<8x4xf32>, tensor<6x4xf32>)
// STAGE1:         %[[DW:.+]] = linalg.matmul_transpose_a
// STAGE1-NEXT:    %[[SHARD:.+]] = dist.reduce_scatter mean %[[DW]] axis 0 dim 0 : tensor<6x4xf32> -> tensor<2x4xf32>
// STAGE1-NEXT:    %[[W_FULL:.+]] = train.load @w : tensor<6x4xf32>
// STAGE1-NEXT:    %[[SLICE:.+]] = dist.slice %[[W_FULL]] axis 0 dim 0 : tensor<6x4xf32> -> tensor<2x4xf32>
// STAGE1-NEXT:    %[[NEW:.+]] = train.sgd %[[SLICE]], %[[SHARD]] with @sgd : tensor<2x4xf32>, tensor<2x4xf32>
// STAGE1-NEXT:    %[[GATHERED:.+]] = dist.all_gather %[[NEW]] axis 0 dim 0 : tensor<2x4xf32> -> tensor<6x4xf32>
// STAGE1-NEXT:    train.store %[[GATHERED]] to @w : tensor<6x4xf32>
// STAGE1-NEXT:    return %{{.+}} : tensor<8x4xf32>

// STAGE2-LABEL: func.func @step
// STAGE2:         %[[DW:.+]] = linalg.matmul_transpose_a
// STAGE2-NEXT:    %[[DW_FLAT:.+]] = train.reshape %[[DW]] : tensor<6x4xf32> -> tensor<24xf32>
// STAGE2-NEXT:    %[[SHARD:.+]] = dist.reduce_scatter mean %[[DW_FLAT]] axis 0 dim 0 : tensor<24xf32> -> tensor<6xf32>
// STAGE2-NEXT:    %[[W_FULL:.+]] = train.load @w : tensor<6x4xf32>
// STAGE2-NEXT:    %[[W_FLAT:.+]] = train.reshape %[[W_FULL]] : tensor<6x4xf32> -> tensor<24xf32>
// STAGE2-NEXT:    %[[SLICE:.+]] = dist.slice %[[W_FLAT]] axis 0 dim 0 : tensor<24xf32> -> tensor<6xf32>
// STAGE2-NEXT:    %[[NEW:.+]] = train.sgd %[[SLICE]], %[[SHARD]] with @sgd : tensor<6xf32>, tensor<6xf32>
// STAGE2-NEXT:    %[[GATHERED:.+]] = dist.all_gather %[[NEW]] axis 0 dim 0 : tensor<6xf32> -> tensor<24xf32>
// STAGE2-NEXT:    %[[W_NEW:.+]] = train.reshape %[[GATHERED]] : tensor<24xf32> -> tensor<6x4xf32>
// STAGE2-NEXT:    train.store %[[W_NEW]] to @w : tensor<6x4xf32>
// STAGE2-NEXT:    return

// STAGE3-LABEL: train.param @w param : tensor<6x4xf32> sharded dim0 over 0 -> tensor<2x4xf32>
// STAGE3-LABEL: func.func @step
// STAGE3-SAME:    (%[[X:[^:]+]]: tensor<8x6xf32> {{.*}}, %[[DY:[^:]+]]: tensor<8x4xf32>
// STAGE3-NEXT:    %[[W:.+]] = train.load @w : tensor<2x4xf32>
// STAGE3-NEXT:    %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// STAGE3-NEXT:    %[[EMPTY:.+]] = tensor.empty() : tensor<8x4xf32>
// STAGE3-NEXT:    %[[INIT:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] : tensor<8x4xf32>)
// STAGE3-NEXT:    %[[W_FWD:.+]] = dist.all_gather %[[W]] axis 0 dim 0 : tensor<2x4xf32> -> tensor<6x4xf32>
// STAGE3-NEXT:    %[[Y:.+]] = linalg.matmul ins(%[[X]], %[[W_FWD]] : tensor<8x6xf32>, tensor<6x4xf32>) outs(%[[INIT]] : tensor<8x4xf32>)
// STAGE3-NEXT:    tensor.empty() : tensor<8x6xf32>
// STAGE3-NEXT:    %[[W_BWD:.+]] = dist.all_gather %[[W]] axis 0 dim 0 : tensor<2x4xf32> -> tensor<6x4xf32>
// STAGE3-NEXT:    linalg.matmul_transpose_b ins(%[[DY]], %[[W_BWD]] : tensor<8x4xf32>, tensor<6x4xf32>)
// STAGE3-NEXT:    tensor.empty() : tensor<6x4xf32>
// STAGE3-NEXT:    %[[DW:.+]] = linalg.matmul_transpose_a ins(%[[X]], %[[DY]] : tensor<8x6xf32>, tensor<8x4xf32>)
// STAGE3-NEXT:    %[[SHARD:.+]] = dist.reduce_scatter mean %[[DW]] axis 0 dim 0 : tensor<6x4xf32> -> tensor<2x4xf32>
// STAGE3-NEXT:    %[[W_SHARD:.+]] = train.load @w : tensor<2x4xf32>
// STAGE3-NEXT:    %[[NEW:.+]] = train.sgd %[[W_SHARD]], %[[SHARD]] with @sgd : tensor<2x4xf32>, tensor<2x4xf32>
// STAGE3-NEXT:    train.store %[[NEW]] to @w : tensor<2x4xf32>
// STAGE3-NEXT:    return %[[Y]] : tensor<8x4xf32>
