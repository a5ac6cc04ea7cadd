// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-autodiff{recompute=true})" | FileCheck %s
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-autodiff)" | FileCheck %s --check-prefix=KEEP

// Activation checkpointing: with recompute=true, the backward uses clones
// of the forward ops marked `train.recompute`, emitted just before the first
// backward use, instead of their forward results. Unmarked values
// (parameters, step inputs, unmarked ops) are used directly. Without the
// option the marks are ignored.

// One marked op: the backward recomputes %h = tanh(%v) just before its
// first use (the weight gradient of the matmul) and uses the clone for the
// tanh gradient too. The forward %h is used by the forward matmul only.
// The parameter loads are reused, not recomputed. The marks are consumed;
// the clone is marked `train.recomputed` (it runs the forward op again),
// which changes no result and lets the report count the model's FLOPs
// once.

// CHECK-LABEL: module @one_marked
// CHECK:         %[[V:.*]] = train.load @v
// CHECK-NEXT:    %[[W:.*]] = train.load @w
// CHECK-NEXT:    %[[H:.*]] = train.tanh %[[V]]
// CHECK-NEXT:    %[[Y:.*]] = train.matmul %[[H]], %[[W]] :
// CHECK:         %[[DY:.*]] = train.expand
// CHECK-NEXT:    %[[DH:.*]] = train.matmul %[[DY]], %[[W]] transpose_b
// CHECK-NEXT:    %[[H2:.*]] = train.tanh %[[V]] {train.recomputed} : tensor<4x4xf32>
// CHECK-NEXT:    %[[DW:.*]] = train.matmul %[[H2]], %[[DY]] transpose_a
// CHECK-NEXT:    %[[DV:.*]] = train.tanh_grad %[[H2]], %[[DH]]
// CHECK-NOT:     %[[H]]
// CHECK-NOT:     {{train\.recompute[,}]}}
// CHECK:         return

// Without recompute=true the backward reads the forward %h, and the
// marks are dropped all the same.
// KEEP-LABEL: module @one_marked
// KEEP:         %[[H:.*]] = train.tanh %{{.*}}
// KEEP:         train.matmul %[[H]], %{{.*}} transpose_a
// KEEP-NEXT:    train.tanh_grad %[[H]], %{{.*}}
// KEEP-NEXT:    train.apply_gradient
module @one_marked {
  train.param @w param : tensor<4x4xf32> init normal(0.0, 0.02)
  train.param @v param : tensor<4x4xf32> init normal(0.0, 0.02)
  train.optimizer @sgd sgd lr 1.0e-01

  func.func @step() -> tensor<f32> attributes {train.step} {
    %v = train.load @v : tensor<4x4xf32>
    %w = train.load @w : tensor<4x4xf32>
    %h = train.tanh %v {train.recompute} : tensor<4x4xf32>
    %y = train.matmul %h, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    %loss = train.reduce_sum %y dims [0, 1] : tensor<4x4xf32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A chain of marked ops between an unmarked input %x and an unmarked
// output %out, like a transformer block: the backward needs %b (for
// tanh_grad) and %a (for relu_grad). Recomputing %b clones its marked
// operand %a first, from the step input %x used directly; the later use of
// %a shares that clone. The unmarked %out is used directly.

// CHECK-LABEL: module @chain
// CHECK:         func.func @step(%[[X:.*]]: tensor<4x4xf32>)
// CHECK-NEXT:    %[[W:.*]] = train.load @w
// CHECK-NEXT:    %[[A:.*]] = train.mul %[[X]], %[[W]] :
// CHECK-NEXT:    %[[R:.*]] = train.relu %[[A]]
// CHECK-NEXT:    %[[B:.*]] = train.tanh %[[R]]
// CHECK-NEXT:    %[[OUT:.*]] = train.mul %[[B]], %[[B]] :
// CHECK-NEXT:    %[[E:.*]] = train.exp %[[OUT]] :
// CHECK:         train.mul %{{.*}}, %[[E]]
// CHECK-NEXT:    %[[A2:.*]] = train.mul %[[X]], %[[W]] {train.recomputed} :
// CHECK-NEXT:    %[[R2:.*]] = train.relu %[[A2]] {train.recomputed} :
// CHECK-NEXT:    %[[B2:.*]] = train.tanh %[[R2]] {train.recomputed} :
// CHECK:         train.tanh_grad %[[B2]]
// CHECK:         train.relu_grad %[[A2]]
// CHECK-NOT:     train.relu_grad %[[A]]
module @chain {
  train.param @w param : tensor<4x4xf32> init normal(0.0, 0.02)
  train.optimizer @sgd sgd lr 1.0e-01

  func.func @step(%x: tensor<4x4xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<4x4xf32>
    %a = train.mul %x, %w {train.recompute} : tensor<4x4xf32>
    %r = train.relu %a {train.recompute} : tensor<4x4xf32>
    %b = train.tanh %r {train.recompute} : tensor<4x4xf32>
    %out = train.mul %b, %b : tensor<4x4xf32>
    %e = train.exp %out : tensor<4x4xf32>
    %loss = train.reduce_sum %e dims [0, 1] : tensor<4x4xf32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}

