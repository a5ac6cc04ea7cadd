// RUN: zero-opt %s -split-input-file -verify-diagnostics

// A collective outside any placement has no group.
func.func @no_placement(%g: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{has no placement: attach a 'dist.placement' attribute}}
  %0 = dist.all_reduce sum %g axis 0 : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Axis 1 of a one-axis placement does not exist.
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @axis_out_of_range(%g: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{runs over placement axis 1, but #dist.placement<cpu, [4]> has only 1 axis(es)}}
  %0 = dist.all_reduce sum %g axis 1 : tensor<8xf32>
  return %0 : tensor<8xf32>
}
}

// -----

// The promise of the verifier: 10 elements over 4 ranks give shards of 3.
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @wrong_shard(%g: tensor<10xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{reduce-scatter of extent 10 along dimension 0 over 4 ranks gives shards of 3 (padded to 12), but the result has 4}}
  %0 = dist.reduce_scatter sum %g axis 0 dim 0 : tensor<10xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
}

// -----

// Without padding the message says so by omission.
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @wrong_slice(%g: tensor<12xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{slice of extent 12 along dimension 0 over 4 ranks gives shards of 3, but the result has 4}}
  %0 = dist.slice %g axis 0 dim 0 : tensor<12xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
}

// -----

// Shards of 3 over 4 ranks gather to 10, 11 or 12 elements, never 13.
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @wrong_gather(%s: tensor<3xf32>) -> tensor<13xf32> {
  // expected-error @+1 {{all-gather of shards of 3 along dimension 0 over 4 ranks gives an extent between 9 and 12 (padding dropped), but the result has 13}}
  %0 = dist.all_gather %s axis 0 dim 0 : tensor<3xf32> -> tensor<13xf32>
  return %0 : tensor<13xf32>
}
}

// -----

// Collectives never convert.
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @element_type(%g: tensor<12xf32>) -> tensor<3xbf16> {
  // expected-error @+1 {{changes the element type from 'f32' to 'bf16'}}
  %0 = dist.reduce_scatter sum %g axis 0 dim 0 : tensor<12xf32> -> tensor<3xbf16>
  return %0 : tensor<3xbf16>
}
}

// -----

// The scatter dimension must exist.
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @dim_out_of_range(%g: tensor<12xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{dim 1 is out of range for 'tensor<12xf32>' of rank 1}}
  %0 = dist.reduce_scatter sum %g axis 0 dim 1 : tensor<12xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
}

// -----

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @rank_change(%g: tensor<12xf32>) -> tensor<3x1xf32> {
  // expected-error @+1 {{changes the rank from 1 to 2}}
  %0 = dist.reduce_scatter sum %g axis 0 dim 0 : tensor<12xf32> -> tensor<3x1xf32>
  return %0 : tensor<3x1xf32>
}
}

// -----

// Only the exchanged dimension may change.
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @other_dim(%g: tensor<12x5xf32>) -> tensor<3x6xf32> {
  // expected-error @+1 {{changes dimension 1 from 5 to 6; only the exchanged dimension may change}}
  %0 = dist.reduce_scatter sum %g axis 0 dim 0 : tensor<12x5xf32> -> tensor<3x6xf32>
  return %0 : tensor<3x6xf32>
}
}

// -----

// Shards need a static extent to be cut.
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @dynamic(%g: tensor<?xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{needs a static extent along dimension 0 to cut it into shards}}
  %0 = dist.reduce_scatter sum %g axis 0 dim 0 : tensor<?xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
}

// -----

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @all_to_all_uneven(%x: tensor<2x6xf32>) -> tensor<8x1xf32> {
  // expected-error @+1 {{splits extent 6 of dimension 1 over 4 ranks, which does not divide evenly}}
  %0 = dist.all_to_all %x axis 0 split 1 concat 0 : tensor<2x6xf32> -> tensor<8x1xf32>
  return %0 : tensor<8x1xf32>
}
}

