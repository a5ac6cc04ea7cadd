// examples/mlp.mlir with a learning-rate schedule on its Adam: a linear
// warmup from 0 over 10 steps (step 1 takes lr / 10), then a cosine decay
// from lr 1e-3 to min_lr 1e-4 at step 30, and 1e-4 after it. Everything
// else is the example's. test/e2e/schedule.test trains it.
//
module attributes {dist.placement = #dist.placement<cpu, [1]>} {
  train.param @fc1.w param : tensor<784x128xf32> init normal(0.0, 0.036)
  train.param @fc1.b param : tensor<128xf32> init zeros
  train.param @fc2.w param : tensor<128x10xf32> init normal(0.0, 0.088)
  train.param @fc2.b param : tensor<10xf32> init zeros

  train.optimizer @adam adam lr 1.0e-03 betas(0.9, 0.999) eps 1.0e-08 schedule cosine warmup 10 total 30 min_lr 1.0e-04

  func.func @step(%x: tensor<32x784xf32>, %labels: tensor<32xi32>) -> tensor<f32>
      attributes {train.step} {
    // Forward.
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

    // Backward, seeded with dloss = 1.
    %one = arith.constant dense<1.0> : tensor<f32>
    %dlogits = train.softmax_cross_entropy_grad %logits, %labels, %one : tensor<32x10xf32>, tensor<32xi32>
    %dw2 = train.matmul %h, %dlogits transpose_a : tensor<32x128xf32>, tensor<32x10xf32> -> tensor<128x10xf32>
    %db2 = train.reduce_sum %dlogits dims [0] : tensor<32x10xf32> -> tensor<10xf32>
    %dh = train.matmul %dlogits, %w2 transpose_b : tensor<32x10xf32>, tensor<128x10xf32> -> tensor<32x128xf32>
    %dpre = train.relu_grad %pre, %dh : tensor<32x128xf32>
    %dw1 = train.matmul %x, %dpre transpose_a : tensor<32x784xf32>, tensor<32x128xf32> -> tensor<784x128xf32>
    %db1 = train.reduce_sum %dpre dims [0] : tensor<32x128xf32> -> tensor<128xf32>

    // Update.
    train.apply_gradient %dw1 to @fc1.w with @adam : tensor<784x128xf32>
    train.apply_gradient %db1 to @fc1.b with @adam : tensor<128xf32>
    train.apply_gradient %dw2 to @fc2.w with @adam : tensor<128x10xf32>
    train.apply_gradient %db2 to @fc2.b with @adam : tensor<10xf32>
    return %loss : tensor<f32>
  }
}
