// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-fuse-residual-norm)" | FileCheck %s
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-fuse-residual-norm,train-fuse-residual-norm)" | FileCheck %s

// train-fuse-residual-norm normalizes a residual sum as it computes it:
// `layer_norm(add(a, b))` becomes `train.add_layer_norm`, which still
// returns the sum for the residual stream. Running it twice changes nothing
// more (second RUN line).

// Two pre-norm blocks' residual connections, as GPT-2 writes them: the
// stream %x plus the attention's output, normalized for the MLP, then plus
// the MLP's output, normalized by the final norm. Each add and its norm
// become one op at the add (the norms' scale and shift are arguments,
// ready there); the stream reads the fused sums, and the statistics go to
// the backward as before.

// CHECK-LABEL: func.func @blocks
// CHECK-SAME:      (%[[X:.+]]: tensor<2x16x64xbf16>, %[[ATTN:.+]]: tensor<2x16x64xbf16>, %[[G:.+]]: tensor<64xbf16>, %[[B:.+]]: tensor<64xbf16>, %[[GF:.+]]: tensor<64xbf16>, %[[BF:.+]]: tensor<64xbf16>)
// CHECK-NEXT:    %[[S1:.+]], %[[Y1:.+]], %[[M1:.+]], %[[R1:.+]] = train.add_layer_norm %[[X]], %[[ATTN]], %[[G]], %[[B]] eps 1.000000e-05 : tensor<2x16x64xbf16>, tensor<64xbf16> -> tensor<2x16xf32>
// CHECK-NEXT:    %[[MLP:.+]] = train.gelu %[[Y1]]
// CHECK-NEXT:    %[[S2:.+]], %[[Y2:.+]], %[[M2:.+]], %[[R2:.+]] = train.add_layer_norm %[[S1]], %[[MLP]], %[[GF]], %[[BF]] eps 1.000000e-05 : tensor<2x16x64xbf16>, tensor<64xbf16> -> tensor<2x16xf32>
// CHECK-NEXT:    return %[[Y2]], %[[S2]], %[[M1]], %[[R1]], %[[M2]], %[[R2]]
// CHECK-NOT:     train.add
func.func @blocks(%x: tensor<2x16x64xbf16>, %attn: tensor<2x16x64xbf16>,
                  %g: tensor<64xbf16>, %b: tensor<64xbf16>,
                  %gf: tensor<64xbf16>, %bf: tensor<64xbf16>)
    -> (tensor<2x16x64xbf16>, tensor<2x16x64xbf16>, tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>) {
  %x1 = train.add %x, %attn : tensor<2x16x64xbf16>
  %y1, %m1, %r1 = train.layer_norm %x1, %g, %b eps 1.0e-05 : tensor<2x16x64xbf16>, tensor<64xbf16> -> tensor<2x16xf32>
  %mlp = train.gelu %y1 : tensor<2x16x64xbf16>
  %x2 = train.add %x1, %mlp : tensor<2x16x64xbf16>
  %y2, %m2, %r2 = train.layer_norm %x2, %gf, %bf eps 1.0e-05 : tensor<2x16x64xbf16>, tensor<64xbf16> -> tensor<2x16xf32>
  return %y2, %x2, %m1, %r1, %m2, %r2 : tensor<2x16x64xbf16>, tensor<2x16x64xbf16>, tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>, tensor<2x16xf32>
}

// -----

// A scale computed after the add (under stage 3, a gathered one): the fused
// op stands at the norm, where nothing between reads the sum.

// CHECK-LABEL: func.func @scale_after_add
// CHECK-NEXT:    %[[G:.+]] = train.scale
// CHECK-NEXT:    %{{.+}}, %[[Y:.+]], %{{.+}}, %{{.+}} = train.add_layer_norm %arg0, %arg1, %[[G]], %arg2
// CHECK-NEXT:    return %[[Y]]
func.func @scale_after_add(%a: tensor<8x32xf32>, %h: tensor<8x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %s = train.add %a, %h : tensor<8x32xf32>
  %g = train.scale %b by 2.0 : tensor<32xf32>
  %y, %m, %r = train.layer_norm %s, %g, %b eps 1.0e-05 : tensor<8x32xf32>, tensor<32xf32> -> tensor<8xf32>
  return %y : tensor<8x32xf32>
}

// -----

// Neither point serves: the scale is computed after the add, and an op
// between the two reads the sum (it would read it before it exists). Both
// stay.

// CHECK-LABEL: func.func @sum_read_between
// CHECK-NEXT:    train.add
// CHECK-NEXT:    train.scale
// CHECK-NEXT:    train.tanh
// CHECK-NEXT:    train.layer_norm
func.func @sum_read_between(%a: tensor<8x32xf32>, %h: tensor<8x32xf32>, %b: tensor<32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %s = train.add %a, %h : tensor<8x32xf32>
  %g = train.scale %b by 2.0 : tensor<32xf32>
  %t = train.tanh %s : tensor<8x32xf32>
  %y, %m, %r = train.layer_norm %s, %g, %b eps 1.0e-05 : tensor<8x32xf32>, tensor<32xf32> -> tensor<8xf32>
  return %y, %t : tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

// An add recomputed for the backward and a norm that is not (or the other
// way): fusing would recompute, or stop recomputing, one of them. Both stay.
// A norm of anything but an add (here a sub) is left alone too.

// CHECK-LABEL: func.func @mixed_recompute
// CHECK-NEXT:    train.add %arg0, %arg1 {train.recomputed}
// CHECK-NEXT:    train.layer_norm
// CHECK-NEXT:    train.sub
// CHECK-NEXT:    train.layer_norm
func.func @mixed_recompute(%a: tensor<8x32xf32>, %h: tensor<8x32xf32>, %g: tensor<32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %s = train.add %a, %h {train.recomputed} : tensor<8x32xf32>
  %y, %m, %r = train.layer_norm %s, %g, %g eps 1.0e-05 : tensor<8x32xf32>, tensor<32xf32> -> tensor<8xf32>
  %d = train.sub %a, %h : tensor<8x32xf32>
  %z, %m2, %r2 = train.layer_norm %d, %g, %g eps 1.0e-05 : tensor<8x32xf32>, tensor<32xf32> -> tensor<8xf32>
  return %y, %z : tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

// Both recomputed: fused, and the fused op is recomputed too.

// CHECK-LABEL: func.func @both_recomputed
// CHECK-NEXT:    train.add_layer_norm %arg0, %arg1, %arg2, %arg2 eps 1.000000e-05 {train.recomputed}
func.func @both_recomputed(%a: tensor<8x32xf32>, %h: tensor<8x32xf32>, %g: tensor<32xf32>) -> tensor<8x32xf32> {
  %s = train.add %a, %h {train.recomputed} : tensor<8x32xf32>
  %y, %m, %r = train.layer_norm %s, %g, %g eps 1.0e-05 {train.recomputed} : tensor<8x32xf32>, tensor<32xf32> -> tensor<8xf32>
  return %y : tensor<8x32xf32>
}
