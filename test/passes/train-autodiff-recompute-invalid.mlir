// RUN: zero-opt %s -split-input-file -verify-diagnostics --pass-pipeline="builtin.module(train-autodiff{recompute=true})"

// Only side-effect-free ops can be recomputed: reading a parameter again
// could see another value, so a marked train.load is an error with
// recompute=true.

module @marked_load {
  train.param @w param : tensor<4xf32> init zeros
  train.optimizer @sgd sgd lr 1.0e-01

  func.func @step() -> tensor<f32> attributes {train.step} {
    // expected-error @+1 {{'train.load' op is marked train.recompute but reads or writes state; train-autodiff recompute=true recomputes side-effect-free ops only, remove the mark}}
    %w = train.load @w {train.recompute} : tensor<4xf32>
    %loss = train.reduce_sum %w dims [0] : tensor<4xf32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// The mark is a unit attribute.

module @valued_mark {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'train.recompute' is a unit attribute and takes no value}}
    %y = train.tanh %x {train.recompute = 1 : i64} : tensor<4xf32>
    return %y : tensor<4xf32>
  }
}
