// RUN: zero-opt %s --pass-pipeline="builtin.module(dist-lower-reshard)" | FileCheck %s

// dist-lower-reshard turns each dist.reshard into the collective of
// OneFlow's boxing table along the one placement axis where its SBP
// changes; here axis 1 of a 2 x 2 grid, whose other axis keeps its entry.

// CHECK-LABEL: func.func @boxing
// CHECK-NEXT:    %[[AR:.*]] = dist.all_reduce sum %{{.*}} axis 1 : tensor<4x8xf32>
// CHECK-NEXT:    %[[RS:.*]] = dist.reduce_scatter sum %{{.*}} axis 1 dim 1 : tensor<4x8xf32> -> tensor<4x4xf32>
// CHECK-NEXT:    %[[AG:.*]] = dist.all_gather %{{.*}} axis 1 dim 1 : tensor<4x4xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    %[[SL:.*]] = dist.slice %{{.*}} axis 1 dim 0 : tensor<4x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT:    %[[A2A:.*]] = dist.all_to_all %{{.*}} axis 1 split 0 concat 1 : tensor<4x4xf32> -> tensor<2x8xf32>
// CHECK-NEXT:    return %[[AR]], %[[RS]], %[[AG]], %[[SL]], %[[A2A]], %{{.*}} :
module attributes {dist.placement = #dist.placement<cpu, [2, 2]>} {
  func.func @boxing(%p: tensor<4x8xf32>, %s: tensor<4x4xf32>, %b: tensor<4x8xf32>)
      -> (tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<4x8xf32>) {
    // P -> B: an all-reduce.
    %0 = dist.reshard %p from [S(0), P(sum)] to [S(0), B] : tensor<4x8xf32> -> tensor<4x8xf32>
    // P -> S(1): a reduce-scatter along the split dimension.
    %1 = dist.reshard %p from [S(0), P(sum)] to [S(0), S(1)] : tensor<4x8xf32> -> tensor<4x4xf32>
    // S(1) -> B: an all-gather.
    %2 = dist.reshard %s from [S(0), S(1)] to [S(0), B] : tensor<4x4xf32> -> tensor<4x8xf32>
    // B -> S(0): a local slice, no traffic.
    %3 = dist.reshard %b from [B, B] to [B, S(0)] : tensor<4x8xf32> -> tensor<2x8xf32>
    // S(1) -> S(0): an all-to-all.
    %4 = dist.reshard %s from [B, S(1)] to [B, S(0)] : tensor<4x4xf32> -> tensor<2x8xf32>
    // Nothing changes: the reshard folds away.
    %5 = dist.reshard %b from [B, B] to [B, B] : tensor<4x8xf32> -> tensor<4x8xf32>
    return %0, %1, %2, %3, %4, %5 : tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<4x8xf32>
  }
}
