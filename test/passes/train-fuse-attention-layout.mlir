// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-fuse-attention-layout)" | FileCheck %s
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-fuse-attention-layout,train-fuse-attention-layout)" | FileCheck %s

// train-fuse-attention-layout lets attention read its heads where a linear
// layer wrote them, [batch, seq, heads, head_dim], instead of transposed
// copies [batch, heads, seq, head_dim]: the transposes around
// train.attention and train.attention_grad fold into their `seq_major`
// layout. Running it twice changes nothing more (second RUN line).

// GPT-2's attention as train-autodiff leaves it: the query, key and value
// heads transposed in, the result transposed back out; the result's
// gradient transposed in, the three gradients transposed out. All eight
// transposes go; the log-sum-exp keeps its [batch, heads, seq] shape.

// CHECK-LABEL: func.func @gpt2
// CHECK-SAME:      (%[[Q:.+]]: tensor<2x16x4x8xbf16>, %[[K:.+]]: tensor<2x16x4x8xbf16>, %[[V:.+]]: tensor<2x16x4x8xbf16>, %[[DY:.+]]: tensor<2x16x4x8xbf16>)
// CHECK-NEXT:    %[[O:.+]], %[[LSE:.+]] = train.attention %[[Q]], %[[K]], %[[V]] scale 1.250000e-01 causal seq_major : tensor<2x16x4x8xbf16> -> tensor<2x4x16xf32>
// CHECK-NEXT:    %[[DQ:.+]], %[[DK:.+]], %[[DV:.+]] = train.attention_grad %[[DY]], %[[Q]], %[[K]], %[[V]], %[[O]], %[[LSE]] scale 1.250000e-01 causal seq_major : tensor<2x16x4x8xbf16> -> tensor<2x4x16xf32>
// CHECK-NEXT:    return %[[O]], %[[DQ]], %[[DK]], %[[DV]]
// CHECK-NOT:     train.transpose
func.func @gpt2(%q: tensor<2x16x4x8xbf16>, %k: tensor<2x16x4x8xbf16>,
                %v: tensor<2x16x4x8xbf16>, %dy: tensor<2x16x4x8xbf16>)
    -> (tensor<2x16x4x8xbf16>, tensor<2x16x4x8xbf16>, tensor<2x16x4x8xbf16>, tensor<2x16x4x8xbf16>) {
  %qt = train.transpose %q permutation [0, 2, 1, 3] : tensor<2x16x4x8xbf16> -> tensor<2x4x16x8xbf16>
  %kt = train.transpose %k permutation [0, 2, 1, 3] : tensor<2x16x4x8xbf16> -> tensor<2x4x16x8xbf16>
  %vt = train.transpose %v permutation [0, 2, 1, 3] : tensor<2x16x4x8xbf16> -> tensor<2x4x16x8xbf16>
  %o, %lse = train.attention %qt, %kt, %vt scale 0.125 causal : tensor<2x4x16x8xbf16> -> tensor<2x4x16xf32>
  %ot = train.transpose %o permutation [0, 2, 1, 3] : tensor<2x4x16x8xbf16> -> tensor<2x16x4x8xbf16>
  %dyt = train.transpose %dy permutation [0, 2, 1, 3] : tensor<2x16x4x8xbf16> -> tensor<2x4x16x8xbf16>
  %dq, %dk, %dv = train.attention_grad %dyt, %qt, %kt, %vt, %o, %lse scale 0.125 causal : tensor<2x4x16x8xbf16> -> tensor<2x4x16xf32>
  %dqt = train.transpose %dq permutation [0, 2, 1, 3] : tensor<2x4x16x8xbf16> -> tensor<2x16x4x8xbf16>
  %dkt = train.transpose %dk permutation [0, 2, 1, 3] : tensor<2x4x16x8xbf16> -> tensor<2x16x4x8xbf16>
  %dvt = train.transpose %dv permutation [0, 2, 1, 3] : tensor<2x4x16x8xbf16> -> tensor<2x16x4x8xbf16>
  return %ot, %dqt, %dkt, %dvt : tensor<2x16x4x8xbf16>, tensor<2x16x4x8xbf16>, tensor<2x16x4x8xbf16>, tensor<2x16x4x8xbf16>
}

// -----

// A forward alone (an evaluation step), at rank 3 without a batch: [seq,
// heads, head_dim] swapped by [1, 0, 2]. A transposed query something else
// also reads stays for that reader; the attention still reads the heads in
// place. The discardable attribute of a recomputed forward is kept.

