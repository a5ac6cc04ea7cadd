// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-schedule)" | FileCheck %s --check-prefixes=CHECK,NONE
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-schedule{prefetch-bytes=64})" | FileCheck %s --check-prefixes=CHECK,ONE
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-schedule{prefetch-bytes=128})" | FileCheck %s --check-prefixes=CHECK,TWO
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-schedule{prefetch-bytes=128 max-live-gathered-bytes=128})" | FileCheck %s --check-prefixes=CHECK,BOUND

// zero-schedule issues stage 3's parameter gathers ahead of their first use,
// so that the communication stream gathers the next layers while the compute
// stream runs this one. `prefetch-bytes` is how many gathered bytes may be
// issued ahead of the compute; `max-live-gathered-bytes` bounds the gathered
// bytes alive at once, which prefetching raises. Every case runs on four
// ranks.

// Four parameters, each gathered (64 bytes) right before its only use, as
// zero-shard leaves them. Without a window nothing moves (NONE). A window of
// one tensor issues each gather at the previous one's use (ONE); a window of
// two, two uses ahead (TWO). With a bound of two tensors alive at once
// (BOUND), @c and @d cannot go two uses ahead (three would be alive) and go
// one ahead instead.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @a param : tensor<16xf32> sharded flat over 0 -> tensor<4xf32> init zeros
  train.param @b param : tensor<16xf32> sharded flat over 0 -> tensor<4xf32> init zeros
  train.param @c param : tensor<16xf32> sharded flat over 0 -> tensor<4xf32> init zeros
  train.param @d param : tensor<16xf32> sharded flat over 0 -> tensor<4xf32> init zeros
  func.func @layers(%x: tensor<16xf32>) -> tensor<16xf32> attributes {train.step} {
    %a = train.load @a : tensor<4xf32>
    %b = train.load @b : tensor<4xf32>
    %c = train.load @c : tensor<4xf32>
    %d = train.load @d : tensor<4xf32>
    %ga = dist.all_gather %a axis 0 dim 0 : tensor<4xf32> -> tensor<16xf32>
    %y1 = arith.mulf %x, %ga : tensor<16xf32>
    %gb = dist.all_gather %b axis 0 dim 0 : tensor<4xf32> -> tensor<16xf32>
    %y2 = arith.mulf %y1, %gb : tensor<16xf32>
    %gc = dist.all_gather %c axis 0 dim 0 : tensor<4xf32> -> tensor<16xf32>
    %y3 = arith.mulf %y2, %gc : tensor<16xf32>
    %gd = dist.all_gather %d axis 0 dim 0 : tensor<4xf32> -> tensor<16xf32>
    %y4 = arith.mulf %y3, %gd : tensor<16xf32>
    return %y4 : tensor<16xf32>
  }
}

