// RUN: zero-opt %s | zero-opt | FileCheck %s

// Round-trip of every compute op of the train dialect in f32, bf16 and f16.
// The printer gives results readable names (`%mm`, `%biased`, `%reduced`,
// `%grad`, ...); layer_norm names its three results `%ln`, `%ln_mean`,
// `%ln_rstd` and layer_norm_grad `%ln_dx`, `%ln_dgamma`, `%ln_dbeta`.

// Elementwise unary ops.
// CHECK-LABEL: func.func @unary
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT:    %neg = train.neg %[[X]] : tensor<4x8xf32>
// CHECK-NEXT:    %exp = train.exp %[[X]] : tensor<4x8xf32>
// CHECK-NEXT:    %log = train.log %exp : tensor<4x8xf32>
// CHECK-NEXT:    %sqrt = train.sqrt %exp : tensor<4x8xf32>
// CHECK-NEXT:    %rsqrt = train.rsqrt %exp : tensor<4x8xf32>
// CHECK-NEXT:    %tanh = train.tanh %[[X]] : tensor<4x8xf32>
// CHECK-NEXT:    %relu = train.relu %[[X]] : tensor<4x8xf32>
// CHECK-NEXT:    %gelu = train.gelu %[[X]] : tensor<4x8xf32>
// CHECK-NEXT:    return %gelu : tensor<4x8xf32>
func.func @unary(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = train.neg %x : tensor<4x8xf32>
  %1 = train.exp %x : tensor<4x8xf32>
  %2 = train.log %1 : tensor<4x8xf32>
  %3 = train.sqrt %1 : tensor<4x8xf32>
  %4 = train.rsqrt %1 : tensor<4x8xf32>
  %5 = train.tanh %x : tensor<4x8xf32>
  %6 = train.relu %x : tensor<4x8xf32>
  %7 = train.gelu %x : tensor<4x8xf32>
  return %7 : tensor<4x8xf32>
}

// Elementwise unary ops on 16-bit and rank-0 tensors.
// CHECK-LABEL: func.func @unary_16bit
// CHECK-SAME:    (%[[B:.*]]: tensor<2x3x4xbf16>, %[[H:.*]]: tensor<16xf16>, %[[S:.*]]: tensor<f32>)
// CHECK-NEXT:    %gelu = train.gelu %[[B]] : tensor<2x3x4xbf16>
// CHECK-NEXT:    %relu = train.relu %[[H]] : tensor<16xf16>
// CHECK-NEXT:    %rsqrt = train.rsqrt %[[H]] : tensor<16xf16>
// CHECK-NEXT:    %exp = train.exp %[[B]] : tensor<2x3x4xbf16>
// CHECK-NEXT:    %neg = train.neg %[[S]] : tensor<f32>
func.func @unary_16bit(%b: tensor<2x3x4xbf16>, %h: tensor<16xf16>, %s: tensor<f32>) {
  %0 = train.gelu %b : tensor<2x3x4xbf16>
  %1 = train.relu %h : tensor<16xf16>
  %2 = train.rsqrt %h : tensor<16xf16>
  %3 = train.exp %b : tensor<2x3x4xbf16>
  %4 = train.neg %s : tensor<f32>
  return
}

// Elementwise binary ops; both operands and the result share one type.
// CHECK-LABEL: func.func @binary
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>, %[[Y:.*]]: tensor<4x8xf32>, %[[A:.*]]: tensor<8xbf16>, %[[B:.*]]: tensor<8xbf16>, %[[C:.*]]: tensor<2x2xf16>)
// CHECK-NEXT:    %add = train.add %[[X]], %[[Y]] : tensor<4x8xf32>
// CHECK-NEXT:    %sub = train.sub %[[X]], %[[Y]] : tensor<4x8xf32>
// CHECK-NEXT:    %mul = train.mul %add, %sub : tensor<4x8xf32>
// CHECK-NEXT:    %div = train.div %mul, %[[Y]] : tensor<4x8xf32>
// CHECK-NEXT:    %[[ADD:.*]] = train.add %[[A]], %[[B]] : tensor<8xbf16>
// CHECK-NEXT:    %[[MUL:.*]] = train.mul %[[ADD]], %[[B]] : tensor<8xbf16>
// CHECK-NEXT:    %[[SUB:.*]] = train.sub %[[C]], %[[C]] : tensor<2x2xf16>
// CHECK-NEXT:    %[[DIV:.*]] = train.div %[[SUB]], %[[C]] : tensor<2x2xf16>
func.func @binary(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %a: tensor<8xbf16>,
                  %b: tensor<8xbf16>, %c: tensor<2x2xf16>) {
  %0 = train.add %x, %y : tensor<4x8xf32>
  %1 = train.sub %x, %y : tensor<4x8xf32>
  %2 = train.mul %0, %1 : tensor<4x8xf32>
  %3 = train.div %2, %y : tensor<4x8xf32>
  %4 = train.add %a, %b : tensor<8xbf16>
  %5 = train.mul %4, %b : tensor<8xbf16>
  %6 = train.sub %c, %c : tensor<2x2xf16>
  %7 = train.div %6, %c : tensor<2x2xf16>
  return
}

// Multiplication by a constant factor.
// CHECK-LABEL: func.func @scale
// CHECK-SAME:    (%[[S:.*]]: tensor<2x4x16x16xf32>, %[[H:.*]]: tensor<8xbf16>)
// CHECK-NEXT:    %scaled = train.scale %[[S]] by 1.250000e-01 : tensor<2x4x16x16xf32>
// CHECK-NEXT:    %[[NEG:.*]] = train.scale %[[H]] by -2.000000e+00 : tensor<8xbf16>
func.func @scale(%scores: tensor<2x4x16x16xf32>, %h: tensor<8xbf16>) {
  %0 = train.scale %scores by 0.125 : tensor<2x4x16x16xf32>
  %1 = train.scale %h by -2.0 : tensor<8xbf16>
  return
}

