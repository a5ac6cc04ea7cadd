// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-rebatch{factor=2})" -verify-diagnostics | FileCheck %s
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-rebatch{factor=2},zero-pipeline{stage=3 ranks=2 accumulate-steps=2})" -verify-diagnostics -o /dev/null
// RUN: not zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-rebatch{factor=4})" 2>&1 | FileCheck %s --check-prefix=INDIVISIBLE
// RUN: not zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-rebatch{factor=0})" 2>&1 | FileCheck %s --check-prefix=ZERO

// train-rebatch{factor=2} runs the step on half its rows, the micro-batch
// of twice the accumulation (zero-pipeline plans it as a way to fit a
// device): dimension 0 of each argument is halved, and of each value
// computed from one, through the reshape to [batch * seq, ...]; the splat
// constant added to the batch's rows is halved with it; the weight and the
// scalar loss keep their shapes. The rebatched step is a forward-only step
// the pipeline differentiates and plans (second RUN line).

// CHECK-LABEL: func.func @step(
// CHECK-SAME:      %{{.+}}: tensor<3x5x8xf32>, %{{.+}}: tensor<3x5xi32>) -> tensor<f32>
// CHECK:         train.reshape %{{.+}} : tensor<3x5x8xf32> -> tensor<15x8xf32>
// CHECK:         arith.constant dense<9.99999974E-6> : tensor<15x8xf32>
// CHECK:         train.add %{{.+}}, %{{.+}} : tensor<15x8xf32>
// CHECK:         train.matmul %{{.+}}, %{{.+}} : tensor<15x8xf32>, tensor<8x4xf32> -> tensor<15x4xf32>
// CHECK:         train.reshape %{{.+}} : tensor<3x5xi32> -> tensor<15xi32>
// CHECK:         train.softmax_cross_entropy %{{.+}}, %{{.+}} : tensor<15x4xf32>, tensor<15xi32> -> tensor<f32>
// CHECK:         train.minimize %{{.+}} : tensor<f32>

// INDIVISIBLE: error: train-rebatch: factor 4 does not divide the batch of {{6|4}}
// ZERO: error: train-rebatch: factor must be at least 1, got 0

module @tokens attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<8x4xf32> init normal(0.0, 0.1)
  train.optimizer @sgd sgd lr 0.1
  func.func @step(%x: tensor<6x5x8xf32>, %labels: tensor<6x5xi32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<8x4xf32>
    %flat = train.reshape %x : tensor<6x5x8xf32> -> tensor<30x8xf32>
    %eps = arith.constant dense<1.0e-5> : tensor<30x8xf32>
    %shifted = train.add %flat, %eps : tensor<30x8xf32>
    %logits = train.matmul %shifted, %w : tensor<30x8xf32>, tensor<8x4xf32> -> tensor<30x4xf32>
    %l = train.reshape %labels : tensor<6x5xi32> -> tensor<30xi32>
    %loss = train.softmax_cross_entropy %logits, %l : tensor<30x4xf32>, tensor<30xi32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A step that also returns a batch-shaped value (each row's logits) returns
// it rebatched: the function's type follows its return.

// CHECK-LABEL: func.func @step(
// CHECK-SAME:      %{{.+}}: tensor<2x8xf32>) -> (tensor<f32>, tensor<2x4xf32>)
// CHECK:         return %{{.+}}, %{{.+}} : tensor<f32>, tensor<2x4xf32>

module @rows attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<8x4xf32> init normal(0.0, 0.1)
  train.optimizer @sgd sgd lr 0.1
  func.func @step(%x: tensor<4x8xf32>) -> (tensor<f32>, tensor<4x4xf32>) attributes {train.step} {
    %w = train.load @w : tensor<8x4xf32>
    %y = train.matmul %x, %w : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
    %loss = train.reduce_mean %y dims [0, 1] : tensor<4x4xf32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss, %y : tensor<f32>, tensor<4x4xf32>
  }
}

// -----

// A reduction over the batch does not keep it in dimension 0: the step is
// not the same step on fewer rows, and the rewrite stops at the op, with
// its verifier's diagnostic.

module @batch_statistics {
  train.param @w param : tensor<8xf32> init zeros
  train.optimizer @sgd sgd lr 0.1
  func.func @step(%x: tensor<6x8xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<8xf32>
    // expected-error @+2 {{train-rebatch: this op does not keep the batch in dimension 0, so the step cannot run on 1/2 of its rows}}
    // expected-error @+1 {{'train.reduce_sum' op}}
    %mean = train.reduce_sum %x dims [0] : tensor<6x8xf32> -> tensor<8xf32>
    %y = train.mul %mean, %w : tensor<8xf32>
    %loss = train.reduce_sum %y dims [0] : tensor<8xf32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}
