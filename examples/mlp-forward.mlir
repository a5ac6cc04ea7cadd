// The MLP step of examples/mlp.mlir with only its forward pass: 784 -> 128
// (ReLU) -> 10, softmax cross-entropy, batch of 32, Adam. `train.minimize`
// names the loss; `train-autodiff` generates the backward and the
// `train.apply_gradient`s that mlp.mlir writes out by hand, and the two
// train to the same losses and parameters, bit for bit
// (test/e2e/autodiff-mlp.test).
//
//   zero-opt --train-autodiff examples/mlp-forward.mlir

module attributes {dist.placement = #dist.placement<cpu, [1]>} {
  train.param @fc1.w param : tensor<784x128xf32> init normal(0.0, 0.036)
  train.param @fc1.b param : tensor<128xf32> init zeros
  train.param @fc2.w param : tensor<128x10xf32> init normal(0.0, 0.088)
  train.param @fc2.b param : tensor<10xf32> init zeros

  train.optimizer @adam adam lr 1.0e-03 betas(0.9, 0.999) eps 1.0e-08

  func.func @step(%x: tensor<32x784xf32>, %labels: tensor<32xi32>) -> tensor<f32>
      attributes {train.step} {
    %w1 = train.load @fc1.w : tensor<784x128xf32>
    %b1 = train.load @fc1.b : tensor<128xf32>
    %w2 = train.load @fc2.w : tensor<128x10xf32>
    %b2 = train.load @fc2.b : tensor<10xf32>
    %xw1 = train.matmul %x, %w1 : tensor<32x784xf32>, tensor<784x128xf32> -> tensor<32x128xf32>
    %pre = train.bias_add %xw1, %b1 : tensor<32x128xf32>, tensor<128xf32>
    %h = train.relu %pre : tensor<32x128xf32>
    %hw2 = train.matmul %h, %w2 : tensor<32x128xf32>, tensor<128x10xf32> -> tensor<32x10xf32>
    %logits = train.bias_add %hw2, %b2 : tensor<32x10xf32>, tensor<10xf32>
    %loss = train.softmax_cross_entropy %logits, %labels : tensor<32x10xf32>, tensor<32xi32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}