// A 1-D bias added along the last dimension of a 1-D, 2-D or 3-D input.
// CHECK-LABEL: func.func @bias_add
// CHECK-SAME:    (%[[X:.*]]: tensor<32x128xf32>, %[[B:.*]]: tensor<128xf32>, %[[X3:.*]]: tensor<2x16x64xbf16>, %[[B3:.*]]: tensor<64xbf16>, %[[V:.*]]: tensor<10xf16>, %[[BV:.*]]: tensor<10xf16>)
// CHECK-NEXT:    %biased = train.bias_add %[[X]], %[[B]] : tensor<32x128xf32>, tensor<128xf32>
// CHECK-NEXT:    %{{.*}} = train.bias_add %[[X3]], %[[B3]] : tensor<2x16x64xbf16>, tensor<64xbf16>
// CHECK-NEXT:    %{{.*}} = train.bias_add %[[V]], %[[BV]] : tensor<10xf16>, tensor<10xf16>
func.func @bias_add(%x: tensor<32x128xf32>, %b: tensor<128xf32>,
                    %x3: tensor<2x16x64xbf16>, %b3: tensor<64xbf16>,
                    %v: tensor<10xf16>, %bv: tensor<10xf16>) {
  %0 = train.bias_add %x, %b : tensor<32x128xf32>, tensor<128xf32>
  %1 = train.bias_add %x3, %b3 : tensor<2x16x64xbf16>, tensor<64xbf16>
  %2 = train.bias_add %v, %bv : tensor<10xf16>, tensor<10xf16>
  return
}

// Causal masking with -inf (printed as its bit pattern) before a softmax and
// with 0 for the gradient.
// CHECK-LABEL: func.func @causal_mask
// CHECK-SAME:    (%[[S:.*]]: tensor<2x4x16x16xf32>, %[[H:.*]]: tensor<16x16xf16>)
// CHECK-NEXT:    %masked = train.causal_mask %[[S]] fill 0xFFF0000000000000 : tensor<2x4x16x16xf32>
// CHECK-NEXT:    %[[M:.*]] = train.causal_mask %[[S]] fill 0.000000e+00 : tensor<2x4x16x16xf32>
// CHECK-NEXT:    %[[MH:.*]] = train.causal_mask %[[H]] fill -1.000000e+04 : tensor<16x16xf16>
func.func @causal_mask(%scores: tensor<2x4x16x16xf32>, %h: tensor<16x16xf16>) {
  %0 = train.causal_mask %scores fill 0xFFF0000000000000 : tensor<2x4x16x16xf32>
  %1 = train.causal_mask %scores fill 0.0 : tensor<2x4x16x16xf32>
  %2 = train.causal_mask %h fill -1.0e4 : tensor<16x16xf16>
  return
}

// A tokenizer's attention_mask [batch, keys] on attention scores: padding
// keys filled with -inf before a safe softmax (a query with no key left gets
// zeros), and with 0 for the gradient.
// CHECK-LABEL: func.func @key_mask
// CHECK-SAME:    (%[[S:.*]]: tensor<2x4x16x16xf32>, %[[K:.*]]: tensor<2x16xi64>)
// CHECK-NEXT:    %masked = train.key_mask %[[S]], %[[K]] fill 0xFFF0000000000000 : tensor<2x4x16x16xf32>, tensor<2x16xi64>
// CHECK-NEXT:    %softmax = train.softmax %masked safe : tensor<2x4x16x16xf32>
// CHECK-NEXT:    %{{.*}} = train.key_mask %softmax, %[[K]] fill 0.000000e+00 : tensor<2x4x16x16xf32>, tensor<2x16xi64>
func.func @key_mask(%scores: tensor<2x4x16x16xf32>, %keep: tensor<2x16xi64>) {
  %0 = train.key_mask %scores, %keep fill 0xFFF0000000000000 : tensor<2x4x16x16xf32>, tensor<2x16xi64>
  %1 = train.softmax %0 safe : tensor<2x4x16x16xf32>
  %2 = train.key_mask %1, %keep fill 0.0 : tensor<2x4x16x16xf32>, tensor<2x16xi64>
  return
}

// Dropout at PyTorch's p with its own stream of the step's random draws.
// CHECK-LABEL: func.func @dropout
// CHECK-NEXT:    %dropped = train.dropout %{{.*}} rate 1.000000e-01 stream 0 : tensor<8x16x64xf32>
// CHECK-NEXT:    %{{.*}} = train.dropout %{{.*}} rate 5.000000e-01 stream 1 : tensor<8x16x64xbf16>
func.func @dropout(%h: tensor<8x16x64xf32>, %g: tensor<8x16x64xbf16>) {
  %0 = train.dropout %h rate 0.1 stream 0 : tensor<8x16x64xf32>
  %1 = train.dropout %g rate 0.5 stream 1 : tensor<8x16x64xbf16>
  return
}

// 2-D matmul: [M, K] x [K, N] -> [M, N].
// CHECK-LABEL: func.func @matmul
// CHECK-SAME:    (%[[X:.*]]: tensor<32x784xf32>, %[[W:.*]]: tensor<784x128xf32>)
// CHECK-NEXT:    %mm = train.matmul %[[X]], %[[W]] : tensor<32x784xf32>, tensor<784x128xf32> -> tensor<32x128xf32>
// CHECK-NEXT:    return %mm
func.func @matmul(%x: tensor<32x784xf32>, %w: tensor<784x128xf32>) -> tensor<32x128xf32> {
  %0 = train.matmul %x, %w : tensor<32x784xf32>, tensor<784x128xf32> -> tensor<32x128xf32>
  return %0 : tensor<32x128xf32>
}

