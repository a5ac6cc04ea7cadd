// RUN: zero-opt %s --pass-pipeline="builtin.module(train-autodiff{optimizer=fine})" | FileCheck %s
// RUN: not zero-opt %s --pass-pipeline="builtin.module(train-autodiff{optimizer=missing})" 2>&1 | FileCheck %s --check-prefix=MISSING

// With several train.optimizer declarations, optimizer=NAME picks the one
// every generated apply_gradient uses.

// CHECK-LABEL: module @two_optimizers
// CHECK:         train.apply_gradient %{{.*}} to @w with @fine : tensor<3xf32>
// CHECK-NOT:     train.apply_gradient
// CHECK-NOT:     train.minimize

// An optimizer name the module does not declare is an error.
// MISSING: error: train-autodiff: optimizer=missing names no train.optimizer in the module
module @two_optimizers {
  train.param @w param : tensor<3xf32> init zeros
  train.optimizer @coarse sgd lr 1.0e-01
  train.optimizer @fine adamw lr 1.0e-04

  func.func @step(%x: tensor<3xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<3xf32>
    %y = train.mul %x, %w : tensor<3xf32>
    %loss = train.reduce_sum %y dims [0] : tensor<3xf32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}
