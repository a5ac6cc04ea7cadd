// RUN: zero-opt %s | zero-opt | FileCheck %s

// `clip_norm` prints after the schedule; an optimizer without it prints as
// before. `sharded` (set by zero-shard) round-trips. The clipping ops name
// their results `clipped` and `sum_squares`.
// CHECK-LABEL: module @clipping
// CHECK-NEXT:    train.optimizer @clip adamw lr 1.000000e-03 schedule cosine total 100 clip_norm 1.000000e+00
// CHECK-NEXT:    train.optimizer @plain sgd lr 1.000000e-01
// CHECK-NEXT:    func.func @f(%[[A:.*]]: tensor<4x3xf32>, %[[B:.*]]: tensor<5xbf16>)
// CHECK-NEXT:      %clipped, %clipped_0 = train.clip_by_global_norm %[[A]], %[[B]] max_norm 5.000000e-01 : tensor<4x3xf32>, tensor<5xbf16>
// CHECK-NEXT:      %sum_squares = train.sum_squares %[[A]], %[[B]] : tensor<4x3xf32>, tensor<5xbf16> -> tensor<f32>
// CHECK-NEXT:      %clipped_1, %clipped_2 = train.scale_by_norm %[[A]], %[[B]] total %sum_squares max_norm 5.000000e-01 : tensor<4x3xf32>, tensor<5xbf16>
// CHECK-NEXT:      %clipped_3 = train.clip_by_global_norm %[[A]] max_norm 5.000000e-01 sharded : tensor<4x3xf32>
module @clipping {
  train.optimizer @clip adamw lr 1.0e-3 schedule cosine total 100 clip_norm 1.0
  train.optimizer @plain sgd lr 0.1
  func.func @f(%a: tensor<4x3xf32>, %b: tensor<5xbf16>) -> (tensor<4x3xf32>, tensor<5xbf16>, tensor<4x3xf32>) {
    %c:2 = train.clip_by_global_norm %a, %b max_norm 0.5 : tensor<4x3xf32>, tensor<5xbf16>
    %s = train.sum_squares %a, %b : tensor<4x3xf32>, tensor<5xbf16> -> tensor<f32>
    %d:2 = train.scale_by_norm %a, %b total %s max_norm 0.5 : tensor<4x3xf32>, tensor<5xbf16>
    %e = train.clip_by_global_norm %a max_norm 0.5 sharded : tensor<4x3xf32>
    return %c#0, %d#1, %d#0 : tensor<4x3xf32>, tensor<5xbf16>, tensor<4x3xf32>
  }
}