// Transposed operands, as in the two matmuls of a linear layer's gradient.
// CHECK-LABEL: func.func @matmul_transpose
// CHECK-SAME:    (%[[X:.*]]: tensor<32x784xf32>, %[[DY:.*]]: tensor<32x128xf32>, %[[W:.*]]: tensor<784x128xf32>, %[[A:.*]]: tensor<8x4xbf16>, %[[B:.*]]: tensor<6x8xbf16>)
// CHECK-NEXT:    %mm = train.matmul %[[X]], %[[DY]] transpose_a : tensor<32x784xf32>, tensor<32x128xf32> -> tensor<784x128xf32>
// CHECK-NEXT:    %[[DX:.*]] = train.matmul %[[DY]], %[[W]] transpose_b : tensor<32x128xf32>, tensor<784x128xf32> -> tensor<32x784xf32>
// CHECK-NEXT:    %[[AB:.*]] = train.matmul %[[A]], %[[B]] transpose_a transpose_b : tensor<8x4xbf16>, tensor<6x8xbf16> -> tensor<4x6xbf16>
func.func @matmul_transpose(%x: tensor<32x784xf32>, %dy: tensor<32x128xf32>,
                            %w: tensor<784x128xf32>, %a: tensor<8x4xbf16>,
                            %b: tensor<6x8xbf16>) {
  %dw = train.matmul %x, %dy transpose_a : tensor<32x784xf32>, tensor<32x128xf32> -> tensor<784x128xf32>
  %dx = train.matmul %dy, %w transpose_b : tensor<32x128xf32>, tensor<784x128xf32> -> tensor<32x784xf32>
  %ab = train.matmul %a, %b transpose_a transpose_b : tensor<8x4xbf16>, tensor<6x8xbf16> -> tensor<4x6xbf16>
  return
}

// Batched matmul with equal batch dimensions: attention scores q k^T and the
// weighted values p v.
// CHECK-LABEL: func.func @matmul_batched
// CHECK-SAME:    (%[[Q:.*]]: tensor<2x4x16x16xf32>, %[[K:.*]]: tensor<2x4x16x16xf32>, %[[V:.*]]: tensor<2x4x16x16xf32>, %[[A:.*]]: tensor<3x5x7xf16>, %[[B:.*]]: tensor<3x7x2xf16>)
// CHECK-NEXT:    %mm = train.matmul %[[Q]], %[[K]] transpose_b : tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32> -> tensor<2x4x16x16xf32>
// CHECK-NEXT:    %[[PV:.*]] = train.matmul %mm, %[[V]] : tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32> -> tensor<2x4x16x16xf32>
// CHECK-NEXT:    %[[AB:.*]] = train.matmul %[[A]], %[[B]] : tensor<3x5x7xf16>, tensor<3x7x2xf16> -> tensor<3x5x2xf16>
func.func @matmul_batched(%q: tensor<2x4x16x16xf32>, %k: tensor<2x4x16x16xf32>,
                          %v: tensor<2x4x16x16xf32>, %a: tensor<3x5x7xf16>,
                          %b: tensor<3x7x2xf16>) {
  %s = train.matmul %q, %k transpose_b : tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32> -> tensor<2x4x16x16xf32>
  %o = train.matmul %s, %v : tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32> -> tensor<2x4x16x16xf32>
  %ab = train.matmul %a, %b : tensor<3x5x7xf16>, tensor<3x7x2xf16> -> tensor<3x5x2xf16>
  return
}

// A 2-D right operand shared by every batch (a linear layer on [B, T, C]
// activations), also transposed and with a transposed batched left operand.
// CHECK-LABEL: func.func @matmul_shared_rhs
// CHECK-SAME:    (%[[X:.*]]: tensor<2x16x64xbf16>, %[[W:.*]]: tensor<64x256xbf16>, %[[WT:.*]]: tensor<256x64xbf16>, %[[XT:.*]]: tensor<2x64x16xbf16>)
// CHECK-NEXT:    %mm = train.matmul %[[X]], %[[W]] : tensor<2x16x64xbf16>, tensor<64x256xbf16> -> tensor<2x16x256xbf16>
// CHECK-NEXT:    %[[B:.*]] = train.matmul %[[X]], %[[WT]] transpose_b : tensor<2x16x64xbf16>, tensor<256x64xbf16> -> tensor<2x16x256xbf16>
// CHECK-NEXT:    %[[C:.*]] = train.matmul %[[XT]], %[[W]] transpose_a : tensor<2x64x16xbf16>, tensor<64x256xbf16> -> tensor<2x16x256xbf16>
func.func @matmul_shared_rhs(%x: tensor<2x16x64xbf16>, %w: tensor<64x256xbf16>,
                             %wt: tensor<256x64xbf16>, %xt: tensor<2x64x16xbf16>) {
  %0 = train.matmul %x, %w : tensor<2x16x64xbf16>, tensor<64x256xbf16> -> tensor<2x16x256xbf16>
  %1 = train.matmul %x, %wt transpose_b : tensor<2x16x64xbf16>, tensor<256x64xbf16> -> tensor<2x16x256xbf16>
  %2 = train.matmul %xt, %w transpose_a : tensor<2x64x16xbf16>, tensor<64x256xbf16> -> tensor<2x16x256xbf16>
  return
}

// Softmax over the last dimension.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME:    (%[[S:.*]]: tensor<2x4x16x16xf32>, %[[H:.*]]: tensor<8x10xbf16>)
// CHECK-NEXT:    %softmax = train.softmax %[[S]] : tensor<2x4x16x16xf32>
// CHECK-NEXT:    %{{.*}} = train.softmax %[[H]] : tensor<8x10xbf16>
func.func @softmax(%s: tensor<2x4x16x16xf32>, %h: tensor<8x10xbf16>) {
  %0 = train.softmax %s : tensor<2x4x16x16xf32>
  %1 = train.softmax %h : tensor<8x10xbf16>
  return
}