// -----

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @all_to_all_shape(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{all-to-all over 4 ranks turns 'tensor<2x8xf32>' into 'tensor<8x2xf32>', but the result is 'tensor<2x8xf32>'}}
  %0 = dist.all_to_all %x axis 0 split 1 concat 0 : tensor<2x8xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}
}

// -----

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @all_to_all_dim(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{split dimension 2 is out of range}}
  %0 = dist.all_to_all %x axis 0 split 2 concat 0 : tensor<2x8xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}
}

// -----

// The root is a rank of the group.
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @root(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{has root 4, but the group along axis 0 has only 4 ranks}}
  %0 = dist.broadcast %x root 4 axis 0 : tensor<4xf32>
  return %0 : tensor<4xf32>
}
}

// -----

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @root_async(%x: tensor<4xf32>) -> !dist.token<tensor<4xf32>> {
  // expected-error @+1 {{has root 9}}
  %0 = dist.broadcast_start %x root 9 axis 0 : tensor<4xf32> -> !dist.token<tensor<4xf32>>
  return %0 : !dist.token<tensor<4xf32>>
}
}

// -----

// An all-reduce token carries the input's type.
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @token_type(%x: tensor<4xf32>) -> !dist.token<tensor<8xf32>> {
  // expected-error @+1 {{returns '!dist.token<tensor<8xf32>>', but the result of this collective has type 'tensor<4xf32>'}}
  %0 = dist.all_reduce_start sum %x axis 0 : tensor<4xf32> -> !dist.token<tensor<8xf32>>
  return %0 : !dist.token<tensor<8xf32>>
}
}

// -----

// Async forms check shapes through the token.
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @async_shapes(%g: tensor<10xf32>) -> !dist.token<tensor<4xf32>> {
  // expected-error @+1 {{gives shards of 3 (padded to 12), but the result has 4}}
  %0 = dist.reduce_scatter_start sum %g axis 0 dim 0 : tensor<10xf32> -> !dist.token<tensor<4xf32>>
  return %0 : !dist.token<tensor<4xf32>>
}
}

// -----

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @async_gather(%s: tensor<3xf32>) -> !dist.token<tensor<2xf32>> {
  // expected-error @+1 {{gives an extent between 9 and 12}}
  %0 = dist.all_gather_start %s axis 0 dim 0 : tensor<3xf32> -> !dist.token<tensor<2xf32>>
  return %0 : !dist.token<tensor<2xf32>>
}
}

// -----

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @async_all_to_all(%x: tensor<2x6xf32>) -> !dist.token<tensor<8x1xf32>> {
  // expected-error @+1 {{does not divide evenly}}
  %0 = dist.all_to_all_start %x axis 0 split 1 concat 0 : tensor<2x6xf32> -> !dist.token<tensor<8x1xf32>>
  return %0 : !dist.token<tensor<8x1xf32>>
}
}

// -----

// Each started collective is waited on once.
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @double_wait(%s: tensor<3xf32>) -> tensor<12xf32> {
  %t = dist.all_gather_start %s axis 0 dim 0 : tensor<3xf32> -> !dist.token<tensor<12xf32>>
  // expected-error @+1 {{waits on a token that is waited on 2 times}}
  %a = dist.wait %t : !dist.token<tensor<12xf32>>
  %b = dist.wait %t : !dist.token<tensor<12xf32>>
  return %a : tensor<12xf32>
}
}

// -----

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @reshard_entries(%g: tensor<12xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'to' has 2 SBP entries, but #dist.placement<cpu, [4]> has 1 axis(es); give one entry per axis}}
  %0 = dist.reshard %g from [P(sum)] to [S(0), B] : tensor<12xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
}

// -----

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @reshard_split_dim(%g: tensor<12xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'to' splits dimension 1 of a rank-1 tensor}}
  %0 = dist.reshard %g from [P(sum)] to [S(1)] : tensor<12xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
}

