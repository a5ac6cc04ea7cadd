// RUN: zero-opt %s -split-input-file -verify-diagnostics --pass-pipeline="builtin.module(dist-tensor-parallel{tp=2})"
// RUN: not zero-opt %s -split-input-file --pass-pipeline="builtin.module(dist-tensor-parallel{tp=0})" 2>&1 | FileCheck %s --check-prefix=TP0

// What dist-tensor-parallel refuses, each naming the parameter or the op and
// what would work instead. Tensor-parallel shards are exact: a dimension
// that does not divide by tp is refused, never padded or replicated.

// TP0: error: dist-tensor-parallel: tp must be at least 1, got 0

module {
  // expected-error @+1 {{plans S(1) over tp=2, but dimension 1 of 'tensor<6x3xf32>' (3) does not divide by 2; tensor-parallel shards are exact}}
  train.param @w param : tensor<6x3xf32> init zeros {dist.sbp = #dist.sbp<[S(1)]>}
  train.optimizer @sgd sgd lr 1.0e-01
  func.func @step(%x: tensor<4x6xf32>) -> tensor<4x3xf32> attributes {train.step} {
    %w = train.load @w : tensor<6x3xf32>
    %y = train.matmul %x, %w : tensor<4x6xf32>, tensor<6x3xf32> -> tensor<4x3xf32>
    return %y : tensor<4x3xf32>
  }
}

// -----

module {
  // expected-error @+1 {{plans S(2), but 'tensor<6x4xf32>' has 2 dimension(s)}}
  train.param @w param : tensor<6x4xf32> init zeros {dist.sbp = #dist.sbp<[S(2)]>}
  func.func @step(%x: tensor<4x6xf32>) -> tensor<4x4xf32> attributes {train.step} {
    %w = train.load @w : tensor<6x4xf32>
    %y = train.matmul %x, %w : tensor<4x6xf32>, tensor<6x4xf32> -> tensor<4x4xf32>
    return %y : tensor<4x4xf32>
  }
}

// -----

module {
  train.param @w param : tensor<6x4xf32> init zeros {dist.sbp = #dist.sbp<[S(1)]>}
  // expected-error @+1 {{has its own tensor-parallel plan; a master copy, slot or accumulator is split as its parameter @w is: drop 'dist.sbp'}}
  train.param @w.m slot of @w : tensor<6x4xf32> init zeros {dist.sbp = #dist.sbp<[S(0)]>}
  func.func @step(%x: tensor<4x6xf32>) -> tensor<4x4xf32> attributes {train.step} {
    %w = train.load @w : tensor<6x4xf32>
    %y = train.matmul %x, %w : tensor<4x6xf32>, tensor<6x4xf32> -> tensor<4x4xf32>
    return %y : tensor<4x4xf32>
  }
}

// -----

// expected-error @+1 {{dist-tensor-parallel: the module is already data parallel; run dist-tensor-parallel before dist-data-parallel, which puts the data-parallel axes in front of the tensor-parallel one}}
module attributes {dist.placement = #dist.placement<cpu, [2]>, dist.zero_stage = 0 : i64} {
  func.func @step(%x: tensor<4x6xf32>) -> tensor<4x6xf32> attributes {train.step} {
    return %x : tensor<4x6xf32>
  }
}

// -----

// expected-error @+1 {{dist-tensor-parallel: the module is placed on #dist.placement<cpu, [4]>; tensor parallelism starts from a single-device step (#dist.placement<cpu, [1]> or none)}}
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @step(%x: tensor<4x6xf32>) -> tensor<4x6xf32> attributes {train.step} {
    return %x : tensor<4x6xf32>
  }
}

// -----

module {
  train.param @w param : tensor<6x4xf32> init zeros {dist.sbp = #dist.sbp<[S(1)]>}
  // expected-error @+1 {{clips gradients by their global norm (clip_norm); with tensor parallelism the norm must count each split gradient's shards and each whole one once, which dist-tensor-parallel does not do yet: train with tp=1 or without clipping}}
  train.optimizer @sgd sgd lr 1.0e-01 clip_norm 1.0
  func.func @step(%x: tensor<4x6xf32>) -> tensor<4x4xf32> attributes {train.step} {
    %w = train.load @w : tensor<6x4xf32>
    %y = train.matmul %x, %w : tensor<4x6xf32>, tensor<6x4xf32> -> tensor<4x4xf32>
    return %y : tensor<4x4xf32>
  }
}

// -----

module {
  train.param @w param : tensor<6x4xf32> init zeros {dist.sbp = #dist.sbp<[S(1)]>}
  func.func @step(%x: tensor<4x6xf32>) -> tensor<4x4xf32> attributes {train.step} {
    %w = train.load @w : tensor<6x4xf32>
    // expected-error @+1 {{'func.call' op has no SBP signature, so dist-tensor-parallel cannot place it on the tensor-parallel ranks}}
    %y = func.call @helper(%x, %w) : (tensor<4x6xf32>, tensor<6x4xf32>) -> tensor<4x4xf32>
    return %y : tensor<4x4xf32>
  }
  func.func private @helper(%x: tensor<4x6xf32>, %w: tensor<6x4xf32>) -> tensor<4x4xf32> {
    %y = train.matmul %x, %w : tensor<4x6xf32>, tensor<6x4xf32> -> tensor<4x4xf32>
    return %y : tensor<4x4xf32>
  }
}