// Layer norm returns the normalized tensor and the per-row f32 mean and
// reciprocal standard deviation; bf16 inputs keep f32 statistics.
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME:    (%[[X:.*]]: tensor<2x16x64xf32>, %[[G:.*]]: tensor<64xf32>, %[[B:.*]]: tensor<64xf32>, %[[H:.*]]: tensor<8x32xbf16>, %[[HG:.*]]: tensor<32xbf16>)
// CHECK-NEXT:    %ln, %ln_mean, %ln_rstd = train.layer_norm %[[X]], %[[G]], %[[B]] eps 1.000000e-05 : tensor<2x16x64xf32>, tensor<64xf32> -> tensor<2x16xf32>
// CHECK-NEXT:    %{{.*}}, %{{.*}}, %{{.*}} = train.layer_norm %[[H]], %[[HG]], %[[HG]] eps 1.000000e-05 : tensor<8x32xbf16>, tensor<32xbf16> -> tensor<8xf32>
// CHECK-NEXT:    return %ln, %ln_mean, %ln_rstd
func.func @layer_norm(%x: tensor<2x16x64xf32>, %gamma: tensor<64xf32>, %beta: tensor<64xf32>,
                      %h: tensor<8x32xbf16>, %hg: tensor<32xbf16>)
    -> (tensor<2x16x64xf32>, tensor<2x16xf32>, tensor<2x16xf32>) {
  %y, %mean, %rstd = train.layer_norm %x, %gamma, %beta eps 1.0e-05 : tensor<2x16x64xf32>, tensor<64xf32> -> tensor<2x16xf32>
  %hy, %hm, %hr = train.layer_norm %h, %hg, %hg eps 1.0e-05 : tensor<8x32xbf16>, tensor<32xbf16> -> tensor<8xf32>
  return %y, %mean, %rstd : tensor<2x16x64xf32>, tensor<2x16xf32>, tensor<2x16xf32>
}

// Fused attention over [batch, heads, seq, head_dim]: the result has the
// query's type and the per-row log-sum-exp is f32, whatever the input type.
// The gradient recomputes the probabilities from the log-sum-exp.
// CHECK-LABEL: func.func @attention
// CHECK-SAME:    (%[[Q:.*]]: tensor<2x4x16x8xbf16>, %[[K:.*]]: tensor<2x4x16x8xbf16>, %[[V:.*]]: tensor<2x4x16x8xbf16>, %[[DO:.*]]: tensor<2x4x16x8xbf16>)
// CHECK-NEXT:    %attn, %attn_lse = train.attention %[[Q]], %[[K]], %[[V]] scale 3.535500e-01 causal : tensor<2x4x16x8xbf16> -> tensor<2x4x16xf32>
// CHECK-NEXT:    %{{.*}}, %{{.*}} = train.attention %[[Q]], %[[K]], %[[V]] scale 1.000000e+00 : tensor<2x4x16x8xbf16> -> tensor<2x4x16xf32>
// CHECK-NEXT:    %attn_dq, %attn_dk, %attn_dv = train.attention_grad %[[DO]], %[[Q]], %[[K]], %[[V]], %attn, %attn_lse scale 3.535500e-01 causal : tensor<2x4x16x8xbf16> -> tensor<2x4x16xf32>
func.func @attention(%q: tensor<2x4x16x8xbf16>, %k: tensor<2x4x16x8xbf16>,
                     %v: tensor<2x4x16x8xbf16>, %do: tensor<2x4x16x8xbf16>) {
  %o, %lse = train.attention %q, %k, %v scale 0.35355 causal : tensor<2x4x16x8xbf16> -> tensor<2x4x16xf32>
  %o2, %lse2 = train.attention %q, %k, %v scale 1.0 : tensor<2x4x16x8xbf16> -> tensor<2x4x16xf32>
  %dq, %dk, %dv = train.attention_grad %do, %q, %k, %v, %o, %lse scale 0.35355 causal : tensor<2x4x16x8xbf16> -> tensor<2x4x16xf32>
  return
}

// The same attention over seq-major heads, [batch, seq, heads, head_dim]:
// the log-sum-exp is still [batch, heads, seq].
// CHECK-LABEL: func.func @attention_seq_major
// CHECK-NEXT:    %attn, %attn_lse = train.attention %arg0, %arg0, %arg0 scale 1.250000e-01 causal seq_major : tensor<2x16x4x8xbf16> -> tensor<2x4x16xf32>
// CHECK-NEXT:    %attn_dq, %attn_dk, %attn_dv = train.attention_grad %arg0, %arg0, %arg0, %arg0, %attn, %attn_lse scale 1.250000e-01 causal seq_major : tensor<2x16x4x8xbf16> -> tensor<2x4x16xf32>
func.func @attention_seq_major(%q: tensor<2x16x4x8xbf16>) {
  %o, %lse = train.attention %q, %q, %q scale 0.125 causal seq_major : tensor<2x16x4x8xbf16> -> tensor<2x4x16xf32>
  %dq, %dk, %dv = train.attention_grad %q, %q, %q, %q, %o, %lse scale 0.125 causal seq_major : tensor<2x16x4x8xbf16> -> tensor<2x4x16xf32>
  return
}

// Embedding lookup with i32 and i64 ids of any shape.
// CHECK-LABEL: func.func @embedding
// CHECK-SAME:    (%[[WTE:.*]]: tensor<256x64xf32>, %[[TOK:.*]]: tensor<2x16xi32>, %[[WPE:.*]]: tensor<16x64xbf16>, %[[POS:.*]]: tensor<16xi64>)
// CHECK-NEXT:    %embedded = train.embedding %[[WTE]], %[[TOK]] : tensor<256x64xf32>, tensor<2x16xi32> -> tensor<2x16x64xf32>
// CHECK-NEXT:    %{{.*}} = train.embedding %[[WPE]], %[[POS]] : tensor<16x64xbf16>, tensor<16xi64> -> tensor<16x64xbf16>
func.func @embedding(%wte: tensor<256x64xf32>, %tokens: tensor<2x16xi32>,
                     %wpe: tensor<16x64xbf16>, %pos: tensor<16xi64>) {
  %0 = train.embedding %wte, %tokens : tensor<256x64xf32>, tensor<2x16xi32> -> tensor<2x16x64xf32>
  %1 = train.embedding %wpe, %pos : tensor<16x64xbf16>, tensor<16xi64> -> tensor<16x64xbf16>
  return
}

