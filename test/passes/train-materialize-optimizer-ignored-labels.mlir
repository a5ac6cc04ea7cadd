// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-materialize-optimizer{accumulate-steps=2})" -verify-diagnostics | FileCheck %s --check-prefix=ACC
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-materialize-optimizer{accumulate-steps=1})" | FileCheck %s

// A loss that ignores labels divides by the labels it keeps. Under
// accumulation a micro-step sees only its micro-batch, yet PyTorch's mean is
// over the real labels of the whole step: dividing by each micro-batch's own
// count would weigh the micro-batches equally. So the count becomes an input
// of the step, `train.label_count`, which the runtime fills before the first
// micro-step from every micro-batch of the step (the labels of argument 1 in
// the box [begin, end): here the causal-LM shift drops position 0), divided
// by the micro-batches. Without accumulation the count stays an op.

// ACC-LABEL: func.func @step
// ACC-SAME:    %[[COUNT:[a-z0-9]+]]: tensor<f32> {train.label_count = {begin = array<i64: 0, 1>, end = array<i64: 4, 5>, ignore_index = -100 : i64, labels = 1 : i64}}
// ACC-NOT:     train.count_labels
// ACC:         train.softmax_cross_entropy %{{.*}}, %{{.*}} count %[[COUNT]]
// ACC:         train.softmax_cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} count %[[COUNT]]
// ACC-LABEL: func.func @step_apply

// CHECK-LABEL: func.func @step
// CHECK:         train.count_labels
// CHECK:         train.sgd
module @ignored_labels {
  train.param @w param : tensor<6x3xf32> init normal(0.0, 0.02)
  train.optimizer @sgd sgd lr 1.0e-01
  func.func @step(%x: tensor<16x6xf32>, %ids: tensor<4x5xi32>) -> tensor<f32>
      attributes {train.step} {
    %shifted = train.slice %ids dim 1 offset 1 : tensor<4x5xi32> -> tensor<4x4xi32>
    %labels = train.reshape %shifted : tensor<4x4xi32> -> tensor<16xi32>
    %count = train.count_labels %labels {ignore_index = -100 : i64} : tensor<16xi32> -> tensor<f32>
    %w = train.load @w : tensor<6x3xf32>
    %logits = train.matmul %x, %w : tensor<16x6xf32>, tensor<6x3xf32> -> tensor<16x3xf32>
    %loss = train.softmax_cross_entropy %logits, %labels count %count {ignore_index = -100 : i64} : tensor<16x3xf32>, tensor<16xi32> -> tensor<f32>
    %one = arith.constant dense<1.0> : tensor<f32>
    %dlogits = train.softmax_cross_entropy_grad %logits, %labels, %one count %count {ignore_index = -100 : i64} : tensor<16x3xf32>, tensor<16xi32>
    %dw = train.matmul %x, %dlogits transpose_a : tensor<16x6xf32>, tensor<16x3xf32> -> tensor<6x3xf32>
    train.apply_gradient %dw to @w with @sgd : tensor<6x3xf32>
    return %loss : tensor<f32>
  }
}

// -----

// Labels the step computes otherwise (here a slice of a reshape of the
// input, which is no box of it) cannot be counted from the micro-batches
// before the step runs: refused under accumulation.

// CHECK-LABEL: func.func @step
// CHECK:         train.count_labels
module @computed_labels {
  train.param @w param : tensor<6x3xf32> init normal(0.0, 0.02)
  train.optimizer @sgd sgd lr 1.0e-01
  func.func @step(%x: tensor<3x6xf32>, %ids: tensor<2x2xi32>) -> tensor<f32>
      attributes {train.step} {
    %flat = train.reshape %ids : tensor<2x2xi32> -> tensor<4xi32>
    %labels = train.slice %flat dim 0 offset 1 : tensor<4xi32> -> tensor<3xi32>
    // expected-error @+1 {{'train.count_labels' op counts labels computed within the step; with accumulate-steps=2 the count of the whole step is taken from its micro-batches before the first, so the labels must be an input of the step or slices of one}}
    %count = train.count_labels %labels {ignore_index = -100 : i64} : tensor<3xi32> -> tensor<f32>
    %w = train.load @w : tensor<6x3xf32>
    %logits = train.matmul %x, %w : tensor<3x6xf32>, tensor<6x3xf32> -> tensor<3x3xf32>
    %loss = train.softmax_cross_entropy %logits, %labels count %count {ignore_index = -100 : i64} : tensor<3x3xf32>, tensor<3xi32> -> tensor<f32>
    %one = arith.constant dense<1.0> : tensor<f32>
    %dlogits = train.softmax_cross_entropy_grad %logits, %labels, %one count %count {ignore_index = -100 : i64} : tensor<3x3xf32>, tensor<3xi32>
    %dw = train.matmul %x, %dlogits transpose_a : tensor<3x6xf32>, tensor<3x3xf32> -> tensor<6x3xf32>
    train.apply_gradient %dw to @w with @sgd : tensor<6x3xf32>
    return %loss : tensor<f32>
  }
}
