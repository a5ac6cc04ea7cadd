// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-fuse-epilogues)" | FileCheck %s
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-fuse-epilogues,train-fuse-epilogues)" | FileCheck %s

// train-fuse-epilogues writes the matmuls that cuBLASLt runs with an
// epilogue. Running it twice changes nothing more (second RUN line).

// A GPT-2 MLP block, forward and backward as train-autodiff writes it: the
// first linear layer's bias and GELU go into its matmul, which keeps the
// GELU's input (%pre) for the backward; the second layer's bias; the
// gradient through the GELU into the matmul that computes it; each weight
// gradient with its bias gradient, from the same output gradient. Where
// each stands lengthens no tensor's life: a linear layer at its matmul, a
// weight gradient (with the bias gradient computed before it) at the
// weight gradient. A weight gradient computed before its bias gradient
// (@weight_first) takes the bias gradient up with it.

// CHECK-LABEL: func.func @mlp
// CHECK-SAME:      (%[[X:.+]]: tensor<32x64xf32>, %[[W1:.+]]: tensor<64x256xf32>, %[[B1:.+]]: tensor<256xf32>, %[[W2:.+]]: tensor<256x64xf32>, %[[B2:.+]]: tensor<64xf32>, %[[DY:.+]]: tensor<32x64xf32>)
// CHECK-NEXT:    %[[H:.+]], %[[PRE:.+]] = train.matmul_bias_gelu %[[X]], %[[W1]], %[[B1]] : tensor<32x64xf32>, tensor<64x256xf32>, tensor<256xf32> -> tensor<32x256xf32>
// CHECK-NEXT:    %[[Y:.+]] = train.matmul_bias %[[H]], %[[W2]], %[[B2]] : tensor<32x256xf32>, tensor<256x64xf32>, tensor<64xf32> -> tensor<32x64xf32>
// CHECK-NEXT:    %[[DPRE:.+]] = train.matmul_gelu_grad %[[DY]], %[[W2]], %[[PRE]] transpose_b : tensor<32x64xf32>, tensor<256x64xf32> -> tensor<32x256xf32>
// CHECK-NEXT:    %[[DW2:.+]], %[[DB2:.+]] = train.matmul_bias_grad %[[H]], %[[DY]] transpose_a : tensor<32x256xf32>, tensor<32x64xf32> -> tensor<256x64xf32>, tensor<64xf32>
// CHECK-NEXT:    %[[DX:.+]] = train.matmul %[[DPRE]], %[[W1]] transpose_b
// CHECK-NEXT:    %[[DW1:.+]], %[[DB1:.+]] = train.matmul_bias_grad %[[X]], %[[DPRE]] transpose_a : tensor<32x64xf32>, tensor<32x256xf32> -> tensor<64x256xf32>, tensor<256xf32>
// CHECK-NEXT:    return %[[Y]], %[[DW1]], %[[DB1]], %[[DW2]], %[[DB2]], %[[DX]]
func.func @mlp(%x: tensor<32x64xf32>, %w1: tensor<64x256xf32>, %b1: tensor<256xf32>,
               %w2: tensor<256x64xf32>, %b2: tensor<64xf32>, %dy: tensor<32x64xf32>)
    -> (tensor<32x64xf32>, tensor<64x256xf32>, tensor<256xf32>, tensor<256x64xf32>, tensor<64xf32>, tensor<32x64xf32>) {
  %mm1 = train.matmul %x, %w1 : tensor<32x64xf32>, tensor<64x256xf32> -> tensor<32x256xf32>
  %pre = train.bias_add %mm1, %b1 : tensor<32x256xf32>, tensor<256xf32>
  %h = train.gelu %pre : tensor<32x256xf32>
  %mm2 = train.matmul %h, %w2 : tensor<32x256xf32>, tensor<256x64xf32> -> tensor<32x64xf32>
  %y = train.bias_add %mm2, %b2 : tensor<32x64xf32>, tensor<64xf32>
  %db2 = train.reduce_sum %dy dims [0] : tensor<32x64xf32> -> tensor<64xf32>
  %dh = train.matmul %dy, %w2 transpose_b : tensor<32x64xf32>, tensor<256x64xf32> -> tensor<32x256xf32>
  %dw2 = train.matmul %h, %dy transpose_a : tensor<32x256xf32>, tensor<32x64xf32> -> tensor<256x64xf32>
  %dpre = train.gelu_grad %pre, %dh : tensor<32x256xf32>
  %db1 = train.reduce_sum %dpre dims [0] : tensor<32x256xf32> -> tensor<256xf32>
  %dx = train.matmul %dpre, %w1 transpose_b : tensor<32x256xf32>, tensor<64x256xf32> -> tensor<32x64xf32>
  %dw1 = train.matmul %x, %dpre transpose_a : tensor<32x64xf32>, tensor<32x256xf32> -> tensor<64x256xf32>
  return %y, %dw1, %db1, %dw2, %db2, %dx : tensor<32x64xf32>, tensor<64x256xf32>, tensor<256xf32>, tensor<256x64xf32>, tensor<64xf32>, tensor<32x64xf32>
}