// Mean softmax cross-entropy: logits [..., C] against labels [...], an f32
// scalar even for bf16 logits.
// CHECK-LABEL: func.func @softmax_cross_entropy
// CHECK-SAME:    (%[[L:.*]]: tensor<32x10xf32>, %[[Y:.*]]: tensor<32xi32>, %[[L3:.*]]: tensor<2x16x256xbf16>, %[[Y3:.*]]: tensor<2x16xi64>)
// CHECK-NEXT:    %loss = train.softmax_cross_entropy %[[L]], %[[Y]] : tensor<32x10xf32>, tensor<32xi32> -> tensor<f32>
// CHECK-NEXT:    %{{.*}} = train.softmax_cross_entropy %[[L3]], %[[Y3]] : tensor<2x16x256xbf16>, tensor<2x16xi64> -> tensor<f32>
func.func @softmax_cross_entropy(%logits: tensor<32x10xf32>, %labels: tensor<32xi32>,
                                 %logits3: tensor<2x16x256xbf16>, %labels3: tensor<2x16xi64>) {
  %0 = train.softmax_cross_entropy %logits, %labels : tensor<32x10xf32>, tensor<32xi32> -> tensor<f32>
  %1 = train.softmax_cross_entropy %logits3, %labels3 : tensor<2x16x256xbf16>, tensor<2x16xi64> -> tensor<f32>
  return
}

// A loss that ignores labels (PyTorch's ignore_index) divides by the count
// of the others, an operand that dist-data-parallel can average over ranks.
// CHECK-LABEL: func.func @ignored_labels
// CHECK-SAME:    (%[[L:.*]]: tensor<2x16x256xf32>, %[[Y:.*]]: tensor<2x16xi64>, %[[ONE:.*]]: tensor<f32>)
// CHECK-NEXT:    %count = train.count_labels %[[Y]] {ignore_index = -100 : i64} : tensor<2x16xi64> -> tensor<f32>
// CHECK-NEXT:    %loss = train.softmax_cross_entropy %[[L]], %[[Y]] count %count {ignore_index = -100 : i64} : tensor<2x16x256xf32>, tensor<2x16xi64> -> tensor<f32>
// CHECK-NEXT:    %logits_grad = train.softmax_cross_entropy_grad %[[L]], %[[Y]], %[[ONE]] count %count {ignore_index = -100 : i64} : tensor<2x16x256xf32>, tensor<2x16xi64>
func.func @ignored_labels(%logits: tensor<2x16x256xf32>, %labels: tensor<2x16xi64>, %one: tensor<f32>) {
  %count = train.count_labels %labels {ignore_index = -100 : i64} : tensor<2x16xi64> -> tensor<f32>
  %0 = train.softmax_cross_entropy %logits, %labels count %count {ignore_index = -100 : i64} : tensor<2x16x256xf32>, tensor<2x16xi64> -> tensor<f32>
  %1 = train.softmax_cross_entropy_grad %logits, %labels, %one count %count {ignore_index = -100 : i64} : tensor<2x16x256xf32>, tensor<2x16xi64>
  return
}

// Sum and mean over ascending dims, dropping them, down to a scalar.
// CHECK-LABEL: func.func @reductions
// CHECK-SAME:    (%[[X:.*]]: tensor<32x128xf32>, %[[Y:.*]]: tensor<2x16x64xbf16>)
// CHECK-NEXT:    %reduced = train.reduce_sum %[[X]] dims [0] : tensor<32x128xf32> -> tensor<128xf32>
// CHECK-NEXT:    %{{.*}} = train.reduce_sum %[[Y]] dims [0, 1] : tensor<2x16x64xbf16> -> tensor<64xbf16>
// CHECK-NEXT:    %{{.*}} = train.reduce_mean %[[Y]] dims [2] : tensor<2x16x64xbf16> -> tensor<2x16xbf16>
// CHECK-NEXT:    %{{.*}} = train.reduce_mean %[[X]] dims [0, 1] : tensor<32x128xf32> -> tensor<f32>
// CHECK-NEXT:    %{{.*}} = train.reduce_sum %[[X]] dims [] : tensor<32x128xf32> -> tensor<32x128xf32>
func.func @reductions(%x: tensor<32x128xf32>, %y: tensor<2x16x64xbf16>) {
  %0 = train.reduce_sum %x dims [0] : tensor<32x128xf32> -> tensor<128xf32>
  %1 = train.reduce_sum %y dims [0, 1] : tensor<2x16x64xbf16> -> tensor<64xbf16>
  %2 = train.reduce_mean %y dims [2] : tensor<2x16x64xbf16> -> tensor<2x16xbf16>
  %3 = train.reduce_mean %x dims [0, 1] : tensor<32x128xf32> -> tensor<f32>
  %4 = train.reduce_sum %x dims [] : tensor<32x128xf32> -> tensor<32x128xf32>
  return
}

// Expand inserts new dimensions at `dims`: the inverse of reduce_sum.
// CHECK-LABEL: func.func @expand
// CHECK-SAME:    (%[[DB:.*]]: tensor<128xf32>, %[[S:.*]]: tensor<f16>, %[[R:.*]]: tensor<2x16xbf16>)
// CHECK-NEXT:    %expanded = train.expand %[[DB]] dims [0] : tensor<128xf32> -> tensor<32x128xf32>
// CHECK-NEXT:    %{{.*}} = train.expand %[[S]] dims [0, 1] : tensor<f16> -> tensor<4x8xf16>
// CHECK-NEXT:    %{{.*}} = train.expand %[[R]] dims [2] : tensor<2x16xbf16> -> tensor<2x16x64xbf16>
func.func @expand(%db: tensor<128xf32>, %s: tensor<f16>, %r: tensor<2x16xbf16>) {
  %0 = train.expand %db dims [0] : tensor<128xf32> -> tensor<32x128xf32>
  %1 = train.expand %s dims [0, 1] : tensor<f16> -> tensor<4x8xf16>
  %2 = train.expand %r dims [2] : tensor<2x16xbf16> -> tensor<2x16x64xbf16>
  return
}

