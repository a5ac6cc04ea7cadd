// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-fuse-loss-cast)" | FileCheck %s
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-fuse-loss-cast,train-fuse-loss-cast)" | FileCheck %s

// train-fuse-loss-cast lets cross-entropy read a 16-bit model's logits and
// write their gradient in bf16: the f32 copy of the logits and the f32
// gradient, each as wide as the vocabulary, are gone. Running it twice
// changes nothing more (second RUN line).

// The loss of a bf16 model as the frontends write it and train-autodiff
// differentiates it, with ignored labels: both casts go.

// CHECK-LABEL: func.func @bf16_loss
// CHECK-SAME:      (%[[LOGITS:.+]]: tensor<8x100xbf16>, %[[LABELS:.+]]: tensor<8xi32>, %[[ONE:.+]]: tensor<f32>)
// CHECK-NEXT:    %[[COUNT:.+]] = train.count_labels %[[LABELS]]
// CHECK-NEXT:    %[[LOSS:.+]] = train.softmax_cross_entropy %[[LOGITS]], %[[LABELS]] count %[[COUNT]] {ignore_index = -100 : i64} : tensor<8x100xbf16>, tensor<8xi32> -> tensor<f32>
// CHECK-NEXT:    %[[GRAD:.+]] = train.softmax_cross_entropy_grad %[[LOGITS]], %[[LABELS]], %[[ONE]] count %[[COUNT]] {ignore_index = -100 : i64} : tensor<8x100xbf16>, tensor<8xi32>
// CHECK-NEXT:    return %[[LOSS]], %[[GRAD]] : tensor<f32>, tensor<8x100xbf16>
func.func @bf16_loss(%logits: tensor<8x100xbf16>, %labels: tensor<8xi32>, %one: tensor<f32>)
    -> (tensor<f32>, tensor<8x100xbf16>) {
  %count = train.count_labels %labels {ignore_index = -100 : i64} : tensor<8xi32> -> tensor<f32>
  %wide = train.cast %logits : tensor<8x100xbf16> -> tensor<8x100xf32>
  %loss = train.softmax_cross_entropy %wide, %labels count %count {ignore_index = -100 : i64} : tensor<8x100xf32>, tensor<8xi32> -> tensor<f32>
  %dwide = train.softmax_cross_entropy_grad %wide, %labels, %one count %count {ignore_index = -100 : i64} : tensor<8x100xf32>, tensor<8xi32>
  %dlogits = train.cast %dwide : tensor<8x100xf32> -> tensor<8x100xbf16>
  return %loss, %dlogits : tensor<f32>, tensor<8x100xbf16>
}

// -----

// f16 logits with label smoothing, a forward alone (an evaluation step).

// CHECK-LABEL: func.func @f16_forward
// CHECK-NEXT:    %[[LOSS:.+]] = train.softmax_cross_entropy %arg0, %arg1 {label_smoothing = 1.000000e-01 : f64} : tensor<4x10xf16>, tensor<4xi32> -> tensor<f32>
// CHECK-NEXT:    return %[[LOSS]]
func.func @f16_forward(%logits: tensor<4x10xf16>, %labels: tensor<4xi32>) -> tensor<f32> {
  %wide = train.cast %logits : tensor<4x10xf16> -> tensor<4x10xf32>
  %loss = train.softmax_cross_entropy %wide, %labels {label_smoothing = 0.1 : f64} : tensor<4x10xf32>, tensor<4xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// The f32 logits are read by something else too (here returned, as an
// output of the step would be): they must exist, and the casts stay.

// CHECK-LABEL: func.func @logits_kept
// CHECK:         %[[WIDE:.+]] = train.cast %arg0 : tensor<4x10xbf16> -> tensor<4x10xf32>
// CHECK:         train.softmax_cross_entropy %[[WIDE]]
// CHECK:         %[[DWIDE:.+]] = train.softmax_cross_entropy_grad %[[WIDE]]
// CHECK:         train.cast %[[DWIDE]] : tensor<4x10xf32> -> tensor<4x10xbf16>
func.func @logits_kept(%logits: tensor<4x10xbf16>, %labels: tensor<4xi32>, %one: tensor<f32>)
    -> (tensor<f32>, tensor<4x10xbf16>, tensor<4x10xf32>) {
  %wide = train.cast %logits : tensor<4x10xbf16> -> tensor<4x10xf32>
  %loss = train.softmax_cross_entropy %wide, %labels : tensor<4x10xf32>, tensor<4xi32> -> tensor<f32>
  %dwide = train.softmax_cross_entropy_grad %wide, %labels, %one : tensor<4x10xf32>, tensor<4xi32>
  %dlogits = train.cast %dwide : tensor<4x10xf32> -> tensor<4x10xbf16>
  return %loss, %dlogits, %wide : tensor<f32>, tensor<4x10xbf16>, tensor<4x10xf32>
}

// -----

// The f32 gradient is read other than by its cast back (a gradient-norm
// probe, say): it must stay f32, so nothing is folded.

// CHECK-LABEL: func.func @gradient_kept
// CHECK:         %[[WIDE:.+]] = train.cast %arg0
// CHECK:         train.softmax_cross_entropy %[[WIDE]]
// CHECK:         %[[DWIDE:.+]] = train.softmax_cross_entropy_grad %[[WIDE]]
// CHECK:         train.cast %[[DWIDE]]
// CHECK:         return {{.*}}, %[[DWIDE]]
func.func @gradient_kept(%logits: tensor<4x10xbf16>, %labels: tensor<4xi32>, %one: tensor<f32>)
    -> (tensor<f32>, tensor<4x10xbf16>, tensor<4x10xf32>) {
  %wide = train.cast %logits : tensor<4x10xbf16> -> tensor<4x10xf32>
  %loss = train.softmax_cross_entropy %wide, %labels : tensor<4x10xf32>, tensor<4xi32> -> tensor<f32>
  %dwide = train.softmax_cross_entropy_grad %wide, %labels, %one : tensor<4x10xf32>, tensor<4xi32>
  %dlogits = train.cast %dwide : tensor<4x10xf32> -> tensor<4x10xbf16>
  return %loss, %dlogits, %dwide : tensor<f32>, tensor<4x10xbf16>, tensor<4x10xf32>
}

// -----

// A narrowing cast, and a widening one that feeds no loss, are not touched.

// CHECK-LABEL: func.func @other_casts
// CHECK-NEXT:    train.cast %arg0 : tensor<4x10xf32> -> tensor<4x10xbf16>
// CHECK-NEXT:    train.cast %arg1 : tensor<4x10xbf16> -> tensor<4x10xf32>
// CHECK-NEXT:    return
func.func @other_casts(%a: tensor<4x10xf32>, %b: tensor<4x10xbf16>) -> (tensor<4x10xbf16>, tensor<4x10xf32>) {
  %0 = train.cast %a : tensor<4x10xf32> -> tensor<4x10xbf16>
  %1 = train.cast %b : tensor<4x10xbf16> -> tensor<4x10xf32>
  return %0, %1 : tensor<4x10xbf16>, tensor<4x10xf32>
}
