// RUN: zero-opt %s | zero-opt | FileCheck %s

// A 2 x 4 grid (nodes x GPUs): collectives name the axis they run over, and
// their group size is that axis' extent. A function-level placement
// overrides the module's.
module attributes {dist.placement = #dist.placement<cuda, [2, 4]>} {

// Over axis 1 the group has 4 ranks: 10 -> 3.
// CHECK-LABEL: func.func @inner_axis
// CHECK: dist.reduce_scatter sum %{{.*}} axis 1 dim 0 : tensor<10xf32> -> tensor<3xf32>
func.func @inner_axis(%g: tensor<10xf32>) -> tensor<3xf32> {
  %s = dist.reduce_scatter sum %g axis 1 dim 0 : tensor<10xf32> -> tensor<3xf32>
  return %s : tensor<3xf32>
}

// Over axis 0 the group has 2 ranks: 10 -> 5.
// CHECK-LABEL: func.func @outer_axis
// CHECK: dist.reduce_scatter sum %{{.*}} axis 0 dim 0 : tensor<10xf32> -> tensor<5xf32>
func.func @outer_axis(%g: tensor<10xf32>) -> tensor<5xf32> {
  %s = dist.reduce_scatter sum %g axis 0 dim 0 : tensor<10xf32> -> tensor<5xf32>
  return %s : tensor<5xf32>
}

// Splitting dimension 0 over both axes divides it by 8: 10 -> 2.
// CHECK-LABEL: func.func @split_both_axes
// CHECK: dist.reshard %{{.*}} from [P(sum), P(sum)] to [S(0), S(0)] : tensor<10xf32> -> tensor<2xf32>
func.func @split_both_axes(%g: tensor<10xf32>) -> tensor<2xf32> {
  %s = dist.reshard %g from [P(sum), P(sum)] to [S(0), S(0)] : tensor<10xf32> -> tensor<2xf32>
  return %s : tensor<2xf32>
}

// The function's own placement wins: one axis of 3 ranks, 10 -> 4.
// CHECK-LABEL: func.func @function_placement
// CHECK-SAME: dist.placement = #dist.placement<cpu, [3]>
func.func @function_placement(%g: tensor<10xf32>) -> tensor<4xf32>
    attributes {dist.placement = #dist.placement<cpu, [3]>} {
  %s = dist.reduce_scatter sum %g axis 0 dim 0 : tensor<10xf32> -> tensor<4xf32>
  return %s : tensor<4xf32>
}
}