// Reshape keeps the element count; it also applies to integer tensors.
// CHECK-LABEL: func.func @reshape
// CHECK-SAME:    (%[[X:.*]]: tensor<2x16x64xf32>, %[[T:.*]]: tensor<2x16xi32>, %[[S:.*]]: tensor<1xbf16>)
// CHECK-NEXT:    %reshaped = train.reshape %[[X]] : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
// CHECK-NEXT:    %{{.*}} = train.reshape %[[X]] : tensor<2x16x64xf32> -> tensor<32x64xf32>
// CHECK-NEXT:    %{{.*}} = train.reshape %[[T]] : tensor<2x16xi32> -> tensor<32xi32>
// CHECK-NEXT:    %{{.*}} = train.reshape %[[S]] : tensor<1xbf16> -> tensor<bf16>
func.func @reshape(%x: tensor<2x16x64xf32>, %tokens: tensor<2x16xi32>, %s: tensor<1xbf16>) {
  %0 = train.reshape %x : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  %1 = train.reshape %x : tensor<2x16x64xf32> -> tensor<32x64xf32>
  %2 = train.reshape %tokens : tensor<2x16xi32> -> tensor<32xi32>
  %3 = train.reshape %s : tensor<1xbf16> -> tensor<bf16>
  return
}

// Transpose: result dim i is input dim permutation[i].
// CHECK-LABEL: func.func @transpose
// CHECK-SAME:    (%[[H:.*]]: tensor<2x16x4x16xf32>, %[[M:.*]]: tensor<3x5xf16>)
// CHECK-NEXT:    %transposed = train.transpose %[[H]] permutation [0, 2, 1, 3] : tensor<2x16x4x16xf32> -> tensor<2x4x16x16xf32>
// CHECK-NEXT:    %{{.*}} = train.transpose %[[M]] permutation [1, 0] : tensor<3x5xf16> -> tensor<5x3xf16>
// CHECK-NEXT:    %{{.*}} = train.transpose %[[M]] permutation [0, 1] : tensor<3x5xf16> -> tensor<3x5xf16>
func.func @transpose(%h: tensor<2x16x4x16xf32>, %m: tensor<3x5xf16>) {
  %0 = train.transpose %h permutation [0, 2, 1, 3] : tensor<2x16x4x16xf32> -> tensor<2x4x16x16xf32>
  %1 = train.transpose %m permutation [1, 0] : tensor<3x5xf16> -> tensor<5x3xf16>
  %2 = train.transpose %m permutation [0, 1] : tensor<3x5xf16> -> tensor<3x5xf16>
  return
}

// Casts between f32, bf16 and f16. A same-type cast is valid (and folds
// away under canonicalization); the round trip keeps it.
// CHECK-LABEL: func.func @cast
// CHECK-SAME:    (%[[M:.*]]: tensor<128xf32>, %[[G:.*]]: tensor<4x8xbf16>)
// CHECK-NEXT:    %cast = train.cast %[[M]] : tensor<128xf32> -> tensor<128xbf16>
// CHECK-NEXT:    %{{.*}} = train.cast %[[M]] : tensor<128xf32> -> tensor<128xf16>
// CHECK-NEXT:    %{{.*}} = train.cast %[[G]] : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK-NEXT:    %{{.*}} = train.cast %[[G]] : tensor<4x8xbf16> -> tensor<4x8xf16>
// CHECK-NEXT:    %{{.*}} = train.cast %[[M]] : tensor<128xf32> -> tensor<128xf32>
func.func @cast(%master: tensor<128xf32>, %g: tensor<4x8xbf16>) {
  %0 = train.cast %master : tensor<128xf32> -> tensor<128xbf16>
  %1 = train.cast %master : tensor<128xf32> -> tensor<128xf16>
  %2 = train.cast %g : tensor<4x8xbf16> -> tensor<4x8xf32>
  %3 = train.cast %g : tensor<4x8xbf16> -> tensor<4x8xf16>
  %4 = train.cast %master : tensor<128xf32> -> tensor<128xf32>
  return
}

// Activation gradients from the saved input (relu, gelu) or result (tanh,
// softmax) and the result gradient; each is named %grad.
// CHECK-LABEL: func.func @activation_grads
// CHECK-SAME:    (%[[X:.*]]: tensor<32x128xf32>, %[[DY:.*]]: tensor<32x128xf32>, %[[P:.*]]: tensor<2x4x16x16xbf16>, %[[DP:.*]]: tensor<2x4x16x16xbf16>, %[[H:.*]]: tensor<8xf16>)
// CHECK-NEXT:    %grad = train.relu_grad %[[X]], %[[DY]] : tensor<32x128xf32>
// CHECK-NEXT:    %{{.*}} = train.gelu_grad %[[X]], %[[DY]] : tensor<32x128xf32>
// CHECK-NEXT:    %{{.*}} = train.tanh_grad %[[H]], %[[H]] : tensor<8xf16>
// CHECK-NEXT:    %{{.*}} = train.softmax_grad %[[P]], %[[DP]] : tensor<2x4x16x16xbf16>
// CHECK-NEXT:    %{{.*}} = train.gelu_grad %[[P]], %[[DP]] : tensor<2x4x16x16xbf16>
func.func @activation_grads(%x: tensor<32x128xf32>, %dy: tensor<32x128xf32>,
                            %p: tensor<2x4x16x16xbf16>, %dp: tensor<2x4x16x16xbf16>,
                            %h: tensor<8xf16>) {
  %0 = train.relu_grad %x, %dy : tensor<32x128xf32>
  %1 = train.gelu_grad %x, %dy : tensor<32x128xf32>
  %2 = train.tanh_grad %h, %h : tensor<8xf16>
  %3 = train.softmax_grad %p, %dp : tensor<2x4x16x16xbf16>
  %4 = train.gelu_grad %p, %dp : tensor<2x4x16x16xbf16>
  return
}

