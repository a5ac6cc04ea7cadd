// RUN: not zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=3})" --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s
// RUN: not zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=1})" --mlir-print-op-on-diagnostic=false 2>&1 | FileCheck %s

// State touched by a function that is not a step function cannot be
// rewritten consistently; zero-shard says so instead of emitting loads of
// the wrong type.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @e frozen : tensor<4x4xf32> init ones
  func.func @helper(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    %e = train.load @e : tensor<4x4xf32>
    %t = train.matmul %x, %e : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    return %t : tensor<2x4xf32>
  }
  func.func @calls_helper(%x: tensor<2x4xf32>) -> tensor<f32> attributes {train.step} {
    %h = func.call @helper(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %loss = train.reduce_sum %h dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// CHECK: error: 'train.load' op reads or writes training state outside the step functions; zero-shard rewrites state only in functions marked 'train.step' or 'train.apply_step' (inline helpers with --inline first)
