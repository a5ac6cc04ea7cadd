// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-autodiff)" | FileCheck %s

// The gradient rule of every differentiable op, as train-autodiff uses it.
// Each case checks the whole generated backward, from the seed to the
// apply_gradients.

// The elementwise rules, chained: div, sqrt, rsqrt, log, exp, neg, sub and
// mul, each built from train ops (d sqrt = dy / 2 sqrt x, d rsqrt =
// -1/2 (y / x) dy, d(a/b)/db = -(dy (a/b)) / b). @a is used twice: its
// gradients are summed in forward order (the div's first).

// CHECK-LABEL: module @elementwise
// CHECK:         %[[CST:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[EXPANDED:.*]] = train.expand %[[CST]] dims [0] : tensor<f32> -> tensor<4xf32>
// CHECK-NEXT:    %[[MUL_0:.*]] = train.mul %[[EXPANDED]], %{{.*}} : tensor<4xf32>
// CHECK-NEXT:    %[[MUL_1:.*]] = train.mul %[[EXPANDED]], %{{.*}} : tensor<4xf32>
// CHECK-NEXT:    %[[NEG_2:.*]] = train.neg %[[MUL_0]] : tensor<4xf32>
// CHECK-NEXT:    %[[MUL_3:.*]] = train.mul %[[NEG_2]], %{{.*}} : tensor<4xf32>
// CHECK-NEXT:    %[[DIV_4:.*]] = train.div %[[MUL_3]], %{{.*}} : tensor<4xf32>
// CHECK-NEXT:    %[[MUL_5:.*]] = train.mul %[[DIV_4]], %{{.*}} : tensor<4xf32>
// CHECK-NEXT:    %[[DIV_6:.*]] = train.div %[[MUL_5]], %{{.*}} : tensor<4xf32>
// CHECK-NEXT:    %[[SCALED:.*]] = train.scale %[[DIV_6]] by -5.000000e-01 : tensor<4xf32>
// CHECK-NEXT:    %[[DIV_7:.*]] = train.div %[[SCALED]], %{{.*}} : tensor<4xf32>
// CHECK-NEXT:    %[[SCALED_8:.*]] = train.scale %[[DIV_7]] by 5.000000e-01 : tensor<4xf32>
// CHECK-NEXT:    %[[DIV_9:.*]] = train.div %[[SCALED_8]], %{{.*}} : tensor<4xf32>
// CHECK-NEXT:    %[[MUL_10:.*]] = train.mul %[[SCALED_8]], %{{.*}} : tensor<4xf32>
// CHECK-NEXT:    %[[DIV_11:.*]] = train.div %[[MUL_10]], %{{.*}} : tensor<4xf32>
// CHECK-NEXT:    %[[NEG_12:.*]] = train.neg %[[DIV_11]] : tensor<4xf32>
// CHECK-NEXT:    %[[ADD:.*]] = train.add %[[DIV_9]], %[[MUL_1]] : tensor<4xf32>
// CHECK-NEXT:    train.apply_gradient %[[ADD]] to @a with @sgd : tensor<4xf32>
// CHECK-NEXT:    train.apply_gradient %[[NEG_12]] to @b with @sgd : tensor<4xf32>
// CHECK-NEXT:    return %{{.*}} : tensor<f32>
module @elementwise {
  train.param @a param : tensor<4xf32> init ones
  train.param @b param : tensor<4xf32> init ones
  train.optimizer @sgd sgd lr 1.0e-01
  func.func @step(%x: tensor<4xf32>) -> tensor<f32> attributes {train.step} {
    %a = train.load @a : tensor<4xf32>
    %b = train.load @b : tensor<4xf32>
    %q = train.div %a, %b : tensor<4xf32>
    %s = train.sqrt %q : tensor<4xf32>
    %r = train.rsqrt %s : tensor<4xf32>
    %l = train.log %r : tensor<4xf32>
    %e = train.exp %l : tensor<4xf32>
    %n = train.neg %e : tensor<4xf32>
    %d = train.sub %n, %x : tensor<4xf32>
    %m = train.mul %d, %a : tensor<4xf32>
    %loss = train.reduce_sum %m dims [0] : tensor<4xf32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// The external models of arith.addf, subf, mulf, divf and negf build the
// same rules with train ops.

// CHECK-LABEL: module @arith
// CHECK:         %[[CST:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[EXPANDED:.*]] = train.expand %[[CST]] dims [0] : tensor<f32> -> tensor<4xf32>
// CHECK-NEXT:    %[[NEG:.*]] = train.neg %[[EXPANDED]] : tensor<4xf32>
// CHECK-NEXT:    %[[DIV:.*]] = train.div %[[NEG]], %{{.*}} : tensor<4xf32>
// CHECK-NEXT:    %[[MUL:.*]] = train.mul %[[NEG]], %{{.*}} : tensor<4xf32>
// CHECK-NEXT:    %[[DIV_0:.*]] = train.div %[[MUL]], %{{.*}} : tensor<4xf32>
// CHECK-NEXT:    %[[NEG_1:.*]] = train.neg %[[DIV_0]] : tensor<4xf32>
// CHECK-NEXT:    %[[MUL_2:.*]] = train.mul %[[DIV]], %{{.*}} : tensor<4xf32>
// CHECK-NEXT:    %[[MUL_3:.*]] = train.mul %[[DIV]], %{{.*}} : tensor<4xf32>
// CHECK-NEXT:    %[[NEG_4:.*]] = train.neg %[[MUL_2]] : tensor<4xf32>
// CHECK-NEXT:    %[[ADD:.*]] = train.add %[[MUL_2]], %[[NEG_1]] : tensor<4xf32>
// CHECK-NEXT:    %[[ADD_5:.*]] = train.add %[[NEG_4]], %[[MUL_3]] : tensor<4xf32>
// CHECK-NEXT:    train.apply_gradient %[[ADD]] to @a with @sgd : tensor<4xf32>
// CHECK-NEXT:    train.apply_gradient %[[ADD_5]] to @b with @sgd : tensor<4xf32>
// CHECK-NEXT:    return %{{.*}} : tensor<f32>
module @arith {
  train.param @a param : tensor<4xf32> init ones
  train.param @b param : tensor<4xf32> init ones
  train.optimizer @sgd sgd lr 1.0e-01
  func.func @step(%x: tensor<4xf32>) -> tensor<f32> attributes {train.step} {
    %a = train.load @a : tensor<4xf32>
    %b = train.load @b : tensor<4xf32>
    %0 = arith.addf %a, %x : tensor<4xf32>
    %1 = arith.subf %0, %b : tensor<4xf32>
    %2 = arith.mulf %1, %b : tensor<4xf32>
    %3 = arith.divf %2, %a : tensor<4xf32>
    %4 = arith.negf %3 : tensor<4xf32>
    %loss = train.reduce_sum %4 dims [0] : tensor<4xf32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Shape rules on bf16: reduce_mean scales by 1/36 and expands, cast casts
// back, transpose applies the inverse permutation, reshape reshapes back,
// bias_add sums the leading dimensions, and the 2-D weight shared by the
// batches of a 3-D matmul gets one 2-D matmul over the merged batch rows.

// CHECK-LABEL: module @shapes
// CHECK:         %[[CST:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[SCALED:.*]] = train.scale %[[CST]] by 0.027777777777777776 : tensor<f32>
// CHECK-NEXT:    %[[EXPANDED:.*]] = train.expand %[[SCALED]] dims [0, 1, 2, 3] : tensor<f32> -> tensor<3x2x3x2xf32>
// CHECK-NEXT:    %[[CAST_0:.*]] = train.cast %[[EXPANDED]] : tensor<3x2x3x2xf32> -> tensor<3x2x3x2xbf16>
// CHECK-NEXT:    %[[TRANSPOSED_1:.*]] = train.transpose %[[CAST_0]] permutation [3, 0, 1, 2] : tensor<3x2x3x2xbf16> -> tensor<2x3x2x3xbf16>
// CHECK-NEXT:    %[[RESHAPED_2:.*]] = train.reshape %[[TRANSPOSED_1]] : tensor<2x3x2x3xbf16> -> tensor<2x3x6xbf16>
// CHECK-NEXT:    %[[REDUCED_3:.*]] = train.reduce_sum %[[RESHAPED_2]] dims [0, 1] : tensor<2x3x6xbf16> -> tensor<6xbf16>
// CHECK-NEXT:    %[[RESHAPED_4:.*]] = train.reshape %{{.*}} : tensor<2x3x8xbf16> -> tensor<6x8xbf16>
// CHECK-NEXT:    %[[RESHAPED_5:.*]] = train.reshape %[[RESHAPED_2]] : tensor<2x3x6xbf16> -> tensor<6x6xbf16>
// CHECK-NEXT:    %[[MM_6:.*]] = train.matmul %[[RESHAPED_4]], %[[RESHAPED_5]] transpose_a : tensor<6x8xbf16>, tensor<6x6xbf16> -> tensor<8x6xbf16>
// CHECK-NEXT:    train.apply_gradient %[[MM_6]] to @w with @sgd : tensor<8x6xbf16>
// CHECK-NEXT:    train.apply_gradient %[[REDUCED_3]] to @b with @sgd : tensor<6xbf16>
// CHECK-NEXT:    return %{{.*}} : tensor<f32>
module @shapes {
  train.param @w param : tensor<8x6xbf16> init normal(0.0, 0.02)
  train.param @b param : tensor<6xbf16> init zeros
  train.optimizer @sgd sgd lr 1.0e-01
  func.func @step(%x: tensor<2x3x8xbf16>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<8x6xbf16>
    %b = train.load @b : tensor<6xbf16>
    %y = train.matmul %x, %w : tensor<2x3x8xbf16>, tensor<8x6xbf16> -> tensor<2x3x6xbf16>
    %z = train.bias_add %y, %b : tensor<2x3x6xbf16>, tensor<6xbf16>
    %r = train.reshape %z : tensor<2x3x6xbf16> -> tensor<2x3x2x3xbf16>
    %t = train.transpose %r permutation [1, 2, 3, 0] : tensor<2x3x2x3xbf16> -> tensor<3x2x3x2xbf16>
    %c = train.cast %t : tensor<3x2x3x2xbf16> -> tensor<3x2x3x2xf32>
    %loss = train.reduce_mean %c dims [0, 1, 2, 3] : tensor<3x2x3x2xf32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A shared weight used transposed by a transposed batched operand: the
// operand is transposed back before the batches are merged. The step input
// and the gelu of it (not on a path to a parameter) get no gradient.

// CHECK-LABEL: module @transposed_shared
// CHECK:         %[[CST:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[EXPANDED:.*]] = train.expand %[[CST]] dims [0, 1, 2] : tensor<f32> -> tensor<2x3x6xf32>
// CHECK-NEXT:    %[[TRANSPOSED:.*]] = train.transpose %{{.*}} permutation [0, 2, 1] : tensor<2x8x3xf32> -> tensor<2x3x8xf32>
// CHECK-NEXT:    %[[RESHAPED:.*]] = train.reshape %[[TRANSPOSED]] : tensor<2x3x8xf32> -> tensor<6x8xf32>
// CHECK-NEXT:    %[[RESHAPED_0:.*]] = train.reshape %[[EXPANDED]] : tensor<2x3x6xf32> -> tensor<6x6xf32>
// CHECK-NEXT:    %[[MM_1:.*]] = train.matmul %[[RESHAPED_0]], %[[RESHAPED]] transpose_a : tensor<6x6xf32>, tensor<6x8xf32> -> tensor<6x8xf32>
// CHECK-NEXT:    train.apply_gradient %[[MM_1]] to @w with @sgd : tensor<6x8xf32>
// CHECK-NEXT:    return %{{.*}} : tensor<f32>
module @transposed_shared {
  train.param @w param : tensor<6x8xf32> init normal(0.0, 0.02)
  train.optimizer @sgd sgd lr 1.0e-01
  func.func @step(%x: tensor<2x8x3xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<6x8xf32>
    %h = train.gelu %x : tensor<2x8x3xf32>
    %y = train.matmul %x, %w transpose_a transpose_b : tensor<2x8x3xf32>, tensor<6x8xf32> -> tensor<2x3x6xf32>
    %loss = train.reduce_sum %y dims [0, 1, 2] : tensor<2x3x6xf32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Fused attention: one train.attention_grad from the result's gradient,
// the forward's operands, its result and its log-sum-exp gives the
// gradients of query, key and value; the key here is a step argument, so its
// gradient is dropped.

// CHECK-LABEL: module @fused_attention
// CHECK:         %[[ATTN:.*]], %[[LSE:.*]] = train.attention %[[Q:.*]], %[[K:.*]], %[[V:.*]] scale 5.000000e-01 causal : tensor<2x4x4xf32> -> tensor<2x4xf32>
// CHECK:         %[[DQ:.*]], %{{.*}}, %[[DV:.*]] = train.attention_grad %{{.*}}, %[[Q]], %[[K]], %[[V]], %[[ATTN]], %[[LSE]] scale 5.000000e-01 causal : tensor<2x4x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    train.apply_gradient %[[DQ]] to @q with @sgd : tensor<2x4x4xf32>
// CHECK-NEXT:    train.apply_gradient %[[DV]] to @v with @sgd : tensor<2x4x4xf32>
// CHECK-NEXT:    return %{{.*}} : tensor<f32>
module @fused_attention {
  train.param @q param : tensor<2x4x4xf32> init normal(0.0, 0.02)
  train.param @v param : tensor<2x4x4xf32> init normal(0.0, 0.02)
  train.optimizer @sgd sgd lr 1.0e-01
  func.func @step(%k: tensor<2x4x4xf32>) -> tensor<f32> attributes {train.step} {
    %q = train.load @q : tensor<2x4x4xf32>
    %v = train.load @v : tensor<2x4x4xf32>
    %o, %lse = train.attention %q, %k, %v scale 0.5 causal : tensor<2x4x4xf32> -> tensor<2x4xf32>
    %t = train.tanh %o : tensor<2x4x4xf32>
    %loss = train.reduce_sum %t dims [0, 1, 2] : tensor<2x4x4xf32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Attention pieces: tanh_grad, softmax_grad, causal_mask with fill 0,
// scale, the batched matmul with transpose_b, and layer_norm_grad, whose
// three results are the gradients of the input, gain and shift.

// CHECK-LABEL: module @attention
// CHECK:         %[[CST:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[EXPANDED:.*]] = train.expand %[[CST]] dims [0, 1, 2] : tensor<f32> -> tensor<2x4x4xf32>
// CHECK-NEXT:    %[[GRAD:.*]] = train.tanh_grad %{{.*}}, %[[EXPANDED]] : tensor<2x4x4xf32>
// CHECK-NEXT:    %[[GRAD_0:.*]] = train.softmax_grad %{{.*}}, %[[GRAD]] : tensor<2x4x4xf32>
// CHECK-NEXT:    %[[MASKED_1:.*]] = train.causal_mask %[[GRAD_0]] fill 0.000000e+00 : tensor<2x4x4xf32>
// CHECK-NEXT:    %[[SCALED_2:.*]] = train.scale %[[MASKED_1]] by 5.000000e-01 : tensor<2x4x4xf32>
// CHECK-NEXT:    %[[MM_3:.*]] = train.matmul %[[SCALED_2]], %{{.*}} : tensor<2x4x4xf32>, tensor<2x4x4xf32> -> tensor<2x4x4xf32>
// CHECK-NEXT:    %[[LN_DX:.*]], %[[LN_DGAMMA:.*]], %[[LN_DBETA:.*]] = train.layer_norm_grad %[[MM_3]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x4x4xf32>, tensor<4xf32>, tensor<2x4xf32>
// CHECK-NEXT:    train.apply_gradient %[[LN_DX]] to @q with @sgd : tensor<2x4x4xf32>
// CHECK-NEXT:    train.apply_gradient %[[LN_DGAMMA]] to @g with @sgd : tensor<4xf32>
// CHECK-NEXT:    train.apply_gradient %[[LN_DBETA]] to @beta with @sgd : tensor<4xf32>
// CHECK-NEXT:    return %{{.*}} : tensor<f32>
module @attention {
  train.param @q param : tensor<2x4x4xf32> init normal(0.0, 0.02)
  train.param @g param : tensor<4xf32> init ones
  train.param @beta param : tensor<4xf32> init zeros
  train.optimizer @sgd sgd lr 1.0e-01
  func.func @step(%k: tensor<2x4x4xf32>) -> tensor<f32> attributes {train.step} {
    %q = train.load @q : tensor<2x4x4xf32>
    %g = train.load @g : tensor<4xf32>
    %beta = train.load @beta : tensor<4xf32>
    %n, %mean, %rstd = train.layer_norm %q, %g, %beta eps 1.0e-05 : tensor<2x4x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
    %s = train.matmul %n, %k transpose_b : tensor<2x4x4xf32>, tensor<2x4x4xf32> -> tensor<2x4x4xf32>
    %sc = train.scale %s by 0.5 : tensor<2x4x4xf32>
    %m = train.causal_mask %sc fill 0xFFF0000000000000 : tensor<2x4x4xf32>
    %p = train.softmax %m : tensor<2x4x4xf32>
    %t = train.tanh %p : tensor<2x4x4xf32>
    %loss = train.reduce_sum %t dims [0, 1, 2] : tensor<2x4x4xf32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// The ops Llama adds: a fused projection split by three slices (a SwiGLU's
// gate and up, and a rotary input), silu, the rotate-half concat of two
// slices, and sigmoid. A slice's gradient is a pad into the input's shape;
// when the slices of a tensor tile one of its dimensions, as these do, the
// pads are not summed: their inputs are concatenated, in offset order (the
// same values, without the zero fills and the adds). A concat's operand
// gradients are slices of its result gradient; sigmoid_grad reads the
// forward's result, silu_grad its input.

// CHECK-LABEL: module @llama_ops
// CHECK:         %[[GATE:.*]] = train.slice %[[H:.*]] dim 1 offset 0 : tensor<2x12xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %[[UP:.*]] = train.slice %[[H]] dim 1 offset 4 : tensor<2x12xf32> -> tensor<2x4xf32>
// CHECK:         %[[SILU:.*]] = train.silu %[[GATE]] : tensor<2x4xf32>
// CHECK:         %[[SIGMOID:.*]] = train.sigmoid %{{.*}} : tensor<2x4xf32>
// CHECK:         %[[EXPANDED:.*]] = train.expand %{{.*}} dims [0, 1] : tensor<f32> -> tensor<2x4xf32>
// CHECK-NEXT:    %[[DS:.*]] = train.sigmoid_grad %[[SIGMOID]], %[[EXPANDED]] : tensor<2x4xf32>
// CHECK-NEXT:    %[[DNHI:.*]] = train.slice %[[DS]] dim 1 offset 0 : tensor<2x4xf32> -> tensor<2x2xf32>
// CHECK-NEXT:    %[[DLO:.*]] = train.slice %[[DS]] dim 1 offset 2 : tensor<2x4xf32> -> tensor<2x2xf32>
// CHECK-NEXT:    %[[DHI:.*]] = train.neg %[[DNHI]] : tensor<2x2xf32>
// CHECK-NEXT:    %[[DGLU_UP:.*]] = train.mul %[[EXPANDED]], %[[UP]] : tensor<2x4xf32>
// CHECK-NEXT:    %[[DUP:.*]] = train.mul %[[EXPANDED]], %[[SILU]] : tensor<2x4xf32>
// CHECK-NEXT:    %[[DGATE:.*]] = train.silu_grad %[[GATE]], %[[DGLU_UP]] : tensor<2x4xf32>
// CHECK-NEXT:    %[[DROT:.*]] = train.concat %[[DLO]], %[[DHI]] dim 1 : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %[[DH:.*]] = train.concat %[[DGATE]], %[[DUP]], %[[DROT]] dim 1 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x12xf32>
// CHECK-NEXT:    %[[DW:.*]] = train.matmul %{{.*}}, %[[DH]] transpose_a : tensor<2x4xf32>, tensor<2x12xf32> -> tensor<4x12xf32>
// CHECK-NEXT:    train.apply_gradient %[[DW]] to @w with @sgd : tensor<4x12xf32>
module @llama_ops {
  train.param @w param : tensor<4x12xf32> init normal(0.0, 0.02)
  train.optimizer @sgd sgd lr 1.0e-01
  func.func @step(%x: tensor<2x4xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<4x12xf32>
    %h = train.matmul %x, %w : tensor<2x4xf32>, tensor<4x12xf32> -> tensor<2x12xf32>
    %gate = train.slice %h dim 1 offset 0 : tensor<2x12xf32> -> tensor<2x4xf32>
    %up = train.slice %h dim 1 offset 4 : tensor<2x12xf32> -> tensor<2x4xf32>
    %rot = train.slice %h dim 1 offset 8 : tensor<2x12xf32> -> tensor<2x4xf32>
    %silu = train.silu %gate : tensor<2x4xf32>
    %glu = train.mul %silu, %up : tensor<2x4xf32>
    %lo = train.slice %rot dim 1 offset 0 : tensor<2x4xf32> -> tensor<2x2xf32>
    %hi = train.slice %rot dim 1 offset 2 : tensor<2x4xf32> -> tensor<2x2xf32>
    %nhi = train.neg %hi : tensor<2x2xf32>
    %half = train.concat %nhi, %lo dim 1 : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x4xf32>
    %s = train.sigmoid %half : tensor<2x4xf32>
    %sum = train.add %glu, %s : tensor<2x4xf32>
    %loss = train.reduce_mean %sum dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Slices that leave part of the dimension unread (the last 4 columns here)
// do not tile it: their pads are summed as any fan-out is, and the unread
// columns get a zero gradient from the pads' fill.

// CHECK-LABEL: module @partial_split
// CHECK:         %[[P1:.*]] = train.pad %{{.*}} dim 1 offset 4 : tensor<2x4xf32> -> tensor<2x12xf32>
// CHECK-NEXT:    %[[P0:.*]] = train.pad %{{.*}} dim 1 offset 0 : tensor<2x4xf32> -> tensor<2x12xf32>
// CHECK-NEXT:    %[[DH:.*]] = train.add %[[P0]], %[[P1]] : tensor<2x12xf32>
// CHECK-NEXT:    %[[DW:.*]] = train.matmul %{{.*}}, %[[DH]] transpose_a : tensor<2x4xf32>, tensor<2x12xf32> -> tensor<4x12xf32>
module @partial_split {
  train.param @w param : tensor<4x12xf32> init normal(0.0, 0.02)
  train.optimizer @sgd sgd lr 1.0e-01
  func.func @step(%x: tensor<2x4xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<4x12xf32>
    %h = train.matmul %x, %w : tensor<2x4xf32>, tensor<4x12xf32> -> tensor<2x12xf32>
    %a = train.slice %h dim 1 offset 0 : tensor<2x12xf32> -> tensor<2x4xf32>
    %b = train.slice %h dim 1 offset 4 : tensor<2x12xf32> -> tensor<2x4xf32>
    %ab = train.mul %a, %b : tensor<2x4xf32>
    %loss = train.reduce_mean %ab dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// What PyTorch's arguments become travels to the gradient: the exact (erf)
// GELU differentiates as the exact one, and the embedding's padding row
// (nn.Embedding(padding_idx=0)) gets no gradient from the lookup, so
// embedding_grad carries padding_idx.

// CHECK-LABEL: module @pytorch_arguments
// CHECK:         %[[DH:.*]] = train.gelu_grad %[[E:.*]], %{{.*}} exact : tensor<6x4xf32>
// CHECK-NEXT:    %[[DT:.*]] = train.embedding_grad %[[DH]], %{{.*}} {padding_idx = 0 : i64} : tensor<6x4xf32>, tensor<6xi32> -> tensor<8x4xf32>
// CHECK-NEXT:    train.apply_gradient %[[DT]] to @table with @sgd : tensor<8x4xf32>
module @pytorch_arguments {
  train.param @table param : tensor<8x4xf32> init ones
  train.optimizer @sgd sgd lr 1.0e-01
  func.func @step(%ids: tensor<6xi32>) -> tensor<f32> attributes {train.step} {
    %table = train.load @table : tensor<8x4xf32>
    %e = train.embedding %table, %ids {padding_idx = 0 : i64} : tensor<8x4xf32>, tensor<6xi32> -> tensor<6x4xf32>
    %h = train.gelu %e exact : tensor<6x4xf32>
    %loss = train.reduce_sum %h dims [0, 1] : tensor<6x4xf32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}