// Layer norm gradients with respect to input, scale and shift, from the
// saved f32 per-row statistics; the input may be 16-bit.
// CHECK-LABEL: func.func @layer_norm_grad
// CHECK-SAME:    (%[[DY:.*]]: tensor<2x16x64xf32>, %[[X:.*]]: tensor<2x16x64xf32>, %[[G:.*]]: tensor<64xf32>, %[[MEAN:.*]]: tensor<2x16xf32>, %[[RSTD:.*]]: tensor<2x16xf32>, %[[DYB:.*]]: tensor<8x32xbf16>, %[[XB:.*]]: tensor<8x32xbf16>, %[[GB:.*]]: tensor<32xbf16>, %[[MB:.*]]: tensor<8xf32>)
// CHECK-NEXT:    %ln_dx, %ln_dgamma, %ln_dbeta = train.layer_norm_grad %[[DY]], %[[X]], %[[G]], %[[MEAN]], %[[RSTD]] : tensor<2x16x64xf32>, tensor<64xf32>, tensor<2x16xf32>
// CHECK-NEXT:    %{{.*}}, %{{.*}}, %{{.*}} = train.layer_norm_grad %[[DYB]], %[[XB]], %[[GB]], %[[MB]], %[[MB]] : tensor<8x32xbf16>, tensor<32xbf16>, tensor<8xf32>
func.func @layer_norm_grad(%dy: tensor<2x16x64xf32>, %x: tensor<2x16x64xf32>,
                           %gamma: tensor<64xf32>, %mean: tensor<2x16xf32>,
                           %rstd: tensor<2x16xf32>, %dyb: tensor<8x32xbf16>,
                           %xb: tensor<8x32xbf16>, %gb: tensor<32xbf16>,
                           %mb: tensor<8xf32>) {
  %dx, %dgamma, %dbeta = train.layer_norm_grad %dy, %x, %gamma, %mean, %rstd : tensor<2x16x64xf32>, tensor<64xf32>, tensor<2x16xf32>
  %0:3 = train.layer_norm_grad %dyb, %xb, %gb, %mb, %mb : tensor<8x32xbf16>, tensor<32xbf16>, tensor<8xf32>
  return
}

// Embedding gradient: scatter-add of the row gradients into the table shape.
// CHECK-LABEL: func.func @embedding_grad
// CHECK-SAME:    (%[[DE:.*]]: tensor<2x16x64xf32>, %[[TOK:.*]]: tensor<2x16xi32>, %[[DP:.*]]: tensor<16x64xbf16>, %[[POS:.*]]: tensor<16xi64>)
// CHECK-NEXT:    %table_grad = train.embedding_grad %[[DE]], %[[TOK]] : tensor<2x16x64xf32>, tensor<2x16xi32> -> tensor<256x64xf32>
// CHECK-NEXT:    %{{.*}} = train.embedding_grad %[[DP]], %[[POS]] : tensor<16x64xbf16>, tensor<16xi64> -> tensor<16x64xbf16>
func.func @embedding_grad(%de: tensor<2x16x64xf32>, %tokens: tensor<2x16xi32>,
                          %dp: tensor<16x64xbf16>, %pos: tensor<16xi64>) {
  %0 = train.embedding_grad %de, %tokens : tensor<2x16x64xf32>, tensor<2x16xi32> -> tensor<256x64xf32>
  %1 = train.embedding_grad %dp, %pos : tensor<16x64xbf16>, tensor<16xi64> -> tensor<16x64xbf16>
  return
}

// Softmax cross-entropy gradient with respect to the logits, seeded by the
// f32 loss gradient; the result has the logits' type.
// CHECK-LABEL: func.func @softmax_cross_entropy_grad
// CHECK-SAME:    (%[[L:.*]]: tensor<32x10xf32>, %[[Y:.*]]: tensor<32xi32>, %[[L3:.*]]: tensor<2x16x256xbf16>, %[[Y3:.*]]: tensor<2x16xi64>)
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %logits_grad = train.softmax_cross_entropy_grad %[[L]], %[[Y]], %[[ONE]] : tensor<32x10xf32>, tensor<32xi32>
// CHECK-NEXT:    %{{.*}} = train.softmax_cross_entropy_grad %[[L3]], %[[Y3]], %[[ONE]] : tensor<2x16x256xbf16>, tensor<2x16xi64>
func.func @softmax_cross_entropy_grad(%logits: tensor<32x10xf32>, %labels: tensor<32xi32>,
                                      %logits3: tensor<2x16x256xbf16>, %labels3: tensor<2x16xi64>) {
  %one = arith.constant dense<1.0> : tensor<f32>
  %0 = train.softmax_cross_entropy_grad %logits, %labels, %one : tensor<32x10xf32>, tensor<32xi32>
  %1 = train.softmax_cross_entropy_grad %logits3, %labels3, %one : tensor<2x16x256xbf16>, tensor<2x16xi64>
  return
}

// The logistic activations Llama's SwiGLU uses, and their gradients: the
// sigmoid's from its result, SiLU's from its input.
// CHECK-LABEL: func.func @logistic
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<2x3xbf16>, %[[DY:.*]]: tensor<4x8xf32>)
// CHECK-NEXT:    %sigmoid = train.sigmoid %[[X]] : tensor<4x8xf32>
// CHECK-NEXT:    %silu = train.silu %[[B]] : tensor<2x3xbf16>
// CHECK-NEXT:    %grad = train.sigmoid_grad %sigmoid, %[[DY]] : tensor<4x8xf32>
// CHECK-NEXT:    %grad_0 = train.silu_grad %[[X]], %[[DY]] : tensor<4x8xf32>
func.func @logistic(%x: tensor<4x8xf32>, %b: tensor<2x3xbf16>, %dy: tensor<4x8xf32>) {
  %s = train.sigmoid %x : tensor<4x8xf32>
  %0 = train.silu %b : tensor<2x3xbf16>
  %1 = train.sigmoid_grad %s, %dy : tensor<4x8xf32>
  %2 = train.silu_grad %x, %dy : tensor<4x8xf32>
  return
}

