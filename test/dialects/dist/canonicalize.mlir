// RUN: zero-opt %s -split-input-file -canonicalize | FileCheck %s

// On a single rank every collective is the identity and folds away.
module attributes {dist.placement = #dist.placement<cpu, [1]>} {
// CHECK-LABEL: func.func @trivial_group
// CHECK-NOT: dist.
// CHECK: return %arg0
func.func @trivial_group(%g: tensor<10xf32>) -> tensor<10xf32> {
  %0 = dist.all_reduce mean %g axis 0 : tensor<10xf32>
  %1 = dist.reduce_scatter sum %0 axis 0 dim 0 : tensor<10xf32> -> tensor<10xf32>
  %2 = dist.all_gather %1 axis 0 dim 0 : tensor<10xf32> -> tensor<10xf32>
  %3 = dist.broadcast %2 root 0 axis 0 : tensor<10xf32>
  %4 = dist.slice %3 axis 0 dim 0 : tensor<10xf32> -> tensor<10xf32>
  %5 = dist.reshard %4 from [P(sum)] to [S(0)] : tensor<10xf32> -> tensor<10xf32>
  return %5 : tensor<10xf32>
}

// Started collectives over one rank forward their input to the wait.
// CHECK-LABEL: func.func @trivial_async
// CHECK-NOT: dist.
// CHECK: return %arg0
func.func @trivial_async(%g: tensor<10xf32>) -> tensor<10xf32> {
  %t = dist.all_gather_start %g axis 0 dim 0 : tensor<10xf32> -> !dist.token<tensor<10xf32>>
  %w = dist.wait %t : !dist.token<tensor<10xf32>>
  return %w : tensor<10xf32>
}
}

// -----

// On four ranks nothing folds: each collective moves data.
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
// CHECK-LABEL: func.func @real_group
// CHECK: dist.all_reduce
// CHECK: dist.all_gather_start
// CHECK: dist.wait
func.func @real_group(%g: tensor<12xf32>, %s: tensor<3xf32>) -> (tensor<12xf32>, tensor<12xf32>) {
  %0 = dist.all_reduce sum %g axis 0 : tensor<12xf32>
  %t = dist.all_gather_start %s axis 0 dim 0 : tensor<3xf32> -> !dist.token<tensor<12xf32>>
  %w = dist.wait %t : !dist.token<tensor<12xf32>>
  return %0, %w : tensor<12xf32>, tensor<12xf32>
}

// A reshard to the same SBP is the identity at any group size.
// CHECK-LABEL: func.func @same_sbp
// CHECK-NOT: dist.reshard
func.func @same_sbp(%s: tensor<3xf32>) -> tensor<3xf32> {
  %0 = dist.reshard %s from [S(0)] to [S(0)] : tensor<3xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// Unpacking what was just packed gives the members back.
// CHECK-LABEL: func.func @pack_unpack
// CHECK-NOT: dist.
// CHECK: return %arg1
func.func @pack_unpack(%a: tensor<2x3xf32>, %b: tensor<5xf32>) -> tensor<5xf32> {
  %p = dist.pack %a, %b pad_to 4 : tensor<2x3xf32>, tensor<5xf32> -> tensor<12xf32>
  %u:2 = dist.unpack %p : tensor<12xf32> -> tensor<2x3xf32>, tensor<5xf32>
  return %u#1 : tensor<5xf32>
}
}