// -----

// CHECK-LABEL: func.func @weight_first
// CHECK-NEXT:    %[[DW:.+]], %[[DB:.+]] = train.matmul_bias_grad
// CHECK-NEXT:    train.scale %[[DW]]
// CHECK-NEXT:    return
func.func @weight_first(%x: tensor<8x4xf32>, %dy: tensor<8x6xf32>) -> (tensor<4x6xf32>, tensor<6xf32>) {
  %dw = train.matmul %x, %dy transpose_a : tensor<8x4xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  %scaled = train.scale %dw by 0.5 : tensor<4x6xf32>
  %db = train.reduce_sum %dy dims [0] : tensor<8x6xf32> -> tensor<6xf32>
  return %scaled, %db : tensor<4x6xf32>, tensor<6xf32>
}

// -----

// A batched linear layer ([B, T, C] x [C, N]) is one GEMM over B * T rows:
// its bias fuses, `exact` (erf) GELU included. Its weight gradient reads
// the output gradient reshaped to rows; the bias gradient sums the
// unreshaped one over [0, 1]: the same sums, paired.

// CHECK-LABEL: func.func @batched
// CHECK:         %[[H:.+]], %{{.+}} = train.matmul_bias_gelu %{{.+}}, %{{.+}}, %{{.+}} exact : tensor<2x16x64xbf16>, tensor<64x256xbf16>, tensor<256xbf16> -> tensor<2x16x256xbf16>
// CHECK:         %[[ROWS:.+]] = train.reshape %[[DY:.+]] : tensor<2x16x256xbf16> -> tensor<32x256xbf16>
// CHECK-NEXT:    %{{.+}}, %{{.+}} = train.matmul_bias_grad %{{.+}}, %[[ROWS]] transpose_a : tensor<32x64xbf16>, tensor<32x256xbf16> -> tensor<64x256xbf16>, tensor<256xbf16>
// CHECK-NOT:     train.reduce_sum
func.func @batched(%x: tensor<2x16x64xbf16>, %w: tensor<64x256xbf16>, %b: tensor<256xbf16>,
                   %xrows: tensor<32x64xbf16>, %dy: tensor<2x16x256xbf16>)
    -> (tensor<2x16x256xbf16>, tensor<64x256xbf16>, tensor<256xbf16>) {
  %mm = train.matmul %x, %w : tensor<2x16x64xbf16>, tensor<64x256xbf16> -> tensor<2x16x256xbf16>
  %pre = train.bias_add %mm, %b : tensor<2x16x256xbf16>, tensor<256xbf16>
  %h = train.gelu %pre exact : tensor<2x16x256xbf16>
  %db = train.reduce_sum %dy dims [0, 1] : tensor<2x16x256xbf16> -> tensor<256xbf16>
  %rows = train.reshape %dy : tensor<2x16x256xbf16> -> tensor<32x256xbf16>
  %dw = train.matmul %xrows, %rows transpose_a : tensor<32x64xbf16>, tensor<32x256xbf16> -> tensor<64x256xbf16>
  return %h, %dw, %db : tensor<2x16x256xbf16>, tensor<64x256xbf16>, tensor<256xbf16>
}

// -----

// A bias gradient whose reduction is issued before its weight gradient is
// computed stays apart: fused, the weight gradient would be held from the
// bias gradient's place, longer than the ZeRO passes planned.

