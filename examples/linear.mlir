// The step docs/passes.md walks through: one 10x3 weight trained with Adam
// on 4 ranks. Its shapes do not divide by 4, so every stage shows padding.
//
//   zero-opt --zero-pipeline="stage=3 report=text" examples/linear.mlir

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @w param : tensor<10x3xf32> init normal(0.0, 0.02)
  train.optimizer @adam adam lr 1.0e-03

  func.func @step(%x: tensor<8x10xf32>, %dy: tensor<8x3xf32>) -> tensor<f32>
      attributes {train.step} {
    %w = train.load @w : tensor<10x3xf32>
    %y = train.matmul %x, %w : tensor<8x10xf32>, tensor<10x3xf32> -> tensor<8x3xf32>
    %loss = train.reduce_mean %y dims [0, 1] : tensor<8x3xf32> -> tensor<f32>
    %dw = train.matmul %x, %dy transpose_a : tensor<8x10xf32>, tensor<8x3xf32> -> tensor<10x3xf32>
    train.apply_gradient %dw to @w with @adam : tensor<10x3xf32>
    return %loss : tensor<f32>
  }
}
