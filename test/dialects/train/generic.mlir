// RUN: zero-opt %s --mlir-print-op-generic | zero-opt | FileCheck %s
// RUN: zero-opt %s | zero-opt | FileCheck %s
// RUN: zero-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// Every train op survives the generic form: enum properties (role, layout,
// kind), default-valued properties (layout), optional ones
// (owner, local_type, init, momentum, betas, eps, weight_decay), the
// #train.init attribute, unit attributes (transpose_a/b) and dense arrays.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {

  // Persistent state and optimizers.
  // CHECK-LABEL: module @state
  // CHECK-NEXT:    train.param @w param : tensor<7x3xbf16> init normal(0.0, 0.02)
  // CHECK-NEXT:    train.param @emb frozen : tensor<10x4xf32> sharded dim0 over 0 -> tensor<3x4xf32> init uniform(-1.0, 1.0)
  // CHECK-NEXT:    train.param @w.master master of @w : tensor<7x3xf32> sharded flat over 0 -> tensor<6xf32>
  // CHECK-NEXT:    train.param @w.m slot of @w : tensor<7x3xf32> sharded flat over 0 -> tensor<6xf32> init zeros
  // CHECK-NEXT:    train.param @w.v slot of @w : tensor<7x3xf32> sharded flat over 0 -> tensor<6xf32> init constant(0.0)
  // CHECK-NEXT:    train.param @w.acc grad_accum of @w : tensor<7x3xbf16> init ones
  // CHECK-NEXT:    train.optimizer @sgd sgd lr 1.000000e-01
  // CHECK-NEXT:    train.optimizer @momentum momentum lr 1.000000e-01 momentum 9.000000e-01 weight_decay 1.000000e-04
  // CHECK-NEXT:    train.optimizer @adam adam lr 1.000000e-03 betas(9.000000e-01, 0.99899999999999999) eps 1.000000e-08
  // CHECK-NEXT:    train.optimizer @adamw adamw lr 3.000000e-04 weight_decay 1.000000e-01
  // GENERIC-LABEL: "builtin.module"() <{sym_name = "state"}>
  // GENERIC:       "train.param"() <{init = #train.init<normal(0.0, 0.02)>, layout = 0 : i32, logical_type = tensor<7x3xbf16>, role = 0 : i32, sym_name = "w"}> : () -> ()
  // GENERIC:       "train.param"() <{layout = 1 : i32, local_type = tensor<6xf32>, logical_type = tensor<7x3xf32>, owner = @w, role = 2 : i32, shard_axes = array<i64: 0>, sym_name = "w.master"}> : () -> ()
  // GENERIC:       "train.optimizer"() <{beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, kind = 2 : i32, lr = 1.000000e-03 : f64, sym_name = "adam"}> : () -> ()
  module @state {
    train.param @w param : tensor<7x3xbf16> init normal(0.0, 0.02)
    train.param @emb frozen : tensor<10x4xf32> sharded dim0 over 0 -> tensor<3x4xf32> init uniform(-1.0, 1.0)
    train.param @w.master master of @w : tensor<7x3xf32> sharded flat over 0 -> tensor<6xf32>
    train.param @w.m slot of @w : tensor<7x3xf32> sharded flat over 0 -> tensor<6xf32> init zeros
    train.param @w.v slot of @w : tensor<7x3xf32> sharded flat over 0 -> tensor<6xf32> init constant(0.0)
    train.param @w.acc grad_accum of @w : tensor<7x3xbf16> init ones
    train.optimizer @sgd sgd lr 0.1
    train.optimizer @momentum momentum lr 0.1 momentum 0.9 weight_decay 1.0e-4
    train.optimizer @adam adam lr 1.0e-3 betas(0.9, 0.999) eps 1.0e-8
    train.optimizer @adamw adamw lr 3.0e-4 weight_decay 0.1

    // State access and every update op; the train.step unit attribute stays.
    // CHECK-LABEL: func.func @update
    // CHECK-SAME:    (%[[G:.*]]: tensor<7x3xbf16>, %[[GS:.*]]: tensor<6xbf16>) attributes {train.step}
    // CHECK-NEXT:    %step = train.step_index : tensor<i64>
    // CHECK-NEXT:    train.apply_gradient %[[G]] to @w with @adam : tensor<7x3xbf16>
    // CHECK-NEXT:    %w.master = train.load @w.master : tensor<6xf32>
    // CHECK-NEXT:    %w.m = train.load @w.m : tensor<6xf32>
    // CHECK-NEXT:    %w.v = train.load @w.v : tensor<6xf32>
    // CHECK-NEXT:    %updated = train.sgd %w.master, %[[GS]] with @sgd : tensor<6xf32>, tensor<6xbf16>
    // CHECK-NEXT:    %[[P1:.*]], %[[B1:.*]] = train.sgd_momentum %updated, %[[GS]], %w.m with @momentum : tensor<6xf32>, tensor<6xbf16>, tensor<6xf32>
    // CHECK-NEXT:    %[[P2:.*]], %[[M2:.*]], %[[V2:.*]] = train.adam %[[P1]], %[[GS]], %[[B1]], %w.v step %step with @adam : tensor<6xf32>, tensor<6xbf16>, tensor<6xf32>
    // CHECK-NEXT:    %[[P3:.*]], %[[M3:.*]], %[[V3:.*]] = train.adamw %[[P2]], %[[GS]], %[[M2]], %[[V2]] step %step with @adamw : tensor<6xf32>, tensor<6xbf16>, tensor<6xf32>
    // CHECK-NEXT:    train.store %[[P3]] to @w.master : tensor<6xf32>
    // CHECK-NEXT:    train.store %[[M3]] to @w.m : tensor<6xf32>
    // CHECK-NEXT:    train.store %[[V3]] to @w.v : tensor<6xf32>
    func.func @update(%g: tensor<7x3xbf16>, %gs: tensor<6xbf16>) attributes {train.step} {
      %t = train.step_index : tensor<i64>
      train.apply_gradient %g to @w with @adam : tensor<7x3xbf16>
      %w = train.load @w.master : tensor<6xf32>
      %m = train.load @w.m : tensor<6xf32>
      %v = train.load @w.v : tensor<6xf32>
      %w1 = train.sgd %w, %gs with @sgd : tensor<6xf32>, tensor<6xbf16>
      %w2, %m2 = train.sgd_momentum %w1, %gs, %m with @momentum : tensor<6xf32>, tensor<6xbf16>, tensor<6xf32>
      %w3, %m3, %v3 = train.adam %w2, %gs, %m2, %v step %t with @adam : tensor<6xf32>, tensor<6xbf16>, tensor<6xf32>
      %w4, %m4, %v4 = train.adamw %w3, %gs, %m3, %v3 step %t with @adamw : tensor<6xf32>, tensor<6xbf16>, tensor<6xf32>
      train.store %w4 to @w.master : tensor<6xf32>
      train.store %m4 to @w.m : tensor<6xf32>
      train.store %v4 to @w.v : tensor<6xf32>
      return
    }
  }

  // Elementwise ops and their F64 attributes, including -inf.
  // CHECK-LABEL: func.func @elementwise
  // CHECK-SAME:    (%[[X:.*]]: tensor<4x8xbf16>, %[[B:.*]]: tensor<8xbf16>)
  // CHECK-NEXT:    %neg = train.neg %[[X]] : tensor<4x8xbf16>
  // CHECK-NEXT:    %exp = train.exp %neg : tensor<4x8xbf16>
  // CHECK-NEXT:    %log = train.log %exp : tensor<4x8xbf16>
  // CHECK-NEXT:    %sqrt = train.sqrt %exp : tensor<4x8xbf16>
  // CHECK-NEXT:    %rsqrt = train.rsqrt %exp : tensor<4x8xbf16>
  // CHECK-NEXT:    %tanh = train.tanh %[[X]] : tensor<4x8xbf16>
  // CHECK-NEXT:    %relu = train.relu %[[X]] : tensor<4x8xbf16>
  // CHECK-NEXT:    %gelu = train.gelu %[[X]] : tensor<4x8xbf16>
  // CHECK-NEXT:    %add = train.add %relu, %gelu : tensor<4x8xbf16>
  // CHECK-NEXT:    %sub = train.sub %relu, %gelu : tensor<4x8xbf16>
  // CHECK-NEXT:    %mul = train.mul %add, %sub : tensor<4x8xbf16>
  // CHECK-NEXT:    %div = train.div %mul, %exp : tensor<4x8xbf16>
  // CHECK-NEXT:    %scaled = train.scale %div by 1.250000e-01 : tensor<4x8xbf16>
  // CHECK-NEXT:    %biased = train.bias_add %scaled, %[[B]] : tensor<4x8xbf16>, tensor<8xbf16>
  // CHECK-NEXT:    %masked = train.causal_mask %biased fill 0xFFF0000000000000 : tensor<4x8xbf16>
  // GENERIC-LABEL: "func.func"() <{function_type = (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>, sym_name = "elementwise"}>
  // GENERIC:       "train.scale"(%{{.*}}) <{factor = 1.250000e-01 : f64}> : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
  // GENERIC:       "train.causal_mask"(%{{.*}}) <{fill = 0xFFF0000000000000 : f64}> : (tensor<4x8xbf16>) -> tensor<4x8xbf16>
  func.func @elementwise(%x: tensor<4x8xbf16>, %b: tensor<8xbf16>) -> tensor<4x8xbf16> {
    %0 = train.neg %x : tensor<4x8xbf16>
    %1 = train.exp %0 : tensor<4x8xbf16>
    %2 = train.log %1 : tensor<4x8xbf16>
    %3 = train.sqrt %1 : tensor<4x8xbf16>
    %4 = train.rsqrt %1 : tensor<4x8xbf16>
    %5 = train.tanh %x : tensor<4x8xbf16>
    %6 = train.relu %x : tensor<4x8xbf16>
    %7 = train.gelu %x : tensor<4x8xbf16>
    %8 = train.add %6, %7 : tensor<4x8xbf16>
    %9 = train.sub %6, %7 : tensor<4x8xbf16>
    %10 = train.mul %8, %9 : tensor<4x8xbf16>
    %11 = train.div %10, %1 : tensor<4x8xbf16>
    %12 = train.scale %11 by 0.125 : tensor<4x8xbf16>
    %13 = train.bias_add %12, %b : tensor<4x8xbf16>, tensor<8xbf16>
    %14 = train.causal_mask %13 fill 0xFFF0000000000000 : tensor<4x8xbf16>
    return %14 : tensor<4x8xbf16>
  }

  // Matmul's unit attributes.
  // CHECK-LABEL: func.func @matmul
  // CHECK-SAME:    (%[[X:.*]]: tensor<2x16x64xf16>, %[[W:.*]]: tensor<256x64xf16>, %[[A:.*]]: tensor<8x4xf16>, %[[C:.*]]: tensor<6x8xf16>)
  // CHECK-NEXT:    %mm = train.matmul %[[X]], %[[W]] transpose_b : tensor<2x16x64xf16>, tensor<256x64xf16> -> tensor<2x16x256xf16>
  // CHECK-NEXT:    %{{.*}} = train.matmul %[[A]], %[[A]] transpose_a : tensor<8x4xf16>, tensor<8x4xf16> -> tensor<4x4xf16>
  // CHECK-NEXT:    %{{.*}} = train.matmul %[[A]], %[[C]] transpose_a transpose_b : tensor<8x4xf16>, tensor<6x8xf16> -> tensor<4x6xf16>
  // CHECK-NEXT:    %{{.*}} = train.matmul %[[A]], %[[A]] transpose_b : tensor<8x4xf16>, tensor<8x4xf16> -> tensor<8x8xf16>
  // GENERIC-LABEL: sym_name = "matmul"
  // GENERIC:       "train.matmul"(%{{.*}}, %{{.*}}) <{transpose_b}> : (tensor<2x16x64xf16>, tensor<256x64xf16>) -> tensor<2x16x256xf16>
  // GENERIC:       "train.matmul"(%{{.*}}, %{{.*}}) <{transpose_a, transpose_b}> : (tensor<8x4xf16>, tensor<6x8xf16>) -> tensor<4x6xf16>
  func.func @matmul(%x: tensor<2x16x64xf16>, %w: tensor<256x64xf16>, %a: tensor<8x4xf16>,
                    %c: tensor<6x8xf16>) {
    %0 = train.matmul %x, %w transpose_b : tensor<2x16x64xf16>, tensor<256x64xf16> -> tensor<2x16x256xf16>
    %1 = train.matmul %a, %a transpose_a : tensor<8x4xf16>, tensor<8x4xf16> -> tensor<4x4xf16>
    %2 = train.matmul %a, %c transpose_a transpose_b : tensor<8x4xf16>, tensor<6x8xf16> -> tensor<4x6xf16>
    %3 = train.matmul %a, %a transpose_b : tensor<8x4xf16>, tensor<8x4xf16> -> tensor<8x8xf16>
    return
  }

  // Normalization, embedding and loss.
  // CHECK-LABEL: func.func @norm_and_loss
  // CHECK-SAME:    (%[[X:.*]]: tensor<8x16xf32>, %[[G:.*]]: tensor<16xf32>, %[[WTE:.*]]: tensor<64x16xf32>, %[[TOK:.*]]: tensor<8xi32>)
  // CHECK-NEXT:    %softmax = train.softmax %[[X]] : tensor<8x16xf32>
  // CHECK-NEXT:    %ln, %ln_mean, %ln_rstd = train.layer_norm %[[X]], %[[G]], %[[G]] eps 1.000000e-05 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8xf32>
  // CHECK-NEXT:    %embedded = train.embedding %[[WTE]], %[[TOK]] : tensor<64x16xf32>, tensor<8xi32> -> tensor<8x16xf32>
  // CHECK-NEXT:    %loss = train.softmax_cross_entropy %ln, %[[TOK]] : tensor<8x16xf32>, tensor<8xi32> -> tensor<f32>
  func.func @norm_and_loss(%x: tensor<8x16xf32>, %g: tensor<16xf32>, %wte: tensor<64x16xf32>,
                           %tokens: tensor<8xi32>) {
    %0 = train.softmax %x : tensor<8x16xf32>
    %1:3 = train.layer_norm %x, %g, %g eps 1.0e-05 : tensor<8x16xf32>, tensor<16xf32> -> tensor<8xf32>
    %2 = train.embedding %wte, %tokens : tensor<64x16xf32>, tensor<8xi32> -> tensor<8x16xf32>
    %3 = train.softmax_cross_entropy %1#0, %tokens : tensor<8x16xf32>, tensor<8xi32> -> tensor<f32>
    return
  }

  // Shape ops and their dense i64 arrays.
  // CHECK-LABEL: func.func @shape
  // CHECK-SAME:    (%[[X:.*]]: tensor<2x16x64xf32>)
  // CHECK-NEXT:    %reduced = train.reduce_sum %[[X]] dims [0, 1] : tensor<2x16x64xf32> -> tensor<64xf32>
  // CHECK-NEXT:    %[[MEAN:.*]] = train.reduce_mean %[[X]] dims [2] : tensor<2x16x64xf32> -> tensor<2x16xf32>
  // CHECK-NEXT:    %expanded = train.expand %reduced dims [0, 1] : tensor<64xf32> -> tensor<2x16x64xf32>
  // CHECK-NEXT:    %reshaped = train.reshape %expanded : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  // CHECK-NEXT:    %transposed = train.transpose %reshaped permutation [0, 2, 1, 3] : tensor<2x16x4x16xf32> -> tensor<2x4x16x16xf32>
  // CHECK-NEXT:    %cast = train.cast %transposed : tensor<2x4x16x16xf32> -> tensor<2x4x16x16xbf16>
  // GENERIC-LABEL: sym_name = "shape"
  // GENERIC:       "train.reduce_sum"(%{{.*}}) <{dims = array<i64: 0, 1>}> : (tensor<2x16x64xf32>) -> tensor<64xf32>
  // GENERIC:       "train.transpose"(%{{.*}}) <{permutation = array<i64: 0, 2, 1, 3>}> : (tensor<2x16x4x16xf32>) -> tensor<2x4x16x16xf32>
  func.func @shape(%x: tensor<2x16x64xf32>) {
    %0 = train.reduce_sum %x dims [0, 1] : tensor<2x16x64xf32> -> tensor<64xf32>
    %1 = train.reduce_mean %x dims [2] : tensor<2x16x64xf32> -> tensor<2x16xf32>
    %2 = train.expand %0 dims [0, 1] : tensor<64xf32> -> tensor<2x16x64xf32>
    %3 = train.reshape %2 : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
    %4 = train.transpose %3 permutation [0, 2, 1, 3] : tensor<2x16x4x16xf32> -> tensor<2x4x16x16xf32>
    %5 = train.cast %4 : tensor<2x4x16x16xf32> -> tensor<2x4x16x16xbf16>
    return
  }

  // Every gradient op.
  // CHECK-LABEL: func.func @grads
  // CHECK-SAME:    (%[[X:.*]]: tensor<16x32xf32>, %[[DY:.*]]: tensor<16x32xf32>, %[[G:.*]]: tensor<32xf32>, %[[MEAN:.*]]: tensor<16xf32>, %[[TOK:.*]]: tensor<16xi64>, %[[ONE:.*]]: tensor<f32>)
  // CHECK-NEXT:    %grad = train.relu_grad %[[X]], %[[DY]] : tensor<16x32xf32>
  // CHECK-NEXT:    %[[GELU:.*]] = train.gelu_grad %[[X]], %[[DY]] : tensor<16x32xf32>
  // CHECK-NEXT:    %[[TANH:.*]] = train.tanh_grad %[[X]], %[[DY]] : tensor<16x32xf32>
  // CHECK-NEXT:    %[[SOFTMAX:.*]] = train.softmax_grad %[[X]], %[[DY]] : tensor<16x32xf32>
  // CHECK-NEXT:    %ln_dx, %ln_dgamma, %ln_dbeta = train.layer_norm_grad %[[DY]], %[[X]], %[[G]], %[[MEAN]], %[[MEAN]] : tensor<16x32xf32>, tensor<32xf32>, tensor<16xf32>
  // CHECK-NEXT:    %table_grad = train.embedding_grad %[[DY]], %[[TOK]] : tensor<16x32xf32>, tensor<16xi64> -> tensor<100x32xf32>
  // CHECK-NEXT:    %logits_grad = train.softmax_cross_entropy_grad %[[X]], %[[TOK]], %[[ONE]] : tensor<16x32xf32>, tensor<16xi64>
  func.func @grads(%x: tensor<16x32xf32>, %dy: tensor<16x32xf32>, %g: tensor<32xf32>,
                   %mean: tensor<16xf32>, %tokens: tensor<16xi64>, %one: tensor<f32>) {
    %0 = train.relu_grad %x, %dy : tensor<16x32xf32>
    %1 = train.gelu_grad %x, %dy : tensor<16x32xf32>
    %2 = train.tanh_grad %x, %dy : tensor<16x32xf32>
    %3 = train.softmax_grad %x, %dy : tensor<16x32xf32>
    %4:3 = train.layer_norm_grad %dy, %x, %g, %mean, %mean : tensor<16x32xf32>, tensor<32xf32>, tensor<16xf32>
    %5 = train.embedding_grad %dy, %tokens : tensor<16x32xf32>, tensor<16xi64> -> tensor<100x32xf32>
    %6 = train.softmax_cross_entropy_grad %x, %tokens, %one : tensor<16x32xf32>, tensor<16xi64>
    return
  }
}