// Data movement along one dimension: GPT-2's fused query/key/value split
// by slices, a slice's gradient padded back, the rotary rotate-half as a
// concat, and the shifted labels of a causal-LM loss (integer slices).
// CHECK-LABEL: func.func @slice_pad_concat
// CHECK-SAME:    (%[[QKV:.*]]: tensor<2x16x192xf32>, %[[IDS:.*]]: tensor<2x16xi64>, %[[H:.*]]: tensor<2x4x16x8xbf16>)
// CHECK-NEXT:    %sliced = train.slice %[[QKV]] dim 2 offset 64 : tensor<2x16x192xf32> -> tensor<2x16x64xf32>
// CHECK-NEXT:    %padded = train.pad %sliced dim 2 offset 64 : tensor<2x16x64xf32> -> tensor<2x16x192xf32>
// CHECK-NEXT:    %sliced_0 = train.slice %[[IDS]] dim 1 offset 1 : tensor<2x16xi64> -> tensor<2x15xi64>
// CHECK-NEXT:    %concat = train.concat %[[H]], %[[H]] dim 3 : tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16> -> tensor<2x4x16x16xbf16>
// CHECK-NEXT:    %concat_1 = train.concat %sliced dim 0 : tensor<2x16x64xf32> -> tensor<2x16x64xf32>
func.func @slice_pad_concat(%qkv: tensor<2x16x192xf32>, %ids: tensor<2x16xi64>,
                            %h: tensor<2x4x16x8xbf16>) {
  %k = train.slice %qkv dim 2 offset 64 : tensor<2x16x192xf32> -> tensor<2x16x64xf32>
  %0 = train.pad %k dim 2 offset 64 : tensor<2x16x64xf32> -> tensor<2x16x192xf32>
  %1 = train.slice %ids dim 1 offset 1 : tensor<2x16xi64> -> tensor<2x15xi64>
  %2 = train.concat %h, %h dim 3 : tensor<2x4x16x8xbf16>, tensor<2x4x16x8xbf16> -> tensor<2x4x16x16xbf16>
  %3 = train.concat %k dim 0 : tensor<2x16x64xf32> -> tensor<2x16x64xf32>
  return
}

// The fused matmuls train-fuse-epilogues writes: a linear layer with its
// bias (and GELU, keeping its input), the gradient through the GELU, and a
// weight gradient with its bias gradient.
// CHECK-LABEL: func.func @fused_matmuls
// CHECK-NEXT:    %linear = train.matmul_bias %{{.+}}, %{{.+}}, %{{.+}} : tensor<2x16x64xbf16>, tensor<64x256xbf16>, tensor<256xbf16> -> tensor<2x16x256xbf16>
// CHECK-NEXT:    %linear_0, %linear_1 = train.matmul_bias_gelu %{{.+}}, %{{.+}}, %{{.+}} exact : tensor<2x16x64xbf16>, tensor<64x256xbf16>, tensor<256xbf16> -> tensor<2x16x256xbf16>
// CHECK-NEXT:    %grad = train.matmul_gelu_grad %{{.+}}, %{{.+}}, %linear_1 transpose_b : tensor<2x16x64xbf16>, tensor<256x64xbf16> -> tensor<2x16x256xbf16>
// CHECK-NEXT:    %wgrad, %wgrad_2 = train.matmul_bias_grad %{{.+}}, %{{.+}} transpose_a : tensor<32x64xbf16>, tensor<32x256xbf16> -> tensor<64x256xbf16>, tensor<256xbf16>
func.func @fused_matmuls(%x: tensor<2x16x64xbf16>, %w: tensor<64x256xbf16>, %b: tensor<256xbf16>,
                         %dy: tensor<2x16x64xbf16>, %w2: tensor<256x64xbf16>,
                         %xrows: tensor<32x64xbf16>, %dyrows: tensor<32x256xbf16>) {
  %y = train.matmul_bias %x, %w, %b : tensor<2x16x64xbf16>, tensor<64x256xbf16>, tensor<256xbf16> -> tensor<2x16x256xbf16>
  %h, %pre = train.matmul_bias_gelu %x, %w, %b exact : tensor<2x16x64xbf16>, tensor<64x256xbf16>, tensor<256xbf16> -> tensor<2x16x256xbf16>
  %dpre = train.matmul_gelu_grad %dy, %w2, %pre transpose_b : tensor<2x16x64xbf16>, tensor<256x64xbf16> -> tensor<2x16x256xbf16>
  %dw, %db = train.matmul_bias_grad %xrows, %dyrows transpose_a : tensor<32x64xbf16>, tensor<32x256xbf16> -> tensor<64x256xbf16>, tensor<256xbf16>
  return
}

// A residual add with the layer norm of its sum (train-fuse-residual-norm):
// the sum, then the norm's three results.
// CHECK-LABEL: func.func @add_layer_norm
// CHECK-NEXT:    %sum, %ln, %ln_mean, %ln_rstd = train.add_layer_norm %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} eps 1.000000e-05 : tensor<2x16x64xbf16>, tensor<64xbf16> -> tensor<2x16xf32>
func.func @add_layer_norm(%x: tensor<2x16x64xbf16>, %h: tensor<2x16x64xbf16>, %g: tensor<64xbf16>) {
  %s, %y, %m, %r = train.add_layer_norm %x, %h, %g, %g eps 1.0e-05 : tensor<2x16x64xbf16>, tensor<64xbf16> -> tensor<2x16xf32>
  return
}
