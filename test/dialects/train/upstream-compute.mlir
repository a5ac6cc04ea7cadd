// RUN: zero-opt %s | zero-opt | FileCheck %s

// The training state and updates do not care what the compute is written in:
// here the forward and backward of a linear layer are upstream linalg and
// arith ops, and only the persistent state is in the train dialect.
module {
  train.param @w param : tensor<16x4xf32> init uniform(-0.25, 0.25)
  train.optimizer @sgd sgd lr 1.0e-01

  // CHECK-LABEL: func.func @step
  // CHECK: %[[W:.*]] = train.load @w : tensor<16x4xf32>
  // CHECK: linalg.matmul ins(%{{.*}}, %[[W]] : tensor<8x16xf32>, tensor<16x4xf32>)
  // CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<16x8xf32>, tensor<8x4xf32>)
  // CHECK: train.apply_gradient %{{.*}} to @w with @sgd : tensor<16x4xf32>
  func.func @step(%x: tensor<8x16xf32>, %dy: tensor<8x4xf32>) -> tensor<8x4xf32>
      attributes {train.step} {
    %w = train.load @w : tensor<16x4xf32>
    %zero = arith.constant 0.0 : f32
    %empty = tensor.empty() : tensor<8x4xf32>
    %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<8x4xf32>) -> tensor<8x4xf32>
    %y = linalg.matmul ins(%x, %w : tensor<8x16xf32>, tensor<16x4xf32>)
                       outs(%init : tensor<8x4xf32>) -> tensor<8x4xf32>
    %xt_empty = tensor.empty() : tensor<16x8xf32>
    %xt = linalg.transpose ins(%x : tensor<8x16xf32>) outs(%xt_empty : tensor<16x8xf32>) permutation = [1, 0]
    %dw_empty = tensor.empty() : tensor<16x4xf32>
    %dw_init = linalg.fill ins(%zero : f32) outs(%dw_empty : tensor<16x4xf32>) -> tensor<16x4xf32>
    %dw = linalg.matmul ins(%xt, %dy : tensor<16x8xf32>, tensor<8x4xf32>)
                        outs(%dw_init : tensor<16x4xf32>) -> tensor<16x4xf32>
    train.apply_gradient %dw to @w with @sgd : tensor<16x4xf32>
    return %y : tensor<8x4xf32>
  }
}
