// RUN: zero-opt %s | FileCheck %s
// RUN: zero-opt %s | zero-opt | FileCheck %s
// RUN: zero-opt %s --mlir-print-op-generic | zero-opt | FileCheck %s

// Every collective in its pretty form, on four ranks of one axis unless a
// case says otherwise. Results are named after what they hold.
module attributes {dist.placement = #dist.placement<cpu, [4]>} {

// All-reduce keeps the type; the reduction is printed first.
// CHECK-LABEL: func.func @all_reduce
// CHECK: %reduced = dist.all_reduce mean %{{.*}} axis 0 : tensor<128x64xf32>
func.func @all_reduce(%g: tensor<128x64xf32>) -> tensor<128x64xf32> {
  %0 = dist.all_reduce mean %g axis 0 : tensor<128x64xf32>
  return %0 : tensor<128x64xf32>
}

// Reduce-scatter of 10 elements over 4 ranks gives a shard of 3 (padded to 12),
// and all-gather drops the padding again.
// CHECK-LABEL: func.func @scatter_then_gather_with_padding
// CHECK: %[[SHARD:.*]] = dist.reduce_scatter sum %{{.*}} axis 0 dim 0 : tensor<10xf32> -> tensor<3xf32>
// CHECK: dist.all_gather %[[SHARD]] axis 0 dim 0 : tensor<3xf32> -> tensor<10xf32>
func.func @scatter_then_gather_with_padding(%g: tensor<10xf32>) -> tensor<10xf32> {
  %s = dist.reduce_scatter sum %g axis 0 dim 0 : tensor<10xf32> -> tensor<3xf32>
  %w = dist.all_gather %s axis 0 dim 0 : tensor<3xf32> -> tensor<10xf32>
  return %w : tensor<10xf32>
}

// Dim-0 sharding of a matrix cuts rows and keeps columns (FSDP2's layout).
// CHECK-LABEL: func.func @dim0_rows
// CHECK: dist.reduce_scatter max %{{.*}} axis 0 dim 0 : tensor<10x7xbf16> -> tensor<3x7xbf16>
func.func @dim0_rows(%g: tensor<10x7xbf16>) -> tensor<3x7xbf16> {
  %s = dist.reduce_scatter max %g axis 0 dim 0 : tensor<10x7xbf16> -> tensor<3x7xbf16>
  return %s : tensor<3x7xbf16>
}

// Any dimension may be the exchanged one.
// CHECK-LABEL: func.func @gather_dim1
// CHECK: %gathered = dist.all_gather %{{.*}} axis 0 dim 1 : tensor<5x2xf16> -> tensor<5x8xf16>
func.func @gather_dim1(%x: tensor<5x2xf16>) -> tensor<5x8xf16> {
  %w = dist.all_gather %x axis 0 dim 1 : tensor<5x2xf16> -> tensor<5x8xf16>
  return %w : tensor<5x8xf16>
}

// Broadcast from rank 3; slice keeps this rank's shard without traffic.
// CHECK-LABEL: func.func @broadcast_and_slice
// CHECK: %bcast = dist.broadcast %{{.*}} root 3 axis 0 : tensor<10xf32>
// CHECK: %slice = dist.slice %bcast axis 0 dim 0 : tensor<10xf32> -> tensor<3xf32>
func.func @broadcast_and_slice(%x: tensor<10xf32>) -> tensor<3xf32> {
  %b = dist.broadcast %x root 3 axis 0 : tensor<10xf32>
  %s = dist.slice %b axis 0 dim 0 : tensor<10xf32> -> tensor<3xf32>
  return %s : tensor<3xf32>
}

// All-to-all moves the split from dimension 1 to dimension 0.
// CHECK-LABEL: func.func @all_to_all
// CHECK: %exchanged = dist.all_to_all %{{.*}} axis 0 split 1 concat 0 : tensor<2x8xf32> -> tensor<8x2xf32>
func.func @all_to_all(%x: tensor<2x8xf32>) -> tensor<8x2xf32> {
  %t = dist.all_to_all %x axis 0 split 1 concat 0 : tensor<2x8xf32> -> tensor<8x2xf32>
  return %t : tensor<8x2xf32>
}

// Block quantization (ZeRO++ qwZ): a shard quantized in blocks of 4 (the
// last block of 10 elements is 2), its codes and scales gathered from the 4
// ranks, and dequantized as 4 segments, each with its own blocks.
// CHECK-LABEL: func.func @quantized_gather
// CHECK: %quantized, %scales = dist.quantize %{{.*}} block 4 : tensor<10xf32> -> tensor<10xi8>, tensor<3xf32>
// CHECK: %dequantized = dist.dequantize %{{.*}}, %{{.*}} block 4 segments 4 : tensor<40xi8>, tensor<12xf32> -> tensor<40xf32>
func.func @quantized_gather(%shard: tensor<10xf32>) -> tensor<40xf32> {
  %q, %s = dist.quantize %shard block 4 : tensor<10xf32> -> tensor<10xi8>, tensor<3xf32>
  %qs = dist.all_gather %q axis 0 dim 0 : tensor<10xi8> -> tensor<40xi8>
  %ss = dist.all_gather %s axis 0 dim 0 : tensor<3xf32> -> tensor<12xf32>
  %w = dist.dequantize %qs, %ss block 4 segments 4 : tensor<40xi8>, tensor<12xf32> -> tensor<40xf32>
  return %w : tensor<40xf32>
}

// int4 codes (ZeRO++ qgZ): two to a byte, each segment on bytes of its own,
// so the 4 ranks' pieces of 3 elements are 2 bytes each and the all-to-all
// moves whole segments.
// CHECK-LABEL: func.func @int4_exchange
// CHECK: dist.quantize %{{.*}} block 4 segments 4 bits 4 : tensor<12xf32> -> tensor<8xi8>, tensor<4xf32>
// CHECK: dist.dequantize %{{.*}}, %{{.*}} block 4 segments 4 bits 4 : tensor<8xi8>, tensor<4xf32> -> tensor<12xf32>
func.func @int4_exchange(%g: tensor<12xf32>) -> tensor<12xf32> {
  %q, %s = dist.quantize %g block 4 segments 4 bits 4 : tensor<12xf32> -> tensor<8xi8>, tensor<4xf32>
  %qs = dist.all_to_all %q axis 0 split 0 concat 0 : tensor<8xi8> -> tensor<8xi8>
  %ss = dist.all_to_all %s axis 0 split 0 concat 0 : tensor<4xf32> -> tensor<4xf32>
  %x = dist.dequantize %qs, %ss block 4 segments 4 bits 4 : tensor<8xi8>, tensor<4xf32> -> tensor<12xf32>
  return %x : tensor<12xf32>
}

// The generic reshard, one SBP entry per placement axis.
// CHECK-LABEL: func.func @reshard
// CHECK: %resharded = dist.reshard %{{.*}} from [P(sum)] to [S(0)] : tensor<10xf32> -> tensor<3xf32>
// CHECK: dist.reshard %resharded from [S(0)] to [B] : tensor<3xf32> -> tensor<10xf32>
func.func @reshard(%g: tensor<10xf32>) -> tensor<10xf32> {
  %s = dist.reshard %g from [P(sum)] to [S(0)] : tensor<10xf32> -> tensor<3xf32>
  %b = dist.reshard %s from [S(0)] to [B] : tensor<3xf32> -> tensor<10xf32>
  return %b : tensor<10xf32>
}

// Async forms return a token carrying the result type; wait yields it.
// CHECK-LABEL: func.func @async
// CHECK: %[[T0:.*]] = dist.all_gather_start %{{.*}} axis 0 dim 0 : tensor<3xf32> -> !dist.token<tensor<10xf32>>
// CHECK: %[[T1:.*]] = dist.reduce_scatter_start sum %{{.*}} axis 0 dim 0 : tensor<10xf32> -> !dist.token<tensor<3xf32>>
// CHECK: dist.all_reduce_start mean %{{.*}} axis 0 : tensor<10xf32> -> !dist.token<tensor<10xf32>>
// CHECK: dist.broadcast_start %{{.*}} root 0 axis 0 : tensor<10xf32> -> !dist.token<tensor<10xf32>>
// CHECK: dist.all_to_all_start %{{.*}} axis 0 split 1 concat 0 : tensor<2x8xf32> -> !dist.token<tensor<8x2xf32>>
// CHECK: %ready = dist.wait %[[T0]] : !dist.token<tensor<10xf32>>
// CHECK: dist.wait %[[T1]] : !dist.token<tensor<3xf32>>
func.func @async(%s: tensor<3xf32>, %g: tensor<10xf32>, %x: tensor<2x8xf32>) -> (tensor<10xf32>, tensor<3xf32>) {
  %t0 = dist.all_gather_start %s axis 0 dim 0 : tensor<3xf32> -> !dist.token<tensor<10xf32>>
  %t1 = dist.reduce_scatter_start sum %g axis 0 dim 0 : tensor<10xf32> -> !dist.token<tensor<3xf32>>
  %t2 = dist.all_reduce_start mean %g axis 0 : tensor<10xf32> -> !dist.token<tensor<10xf32>>
  %t3 = dist.broadcast_start %g root 0 axis 0 : tensor<10xf32> -> !dist.token<tensor<10xf32>>
  %t4 = dist.all_to_all_start %x axis 0 split 1 concat 0 : tensor<2x8xf32> -> !dist.token<tensor<8x2xf32>>
  %w = dist.wait %t0 : !dist.token<tensor<10xf32>>
  %r = dist.wait %t1 : !dist.token<tensor<3xf32>>
  %a = dist.wait %t2 : !dist.token<tensor<10xf32>>
  %b = dist.wait %t3 : !dist.token<tensor<10xf32>>
  %c = dist.wait %t4 : !dist.token<tensor<8x2xf32>>
  return %w, %r : tensor<10xf32>, tensor<3xf32>
}

// A bucket of 6 + 5 = 11 elements padded to a multiple of 4 holds 12.
// CHECK-LABEL: func.func @bucket
// CHECK: %bucket = dist.pack %{{.*}}, %{{.*}} pad_to 4 : tensor<2x3xf32>, tensor<5xf32> -> tensor<12xf32>
// CHECK: %unpacked:2 = dist.unpack %bucket : tensor<12xf32> -> tensor<2x3xf32>, tensor<5xf32>
func.func @bucket(%a: tensor<2x3xf32>, %b: tensor<5xf32>) -> tensor<5xf32> {
  %p = dist.pack %a, %b pad_to 4 : tensor<2x3xf32>, tensor<5xf32> -> tensor<12xf32>
  %u:2 = dist.unpack %p : tensor<12xf32> -> tensor<2x3xf32>, tensor<5xf32>
  return %u#1 : tensor<5xf32>
}

// Without pad_to the bucket is exactly the sum of its members.
// CHECK-LABEL: func.func @bucket_unpadded
// CHECK: dist.pack %{{.*}}, %{{.*}} : tensor<2x3xf32>, tensor<5xf32> -> tensor<11xf32>
func.func @bucket_unpadded(%a: tensor<2x3xf32>, %b: tensor<5xf32>) -> tensor<11xf32> {
  %p = dist.pack %a, %b : tensor<2x3xf32>, tensor<5xf32> -> tensor<11xf32>
  return %p : tensor<11xf32>
}
}