// CHECK-LABEL: func.func @layers
// CHECK-COUNT-4: train.load
// NONE-NEXT:     %[[GA:.+]] = dist.all_gather %[[A:[^ ]+]]
// NONE-NEXT:     %[[Y1:.+]] = arith.mulf %{{.+}}, %[[GA]]
// NONE-NEXT:     %[[GB:.+]] = dist.all_gather
// NONE-NEXT:     %[[Y2:.+]] = arith.mulf %[[Y1]], %[[GB]]
// NONE-NEXT:     %[[GC:.+]] = dist.all_gather
// NONE-NEXT:     %[[Y3:.+]] = arith.mulf %[[Y2]], %[[GC]]
// NONE-NEXT:     %[[GD:.+]] = dist.all_gather
// NONE-NEXT:     arith.mulf %[[Y3]], %[[GD]]
//
// ONE-NEXT:      %[[GA:.+]] = dist.all_gather
// ONE-NEXT:      %[[GB:.+]] = dist.all_gather
// ONE-NEXT:      %[[Y1:.+]] = arith.mulf %{{.+}}, %[[GA]]
// ONE-NEXT:      %[[GC:.+]] = dist.all_gather
// ONE-NEXT:      %[[Y2:.+]] = arith.mulf %[[Y1]], %[[GB]]
// ONE-NEXT:      %[[GD:.+]] = dist.all_gather
// ONE-NEXT:      %[[Y3:.+]] = arith.mulf %[[Y2]], %[[GC]]
// ONE-NEXT:      arith.mulf %[[Y3]], %[[GD]]
//
// TWO-NEXT:      %[[GA:.+]] = dist.all_gather
// TWO-NEXT:      %[[GB:.+]] = dist.all_gather
// TWO-NEXT:      %[[GC:.+]] = dist.all_gather
// TWO-NEXT:      %[[Y1:.+]] = arith.mulf %{{.+}}, %[[GA]]
// TWO-NEXT:      %[[GD:.+]] = dist.all_gather
// TWO-NEXT:      %[[Y2:.+]] = arith.mulf %[[Y1]], %[[GB]]
// TWO-NEXT:      %[[Y3:.+]] = arith.mulf %[[Y2]], %[[GC]]
// TWO-NEXT:      arith.mulf %[[Y3]], %[[GD]]
//
// BOUND-NEXT:    %[[GA:.+]] = dist.all_gather
// BOUND-NEXT:    %[[GB:.+]] = dist.all_gather
// BOUND-NEXT:    %[[Y1:.+]] = arith.mulf %{{.+}}, %[[GA]]
// BOUND-NEXT:    %[[GC:.+]] = dist.all_gather
// BOUND-NEXT:    %[[Y2:.+]] = arith.mulf %[[Y1]], %[[GB]]
// BOUND-NEXT:    %[[GD:.+]] = dist.all_gather
// BOUND-NEXT:    %[[Y3:.+]] = arith.mulf %[[Y2]], %[[GC]]
// BOUND-NEXT:    arith.mulf %[[Y3]], %[[GD]]

// -----

// A bucket (zero-bucket's pack, gather and rank-major unpack) is issued at
// its first member, but its unpack, a copy on the compute stream that waits
// for the gather, moves down to the first use of any member, with the views
// of the members. Before, the compute stream waited for the gather where it
// was issued; now only where a member is needed. In every configuration.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @p param : tensor<2x3xf32> sharded flat over 0 -> tensor<2xf32> init zeros
  train.param @q param : tensor<8xf32> sharded flat over 0 -> tensor<2xf32> init zeros
  func.func @unpack_sinks(%x: tensor<8xf32>, %s: tensor<2x3xf32>) -> (tensor<8xf32>, tensor<2x3xf32>) attributes {train.step} {
    %p = train.load @p : tensor<2xf32>
    %q = train.load @q : tensor<2xf32>
    %bucket = dist.pack %p, %q : tensor<2xf32>, tensor<2xf32> -> tensor<4xf32>
    %full = dist.all_gather %bucket axis 0 dim 0 : tensor<4xf32> -> tensor<16xf32>
    %m:2 = dist.unpack %full shards 4 : tensor<16xf32> -> tensor<6xf32>, tensor<8xf32>
    %pm = train.reshape %m#0 : tensor<6xf32> -> tensor<2x3xf32>
    %y = arith.addf %x, %x : tensor<8xf32>
    %z = arith.mulf %y, %m#1 : tensor<8xf32>
    %w = arith.mulf %s, %pm : tensor<2x3xf32>
    return %z, %w : tensor<8xf32>, tensor<2x3xf32>
  }
}

// CHECK-LABEL: func.func @unpack_sinks
// CHECK:         %[[BUCKET:.+]] = dist.pack
// CHECK-NEXT:    %[[FULL:.+]] = dist.all_gather %[[BUCKET]]
// CHECK-NEXT:    %[[Y:.+]] = arith.addf
// CHECK-NEXT:    %[[M:.+]]:2 = dist.unpack %[[FULL]] shards 4
// CHECK-NEXT:    %[[PM:.+]] = train.reshape %[[M]]#0
// CHECK-NEXT:    arith.mulf %[[Y]], %[[M]]#1
// CHECK-NEXT:    arith.mulf %{{.+}}, %[[PM]]

// -----

