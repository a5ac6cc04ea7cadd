// RUN: zero-opt %s -verify-diagnostics --pass-pipeline="builtin.module(train-materialize-optimizer{accumulate-steps=2})"
// RUN: zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer{accumulate-steps=1})" | FileCheck %s

// Accumulating gradients over micro-batches of a loss that ignores labels
// is refused: each micro-step divides by its own batch's count and the
// micro-steps are averaged with equal weight, which is not PyTorch's mean
// over the real labels of the whole batch. Without accumulation the step
// is materialized as usual.

// CHECK-LABEL: func.func @step
// CHECK:         train.count_labels
// CHECK:         train.sgd
module @ignored_labels {
  train.param @w param : tensor<6x3xf32> init normal(0.0, 0.02)
  train.optimizer @sgd sgd lr 1.0e-01
  func.func @step(%x: tensor<4x6xf32>, %labels: tensor<4xi32>) -> tensor<f32>
      attributes {train.step} {
    // expected-error @+1 {{'train.count_labels' op is the denominator of a loss that ignores labels, and accumulate-steps=2 would weigh each micro-batch equally instead of by its real tokens; accumulate with labels that are never ignored, or train with accumulate-steps=1 and a larger batch}}
    %count = train.count_labels %labels {ignore_index = -100 : i64} : tensor<4xi32> -> tensor<f32>
    %w = train.load @w : tensor<6x3xf32>
    %logits = train.matmul %x, %w : tensor<4x6xf32>, tensor<6x3xf32> -> tensor<4x3xf32>
    %loss = train.softmax_cross_entropy %logits, %labels count %count {ignore_index = -100 : i64} : tensor<4x3xf32>, tensor<4xi32> -> tensor<f32>
    %one = arith.constant dense<1.0> : tensor<f32>
    %dlogits = train.softmax_cross_entropy_grad %logits, %labels, %one count %count {ignore_index = -100 : i64} : tensor<4x3xf32>, tensor<4xi32>
    %dw = train.matmul %x, %dlogits transpose_a : tensor<4x6xf32>, tensor<4x3xf32> -> tensor<6x3xf32>
    train.apply_gradient %dw to @w with @sgd : tensor<6x3xf32>
    return %loss : tensor<f32>
  }
}
