// RUN: zero-opt %s -split-input-file -verify-diagnostics --pass-pipeline="builtin.module(train-materialize-optimizer)"

// The step clips all its gradients by one global norm, so the optimizers
// that clip must agree on the bound.
module {
  train.param @w param : tensor<4xf32> init zeros
  train.param @b param : tensor<2xf32> init zeros
  // expected-note @+1 {{the other optimizer}}
  train.optimizer @one sgd lr 0.1 clip_norm 1.0
  // expected-error @+1 {{clips with clip_norm 2.000000e+00, but another optimizer of the step clips with 1.000000e+00; the step clips all gradients by one global norm, so use one clip_norm}}
  train.optimizer @two sgd lr 0.1 clip_norm 2.0
  func.func @step(%dw: tensor<4xf32>, %db: tensor<2xf32>) attributes {train.step} {
    train.apply_gradient %dw to @w with @one : tensor<4xf32>
    train.apply_gradient %db to @b with @two : tensor<2xf32>
    return
  }
}