// A member viewed twice (reshape of a reshape: an imported module's
// [1, 1, 2, 3] table used as [1, 2, 3]) keeps its views in order when the
// unpack sinks: each view after the one it reads.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @p frozen : tensor<1x1x2x3xf32> sharded flat over 0 -> tensor<2xf32> init zeros
  train.param @q param : tensor<8xf32> sharded flat over 0 -> tensor<2xf32> init zeros
  func.func @view_chain_sinks(%x: tensor<8xf32>, %s: tensor<1x2x3xf32>) -> (tensor<8xf32>, tensor<1x2x3xf32>) attributes {train.step} {
    %p = train.load @p : tensor<2xf32>
    %q = train.load @q : tensor<2xf32>
    %bucket = dist.pack %p, %q : tensor<2xf32>, tensor<2xf32> -> tensor<4xf32>
    %full = dist.all_gather %bucket axis 0 dim 0 : tensor<4xf32> -> tensor<16xf32>
    %m:2 = dist.unpack %full shards 4 : tensor<16xf32> -> tensor<6xf32>, tensor<8xf32>
    %p4 = train.reshape %m#0 : tensor<6xf32> -> tensor<1x1x2x3xf32>
    %p3 = train.reshape %p4 : tensor<1x1x2x3xf32> -> tensor<1x2x3xf32>
    %y = arith.addf %x, %x : tensor<8xf32>
    %w = arith.mulf %s, %p3 : tensor<1x2x3xf32>
    %z = arith.mulf %y, %m#1 : tensor<8xf32>
    return %z, %w : tensor<8xf32>, tensor<1x2x3xf32>
  }
}

// CHECK-LABEL: func.func @view_chain_sinks
// CHECK:         %[[Y:.+]] = arith.addf
// CHECK-NEXT:    %[[M:.+]]:2 = dist.unpack
// CHECK-NEXT:    %[[P4:.+]] = train.reshape %[[M]]#0 : tensor<6xf32> -> tensor<1x1x2x3xf32>
// CHECK-NEXT:    %[[P3:.+]] = train.reshape %[[P4]] : tensor<1x1x2x3xf32> -> tensor<1x2x3xf32>
// CHECK-NEXT:    arith.mulf %{{.+}}, %[[P3]]

// -----

// Gathers issued at one point go to the communication stream together:
// the pack of a bucket moved in front of a use goes before the gathers
// already there (a pack is compute, and would split the hand-off).

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @a param : tensor<16xf32> sharded flat over 0 -> tensor<4xf32> init zeros
  train.param @b param : tensor<8xf32> sharded flat over 0 -> tensor<2xf32> init zeros
  train.param @c param : tensor<8xf32> sharded flat over 0 -> tensor<2xf32> init zeros
  func.func @packs_first(%x: tensor<16xf32>, %v: tensor<8xf32>) -> (tensor<16xf32>, tensor<8xf32>) attributes {train.step} {
    %a = train.load @a : tensor<4xf32>
    %b = train.load @b : tensor<2xf32>
    %c = train.load @c : tensor<2xf32>
    %ga = dist.all_gather %a axis 0 dim 0 : tensor<4xf32> -> tensor<16xf32>
    %y = arith.mulf %x, %ga : tensor<16xf32>
    %bucket = dist.pack %b, %c : tensor<2xf32>, tensor<2xf32> -> tensor<4xf32>
    %full = dist.all_gather %bucket axis 0 dim 0 : tensor<4xf32> -> tensor<16xf32>
    %m:2 = dist.unpack %full shards 4 : tensor<16xf32> -> tensor<8xf32>, tensor<8xf32>
    %z = arith.mulf %v, %m#0 : tensor<8xf32>
    %w = arith.mulf %z, %m#1 : tensor<8xf32>
    return %y, %w : tensor<16xf32>, tensor<8xf32>
  }
}

// CHECK-LABEL: func.func @packs_first
// CHECK-COUNT-3: train.load
// NONE-NEXT:     %[[GA:.+]] = dist.all_gather
// NONE-NEXT:     arith.mulf %{{.+}}, %[[GA]]
// NONE-NEXT:     dist.pack
// TWO-NEXT:      %[[BUCKET:.+]] = dist.pack
// TWO-NEXT:      %[[GA:.+]] = dist.all_gather
// TWO-NEXT:      %[[FULL:.+]] = dist.all_gather %[[BUCKET]]
// TWO-NEXT:      arith.mulf %{{.+}}, %[[GA]]
// TWO-NEXT:      dist.unpack %[[FULL]] shards 4
