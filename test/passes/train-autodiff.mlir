// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-autodiff)" | FileCheck %s

// train-autodiff replaces `train.minimize %loss` with the reverse-mode
// backward of the step, seeded with d loss = 1, and one
// `train.apply_gradient` per trainable parameter. Only values on a path from
// a trainable parameter to the loss are differentiated; gradients of a value
// used several times are summed with train.add in forward order.

// A linear layer and a mean: the gradient of the mean is scaled and
// expanded, the weight gradient is x^T dy, and the input %x (a step
// argument) gets no gradient.

// CHECK-LABEL: module @linear
// CHECK:         func.func @step(%[[X:.*]]: tensor<8x10xf32>)
// CHECK-NEXT:      %[[W:.*]] = train.load @w
// CHECK-NEXT:      %[[Y:.*]] = train.matmul %[[X]], %[[W]]
// CHECK-NEXT:      %[[LOSS:.*]] = train.reduce_mean %[[Y]] dims [0, 1]
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:      %[[S:.*]] = train.scale %[[ONE]] by 0.041666666666666664 : tensor<f32>
// CHECK-NEXT:      %[[DY:.*]] = train.expand %[[S]] dims [0, 1] : tensor<f32> -> tensor<8x3xf32>
// CHECK-NEXT:      %[[DW:.*]] = train.matmul %[[X]], %[[DY]] transpose_a : tensor<8x10xf32>, tensor<8x3xf32> -> tensor<10x3xf32>
// CHECK-NEXT:      train.apply_gradient %[[DW]] to @w with @adam : tensor<10x3xf32>
// CHECK-NEXT:      return %[[LOSS]]
// CHECK-NOT:     train.minimize
module @linear {
  train.param @w param : tensor<10x3xf32> init normal(0.0, 0.02)
  train.optimizer @adam adam lr 1.0e-03

  func.func @step(%x: tensor<8x10xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<10x3xf32>
    %y = train.matmul %x, %w : tensor<8x10xf32>, tensor<10x3xf32> -> tensor<8x3xf32>
    %loss = train.reduce_mean %y dims [0, 1] : tensor<8x3xf32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Fan-out: %h feeds three uses, whose gradients are summed in the order of
// the uses, ((d1 + d2) + d3), as a hand-written backward would; so are the
// three uses of the one load of @w, which gets one apply_gradient. The
// step input %x gets no gradient.

// CHECK-LABEL: module @fan_out
// CHECK:         %[[V:.*]] = train.load @v
// CHECK-NEXT:    %[[W:.*]] = train.load @w
// CHECK-NEXT:    %[[H:.*]] = train.tanh %[[V]]
// CHECK:         %[[DY:.*]] = train.expand
// CHECK-NEXT:    %[[DH3:.*]] = train.matmul %[[DY]], %[[W]] transpose_b
// CHECK-NEXT:    %[[DW3:.*]] = train.matmul %[[H]], %[[DY]] transpose_a
// CHECK-NEXT:    %[[DH2:.*]] = train.matmul %[[DY]], %[[W]] transpose_b
// CHECK-NEXT:    %[[DW2:.*]] = train.matmul %[[H]], %[[DY]] transpose_a
// CHECK-NEXT:    %[[DH1:.*]] = train.matmul %[[DY]], %[[W]] transpose_b
// CHECK-NEXT:    %[[DW1:.*]] = train.matmul %[[H]], %[[DY]] transpose_a
// CHECK-NEXT:    %[[DH12:.*]] = train.add %[[DH1]], %[[DH2]] : tensor<4x4xf32>
// CHECK-NEXT:    %[[DH:.*]] = train.add %[[DH12]], %[[DH3]] : tensor<4x4xf32>
// CHECK-NEXT:    %[[DV:.*]] = train.tanh_grad %[[H]], %[[DH]] : tensor<4x4xf32>
// CHECK-NEXT:    %[[DW12:.*]] = train.add %[[DW1]], %[[DW2]] : tensor<4x4xf32>
// CHECK-NEXT:    %[[DW:.*]] = train.add %[[DW12]], %[[DW3]] : tensor<4x4xf32>
// CHECK-NEXT:    train.apply_gradient %[[DV]] to @v with @sgd
// CHECK-NEXT:    train.apply_gradient %[[DW]] to @w with @sgd
// CHECK-NEXT:    return
module @fan_out {
  train.param @w param : tensor<4x4xf32> init normal(0.0, 0.02)
  train.param @v param : tensor<4x4xf32> init normal(0.0, 0.02)
  train.optimizer @sgd sgd lr 1.0e-01

  func.func @step(%x: tensor<4x4xf32>) -> tensor<f32> attributes {train.step} {
    %v = train.load @v : tensor<4x4xf32>
    %w = train.load @w : tensor<4x4xf32>
    %h = train.tanh %v : tensor<4x4xf32>
    %a = train.matmul %h, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    %b0 = train.matmul %h, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    %b = train.add %b0, %x : tensor<4x4xf32>
    %c = train.matmul %h, %w : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    %ab = train.add %a, %b : tensor<4x4xf32>
    %abc = train.add %ab, %c : tensor<4x4xf32>
    %loss = train.reduce_sum %abc dims [0, 1] : tensor<4x4xf32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A parameter loaded twice (a tied embedding and LM head): the gradients of
// both loads are summed into one apply_gradient. The integer ids and
// labels get no gradient: embedding_grad and the cross-entropy gradient take
// them as they are.

// CHECK-LABEL: module @tied
// CHECK:         %[[E:.*]] = train.load @wte
// CHECK:         %[[H:.*]] = train.load @wte
// CHECK:         %[[DLOGITS:.*]] = train.softmax_cross_entropy_grad %{{.*}}, %[[LABELS:.*]], %{{.*}} : tensor<6x8xf32>, tensor<6xi32>
// CHECK-NEXT:    %[[DX:.*]] = train.matmul %[[DLOGITS]], %[[H]] : tensor<6x8xf32>, tensor<8x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT:    %[[DHEAD:.*]] = train.matmul %[[DLOGITS]], %{{.*}} transpose_a : tensor<6x8xf32>, tensor<6x4xf32> -> tensor<8x4xf32>
// CHECK-NEXT:    %[[DEMBED:.*]] = train.embedding_grad %[[DX]], %[[IDS:.*]] : tensor<6x4xf32>, tensor<6xi32> -> tensor<8x4xf32>
// CHECK-NEXT:    %[[SUM:.*]] = train.add %[[DEMBED]], %[[DHEAD]] : tensor<8x4xf32>
// CHECK-NEXT:    train.apply_gradient %[[SUM]] to @wte with @adam : tensor<8x4xf32>
// CHECK-NEXT:    return
module @tied {
  train.param @wte param : tensor<8x4xf32> init normal(0.0, 0.02)
  train.optimizer @adam adam lr 1.0e-03

  func.func @step(%ids: tensor<6xi32>, %labels: tensor<6xi32>) -> tensor<f32> attributes {train.step} {
    %embed = train.load @wte : tensor<8x4xf32>
    %x = train.embedding %embed, %ids : tensor<8x4xf32>, tensor<6xi32> -> tensor<6x4xf32>
    %head = train.load @wte : tensor<8x4xf32>
    %logits = train.matmul %x, %head transpose_b : tensor<6x4xf32>, tensor<8x4xf32> -> tensor<6x8xf32>
    %loss = train.softmax_cross_entropy %logits, %labels : tensor<6x8xf32>, tensor<6xi32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A frozen parameter gets no gradient and no apply_gradient, and nothing
// below the lowest trainable parameter is differentiated: the first layer
// is frozen, so neither its weight gradient nor the relu and matmul
// gradients below the trainable @w2 are built: only dW2 remains.

// CHECK-LABEL: module @frozen
// CHECK:         %[[H:.*]] = train.relu
// CHECK:         %[[DY:.*]] = train.expand
// CHECK-NEXT:    %[[DW2:.*]] = train.matmul %[[H]], %[[DY]] transpose_a : tensor<2x4xf32>, tensor<2x3xf32> -> tensor<4x3xf32>
// CHECK-NEXT:    train.apply_gradient %[[DW2]] to @w2 with @sgd : tensor<4x3xf32>
// CHECK-NEXT:    return
module @frozen {
  train.param @w1 frozen : tensor<5x4xf32> init normal(0.0, 0.02)
  train.param @w2 param : tensor<4x3xf32> init normal(0.0, 0.02)
  train.optimizer @sgd sgd lr 1.0e-01

  func.func @step(%x: tensor<2x5xf32>) -> tensor<f32> attributes {train.step} {
    %w1 = train.load @w1 : tensor<5x4xf32>
    %w2 = train.load @w2 : tensor<4x3xf32>
    %a = train.matmul %x, %w1 : tensor<2x5xf32>, tensor<5x4xf32> -> tensor<2x4xf32>
    %h = train.relu %a : tensor<2x4xf32>
    %y = train.matmul %h, %w2 : tensor<2x4xf32>, tensor<4x3xf32> -> tensor<2x3xf32>
    %loss = train.reduce_sum %y dims [0, 1] : tensor<2x3xf32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A frozen layer between trainable ones passes the gradient through (its
// input gradient is built) without a weight gradient of its own. A
// trainable parameter the loss does not read, and an op whose result the
// loss does not need, get nothing.

// CHECK-LABEL: module @frozen_middle
// CHECK:         %[[DY:.*]] = train.expand
// CHECK-NEXT:    %[[DH:.*]] = train.matmul %[[DY]], %[[W2:.*]] transpose_b : tensor<2x3xf32>, tensor<4x3xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %[[DW1:.*]] = train.matmul %{{.*}}, %[[DH]] transpose_a : tensor<2x5xf32>, tensor<2x4xf32> -> tensor<5x4xf32>
// CHECK-NEXT:    train.apply_gradient %[[DW1]] to @w1 with @sgd : tensor<5x4xf32>
// CHECK-NEXT:    return
module @frozen_middle {
  train.param @w1 param : tensor<5x4xf32> init normal(0.0, 0.02)
  train.param @w2 frozen : tensor<4x3xf32> init normal(0.0, 0.02)
  train.param @unused param : tensor<3xf32> init zeros
  train.optimizer @sgd sgd lr 1.0e-01

  func.func @step(%x: tensor<2x5xf32>) -> (tensor<f32>, tensor<2x4xf32>) attributes {train.step} {
    %w1 = train.load @w1 : tensor<5x4xf32>
    %w2 = train.load @w2 : tensor<4x3xf32>
    %u = train.load @unused : tensor<3xf32>
    %h = train.matmul %x, %w1 : tensor<2x5xf32>, tensor<5x4xf32> -> tensor<2x4xf32>
    %side = train.exp %h : tensor<2x4xf32>
    %y = train.matmul %h, %w2 : tensor<2x4xf32>, tensor<4x3xf32> -> tensor<2x3xf32>
    %loss = train.reduce_sum %y dims [0, 1] : tensor<2x3xf32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss, %side : tensor<f32>, tensor<2x4xf32>
  }
}

// -----

// Parameter groups: the bias names its group's optimizer with `with` and
// its gradient is applied with it; the weight names none and gets the
// default, the one optimizer no parameter names (no pass option needed).

// CHECK-LABEL: module @parameter_groups
// CHECK:         train.apply_gradient %{{.*}} to @w with @adamw : tensor<5x4xf32>
// CHECK-NEXT:    train.apply_gradient %{{.*}} to @b with @adamw.no_decay : tensor<4xf32>
module @parameter_groups {
  train.param @w param : tensor<5x4xf32> init normal(0.0, 0.02)
  train.param @b param : tensor<4xf32> init zeros with @adamw.no_decay
  train.optimizer @adamw adamw lr 3.0e-04 weight_decay 0.1
  train.optimizer @adamw.no_decay adamw lr 3.0e-04 weight_decay 0.0

  func.func @step(%x: tensor<2x5xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<5x4xf32>
    %b = train.load @b : tensor<4xf32>
    %h = train.matmul %x, %w : tensor<2x5xf32>, tensor<5x4xf32> -> tensor<2x4xf32>
    %y = train.bias_add %h, %b : tensor<2x4xf32>, tensor<4xf32>
    %loss = train.reduce_sum %y dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}
