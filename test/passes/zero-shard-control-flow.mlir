// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=3})" | FileCheck %s --check-prefix=STAGE3
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=1})" | FileCheck %s --check-prefix=STAGE1

// Parameters read inside regions or after their update: the places where
// moving a gather or a store could change what the step computes.
// zero-shard-helper-function.mlir has state read outside the step.

// A parameter loaded inside an scf.if: at stage 3 its gather goes next to
// the load, inside the branch, not before the scf.if.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @e frozen : tensor<4x4xf32> init ones
  func.func @load_in_branch(%x: tensor<2x4xf32>, %p: i1) -> tensor<f32> attributes {train.step} {
    %h = scf.if %p -> (tensor<2x4xf32>) {
      %e = train.load @e : tensor<4x4xf32>
      %t = train.matmul %x, %e : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
      scf.yield %t : tensor<2x4xf32>
    } else {
      scf.yield %x : tensor<2x4xf32>
    }
    %loss = train.reduce_sum %h dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// STAGE3-LABEL: func.func @load_in_branch
// STAGE3:         scf.if
// STAGE3-NEXT:      %[[E:.*]] = train.load @e : tensor<8xf32>
// STAGE3-NEXT:      %[[G:.*]] = dist.all_gather %[[E]] axis 0 dim 0 : tensor<8xf32> -> tensor<16xf32>
// STAGE3-NEXT:      %[[R:.*]] = train.reshape %[[G]] : tensor<16xf32> -> tensor<4x4xf32>
// STAGE3-NEXT:      train.matmul %{{.*}}, %[[R]]
// STAGE1-LABEL: func.func @load_in_branch

// -----

// The step reads the parameter again after updating it: at stages 1 and 2
// the gather and store of the new value come before that read, so it sees
// the updated parameter, as it did before sharding.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<4xf32> init ones
  train.optimizer @sgd sgd lr 0.1
  func.func @read_after_update(%g: tensor<4xf32>) -> tensor<4xf32> attributes {train.step} {
    train.apply_gradient %g to @w with @sgd : tensor<4xf32>
    %w = train.load @w : tensor<4xf32>
    return %w : tensor<4xf32>
  }
}

// STAGE1-LABEL: func.func @read_after_update
// STAGE1:         %[[NEW:.*]] = train.sgd
// STAGE1-NEXT:    %[[FULL:.*]] = dist.all_gather %[[NEW]] axis 0 dim 0 : tensor<2xf32> -> tensor<4xf32>
// STAGE1-NEXT:    train.store %[[FULL]] to @w : tensor<4xf32>
// STAGE1-NEXT:    train.load @w : tensor<4xf32>
// STAGE3-LABEL: func.func @read_after_update
// STAGE3:         %[[NEW:.*]] = train.sgd
// STAGE3-NEXT:    train.store %[[NEW]] to @w : tensor<2xf32>

