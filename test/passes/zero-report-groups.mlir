// RUN: zero-opt %s --pass-pipeline="builtin.module(zero-pipeline{stage=2 ranks=2 report=text report-output=-})" 2>&1 >/dev/null | FileCheck %s

// Parameter groups in the report: the biases are updated by their own
// AdamW without weight decay (`with @adamw.no_decay`), the weights by the
// default one. The report lists each optimizer with the parameters and
// elements it updates, its learning rate and its weight decay; the memory
// and traffic figures are those of one optimizer (the slots do not depend
// on the group).

// CHECK:      Parameter groups (each its own optimizer):
// CHECK-NEXT:   @adamw 2 parameters 96 elements lr 0.0003 weight decay 0.1
// CHECK-NEXT:   @adamw.no_decay 2 parameters 12 elements lr 0.0003 weight decay 0
// CHECK-NEXT: Formula (P=4, G=4, K=8, Ψ=108, N=2):
module attributes {dist.placement = #dist.placement<cpu, [1]>} {
  train.param @fc1.w param : tensor<8x8xf32> init normal(0.0, 0.02)
  train.param @fc1.b param : tensor<8xf32> init zeros with @adamw.no_decay
  train.param @fc2.w param : tensor<8x4xf32> init normal(0.0, 0.02)
  train.param @fc2.b param : tensor<4xf32> init zeros with @adamw.no_decay
  train.optimizer @adamw adamw lr 3.0e-04 betas(0.9, 0.95) eps 1.0e-08 weight_decay 0.1
  train.optimizer @adamw.no_decay adamw lr 3.0e-04 betas(0.9, 0.95) eps 1.0e-08 weight_decay 0.0

  func.func @step(%x: tensor<4x8xf32>, %labels: tensor<4xi32>) -> tensor<f32> attributes {train.step} {
    %w1 = train.load @fc1.w : tensor<8x8xf32>
    %b1 = train.load @fc1.b : tensor<8xf32>
    %w2 = train.load @fc2.w : tensor<8x4xf32>
    %b2 = train.load @fc2.b : tensor<4xf32>
    %h = train.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %hb = train.bias_add %h, %b1 : tensor<4x8xf32>, tensor<8xf32>
    %a = train.relu %hb : tensor<4x8xf32>
    %y = train.matmul %a, %w2 : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
    %yb = train.bias_add %y, %b2 : tensor<4x4xf32>, tensor<4xf32>
    %loss = train.softmax_cross_entropy %yb, %labels : tensor<4x4xf32>, tensor<4xi32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}