// -----

// 5 elements split 4 ways is 2 per rank, not 3.
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @reshard_extent(%g: tensor<5xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{no logical extent of dimension 0 is split 1 way(s) into 5 and 4 way(s) into 3}}
  %0 = dist.reshard %g from [P(sum)] to [S(0)] : tensor<5xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
}

// -----

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @reshard_dynamic(%g: tensor<?xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{dimension 0 is dynamic on one side only}}
  %0 = dist.reshard %g from [B] to [S(0)] : tensor<?xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
}

// -----

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @reshard_rank(%g: tensor<12xf32>) -> tensor<3x1xf32> {
  // expected-error @+1 {{changes the rank from 1 to 2}}
  %0 = dist.reshard %g from [B] to [S(0)] : tensor<12xf32> -> tensor<3x1xf32>
  return %0 : tensor<3x1xf32>
}
}

// -----

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @reshard_type(%g: tensor<12xf32>) -> tensor<3xf16> {
  // expected-error @+1 {{changes the element type from 'f32' to 'f16'}}
  %0 = dist.reshard %g from [B] to [S(0)] : tensor<12xf32> -> tensor<3xf16>
  return %0 : tensor<3xf16>
}
}

// -----

func.func @reshard_unplaced(%g: tensor<12xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{has no placement}}
  %0 = dist.reshard %g from [B] to [S(0)] : tensor<12xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @sbp_syntax(%g: tensor<12xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{expected S(dim), B or P(sum|mean|max), got 'Q'}}
  %0 = dist.reshard %g from [Q] to [S(0)] : tensor<12xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @sbp_reduction(%g: tensor<12xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{P(op) needs op to be sum, mean or max, got 'min'}}
  %0 = dist.reshard %g from [P(min)] to [S(0)] : tensor<12xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @pack_size(%a: tensor<2x3xf32>, %b: tensor<5xf32>) -> tensor<11xf32> {
  // expected-error @+1 {{packs 11 elements padded to a multiple of 4 into a bucket of 12, but the result has 11}}
  %0 = dist.pack %a, %b pad_to 4 : tensor<2x3xf32>, tensor<5xf32> -> tensor<11xf32>
  return %0 : tensor<11xf32>
}
}

// -----

func.func @pack_element_type(%a: tensor<2x3xf32>, %b: tensor<5xbf16>) -> tensor<11xf32> {
  // expected-error @+1 {{tensor #1 has element type 'bf16', but the bucket holds 'f32'}}
  %0 = dist.pack %a, %b : tensor<2x3xf32>, tensor<5xbf16> -> tensor<11xf32>
  return %0 : tensor<11xf32>
}

// -----

func.func @pack_empty() -> tensor<4xf32> {
  // expected-error @+1 {{pack needs at least one tensor}}
  %0 = "dist.pack"() : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @unpack_overrun(%b: tensor<10xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{reads 11 elements from a bucket of 10}}
  %u:2 = dist.unpack %b : tensor<10xf32> -> tensor<2x3xf32>, tensor<5xf32>
  return %u#1 : tensor<5xf32>
}

// -----

func.func @unpack_element_type(%b: tensor<12xf32>) -> tensor<5xf16> {
  // expected-error @+1 {{tensor #0 has element type 'f16', but the bucket holds 'f32'}}
  %u = dist.unpack %b : tensor<12xf32> -> tensor<5xf16>
  return %u : tensor<5xf16>
}

// -----

// expected-error @+1 {{'dist.placement' must be a #dist.placement, got 4 : i64}}
module attributes {dist.placement = 4} {
}

// -----

// expected-error @+1 {{unknown dist attribute 'dist.mesh'}}
module attributes {dist.mesh = #dist.placement<cpu, [4]>} {
}

// -----

// expected-error @+1 {{'dist.reduce_type' must be f32 (16-bit gradients averaged in f32), got bf16}}
module attributes {dist.reduce_type = bf16} {
}