// CHECK-LABEL: func.func @forward_only
// CHECK-NEXT:    %[[QT:.+]] = train.transpose %arg0 permutation [1, 0, 2]
// CHECK-NEXT:    %[[O:.+]], %{{.+}} = train.attention %arg0, %arg1, %arg1 scale 2.500000e-01 seq_major {train.recomputed} : tensor<16x4x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT:    %[[S:.+]] = train.scale %[[QT]]
// CHECK-NEXT:    return %[[O]], %[[S]]
func.func @forward_only(%q: tensor<16x4x16xf32>, %kv: tensor<16x4x16xf32>)
    -> (tensor<16x4x16xf32>, tensor<4x16x16xf32>) {
  %qt = train.transpose %q permutation [1, 0, 2] : tensor<16x4x16xf32> -> tensor<4x16x16xf32>
  %kvt = train.transpose %kv permutation [1, 0, 2] : tensor<16x4x16xf32> -> tensor<4x16x16xf32>
  %o, %lse = train.attention %qt, %kvt, %kvt scale 0.25 {train.recomputed} : tensor<4x16x16xf32> -> tensor<4x16xf32>
  %ot = train.transpose %o permutation [1, 0, 2] : tensor<4x16x16xf32> -> tensor<16x4x16xf32>
  %s = train.scale %qt by 2.0 : tensor<4x16x16xf32>
  return %ot, %s : tensor<16x4x16xf32>, tensor<4x16x16xf32>
}

// -----

// A query that is not a transpose (a rotary embedding applied to the
// transposed heads, as Llama's): the group stays as it is.

// CHECK-LABEL: func.func @rotated_query
// CHECK:         train.attention %{{.+}}, %{{.+}}, %{{.+}} scale 1.250000e-01 causal :
// CHECK:         train.transpose
// CHECK-NOT:     seq_major
func.func @rotated_query(%q: tensor<2x16x4x8xf32>, %kv: tensor<2x16x4x8xf32>) -> tensor<2x16x4x8xf32> {
  %qt = train.transpose %q permutation [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %qr = train.scale %qt by 0.5 : tensor<2x4x16x8xf32>
  %kvt = train.transpose %kv permutation [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %o, %lse = train.attention %qr, %kvt, %kvt scale 0.125 causal : tensor<2x4x16x8xf32> -> tensor<2x4x16xf32>
  %ot = train.transpose %o permutation [0, 2, 1, 3] : tensor<2x4x16x8xf32> -> tensor<2x16x4x8xf32>
  return %ot : tensor<2x16x4x8xf32>
}

// -----

// A result read in [batch, heads, seq, head_dim] by something other than a
// transpose, and a gradient read the same way: both groups stay.

// CHECK-LABEL: func.func @read_transposed
// CHECK-NOT:     seq_major
func.func @read_transposed(%q: tensor<2x16x4x8xf32>, %dy: tensor<2x16x4x8xf32>)
    -> (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) {
  %qt = train.transpose %q permutation [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %o, %lse = train.attention %qt, %qt, %qt scale 0.125 : tensor<2x4x16x8xf32> -> tensor<2x4x16xf32>
  %g = train.gelu %o : tensor<2x4x16x8xf32>
  %o2, %lse2 = train.attention %qt, %qt, %qt scale 0.125 : tensor<2x4x16x8xf32> -> tensor<2x4x16xf32>
  %ot2 = train.transpose %o2 permutation [0, 2, 1, 3] : tensor<2x4x16x8xf32> -> tensor<2x16x4x8xf32>
  %dyt = train.transpose %dy permutation [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %dq, %dk, %dv = train.attention_grad %dyt, %qt, %qt, %qt, %o2, %lse2 scale 0.125 : tensor<2x4x16x8xf32> -> tensor<2x4x16xf32>
  return %g, %dq : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
}

// -----

// Transposes of other dimensions are not a head split: [0, 1, 3, 2] swaps
// seq and head_dim. The group stays.

// CHECK-LABEL: func.func @other_permutation
// CHECK-NOT:     seq_major
func.func @other_permutation(%q: tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %qt = train.transpose %q permutation [0, 1, 3, 2] : tensor<2x4x8x16xf32> -> tensor<2x4x16x8xf32>
  %o, %lse = train.attention %qt, %qt, %qt scale 0.125 : tensor<2x4x16x8xf32> -> tensor<2x4x16xf32>
  %ot = train.transpose %o permutation [0, 1, 3, 2] : tensor<2x4x16x8xf32> -> tensor<2x4x8x16xf32>
  return %ot : tensor<2x4x8x16xf32>
}