// CHECK-LABEL: func.func @used_between
// CHECK-NEXT:    train.reduce_sum
// CHECK-NEXT:    train.scale
// CHECK-NEXT:    train.matmul %{{.+}}, %{{.+}} transpose_a
func.func @used_between(%x: tensor<8x4xf32>, %dy: tensor<8x6xf32>) -> (tensor<4x6xf32>, tensor<6xf32>) {
  %db = train.reduce_sum %dy dims [0] : tensor<8x6xf32> -> tensor<6xf32>
  %scaled = train.scale %db by 0.5 : tensor<6xf32>
  %dw = train.matmul %x, %dy transpose_a : tensor<8x4xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  return %dw, %scaled : tensor<4x6xf32>, tensor<6xf32>
}

// -----

// What stays unfused:
// - a matmul whose result is also returned (a fused op would not keep it);
// - a batched product (attention's scores): its right operand is not a
//   2-D weight;
// - a bias_add of something other than a matmul;
// - a reduction over the last dimension (not a bias gradient);
// - a weight stored transposed, whose gradient reads dy as its left
//   operand (a bias gradient of the left operand has no fused op);
// - a bias gradient whose weight gradient cannot move: its reshape is made
//   after the use of the bias gradient that comes first;
// - a bias gathered between the matmul and the bias_add (stage 3 with
//   allgather-bucket-bytes=0): fused at the bias_add, the weight would wait
//   through the gather, above the peak the ZeRO passes planned.

// CHECK-LABEL: func.func @unfused
// CHECK-NOT:     train.matmul_
// CHECK:         return
module attributes {dist.placement = #dist.placement<cpu, [2]>} {
func.func @unfused(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>, %b: tensor<6xf32>,
                   %q: tensor<2x4x4xf32>, %k: tensor<2x4x4xf32>, %dy: tensor<4x6xf32>,
                   %wt: tensor<6x8xf32>, %dy3: tensor<2x2x6xf32>, %x3: tensor<4x8xf32>,
                   %bshard: tensor<3xf32>)
    -> (tensor<4x6xf32>, tensor<4x6xf32>, tensor<2x4x4xf32>, tensor<4x6xf32>, tensor<4xf32>,
        tensor<6x8xf32>, tensor<6xf32>, tensor<6xf32>, tensor<8x6xf32>, tensor<4x6xf32>) {
  %mm = train.matmul %x, %w : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  %y = train.bias_add %mm, %b : tensor<4x6xf32>, tensor<6xf32>
  %scores = train.matmul %q, %k transpose_b : tensor<2x4x4xf32>, tensor<2x4x4xf32> -> tensor<2x4x4xf32>
  %shifted = train.bias_add %dy, %b : tensor<4x6xf32>, tensor<6xf32>
  %rowsum = train.reduce_sum %dy dims [1] : tensor<4x6xf32> -> tensor<4xf32>
  %dwt = train.matmul %dy, %x transpose_a : tensor<4x6xf32>, tensor<4x8xf32> -> tensor<6x8xf32>
  %db = train.reduce_sum %dy dims [0] : tensor<4x6xf32> -> tensor<6xf32>
  %db3 = train.reduce_sum %dy3 dims [0, 1] : tensor<2x2x6xf32> -> tensor<6xf32>
  %sent = train.scale %db3 by 2.0 : tensor<6xf32>
  %rows = train.reshape %dy3 : tensor<2x2x6xf32> -> tensor<4x6xf32>
  %dw3 = train.matmul %x3, %rows transpose_a : tensor<4x8xf32>, tensor<4x6xf32> -> tensor<8x6xf32>
  %mm4 = train.matmul %x, %w : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  %b4 = dist.all_gather %bshard axis 0 dim 0 : tensor<3xf32> -> tensor<6xf32>
  %y4 = train.bias_add %mm4, %b4 : tensor<4x6xf32>, tensor<6xf32>
  return %mm, %y, %scores, %shifted, %rowsum, %dwt, %db, %sent, %dw3, %y4
      : tensor<4x6xf32>, tensor<4x6xf32>, tensor<2x4x4xf32>, tensor<4x6xf32>, tensor<4xf32>,
        tensor<6x8xf32>, tensor<6xf32>, tensor<6xf32>, tensor<8x6xf32>, tensor<4x6xf32>
}
}