// -----

module {
  // expected-error @+1 {{'dist.reduce_type' belongs on the module, not on 'func.func'}}
  func.func @f() attributes {dist.reduce_type = f32} {
    return
  }
}

// -----

// expected-error @+1 {{placement axis 1 has 0 ranks; every axis needs at least 1}}
module attributes {dist.placement = #dist.placement<cpu, [4, 0]>} {
}

// -----

// A placement has at least one axis.
// expected-error @+2 {{expected integer value}}
// expected-error @+1 {{failed to parse Dist_PlacementAttr parameter 'grid'}}
module attributes {dist.placement = #dist.placement<cpu, []>} {
}

// -----

// Quantized data is moved, never summed: a sum of int8 codes with
// different scales means nothing.
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @sum_of_codes(%x: tensor<8xf32>) -> tensor<8xi8> {
  %q, %s = dist.quantize %x block 4 : tensor<8xf32> -> tensor<8xi8>, tensor<2xf32>
  // expected-error @+1 {{reduces block-quantized data from 'dist.quantize': quantized values are moved (all_gather, all_to_all), never summed; dequantize them first}}
  %r = dist.all_reduce sum %q axis 0 : tensor<8xi8>
  return %r : tensor<8xi8>
}
}

// -----

// Also after a move.
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
func.func @scatter_of_gathered_codes(%x: tensor<8xf32>) -> tensor<8xi8> {
  %q, %s = dist.quantize %x block 4 : tensor<8xf32> -> tensor<8xi8>, tensor<2xf32>
  %g = dist.all_gather %q axis 0 dim 0 : tensor<8xi8> -> tensor<32xi8>
  // expected-error @+1 {{reduces block-quantized data}}
  %r = dist.reduce_scatter sum %g axis 0 dim 0 : tensor<32xi8> -> tensor<8xi8>
  return %r : tensor<8xi8>
}
}

// -----

func.func @scales_per_segment(%x: tensor<10xf32>) {
  // expected-error @+1 {{has 2 segment(s) of 5 elements in blocks of 4, so 2 scale(s) per segment and 4 in all, but the scales have 3}}
  %q, %s = dist.quantize %x block 4 segments 2 : tensor<10xf32> -> tensor<10xi8>, tensor<3xf32>
  return
}

// -----

func.func @uneven_segments(%q: tensor<10xi8>, %s: tensor<3xf32>) {
  // expected-error @+1 {{cuts 10 elements into 3 segments, which does not divide evenly}}
  %x = dist.dequantize %q, %s block 4 segments 3 : tensor<10xi8>, tensor<3xf32> -> tensor<10xf32>
  return
}

// -----

func.func @codes_keep_the_shape(%x: tensor<10xf32>) {
  // expected-error @+1 {{has 1 segment(s) of 10 8-bit codes, 10 bytes in all, but the codes are 'tensor<12xi8>'}}
  %q, %s = dist.quantize %x block 4 : tensor<10xf32> -> tensor<12xi8>, tensor<3xf32>
  return
}

// -----

// int4 codes pack two to a byte: 2 segments of 5 are 3 bytes each.
func.func @int4_codes_are_packed(%q: tensor<10xi8>, %s: tensor<4xf32>) {
  // expected-error @+1 {{has 2 segment(s) of 5 4-bit codes, 6 bytes in all, but the codes are 'tensor<10xi8>'}}
  %x = dist.dequantize %q, %s block 4 segments 2 bits 4 : tensor<10xi8>, tensor<4xf32> -> tensor<10xf32>
  return
}

// -----

func.func @three_bit_codes(%x: tensor<10xf32>) {
  // expected-error @+1 {{has 3-bit codes; int8 (bits 8) and int4 (bits 4) are supported}}
  %q, %s = dist.quantize %x block 4 bits 3 : tensor<10xf32> -> tensor<4xi8>, tensor<3xf32>
  return
}
