// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-lower-to-runtime)" | FileCheck %s
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-lower-to-runtime{alignment=128})" | FileCheck %s --check-prefix=ALIGN128
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-lower-to-runtime{async-collectives=false})" | FileCheck %s --check-prefix=SYNC

// zero-lower-to-runtime's arena: every transient value is a
// `zrt.arena_view` at an offset fixed at compile time, and `arena` on the
// program is the size of the one allocation (zero-lower-to-runtime.mlir has
// the overview).
//
// A value lives from the instruction that creates it through the last
// instruction that touches it or any view of it, both inclusive. The
// planner places values largest first, each in the smallest gap left by
// the values already placed whose lifetimes overlap its own, or on top of
// them; every size is rounded up to `align` (64 by default, ALIGN128 with
// `alignment=128`), so every offset is a multiple of it.
// `zrt.live_bytes` is the largest sum of (rounded) live bytes at one
// instruction, the lower bound no plan can beat. The planner's own unit
// tests are in test/unit/ArenaPlannerTest.cpp.

// Three 64-byte values in a chain: %a dies at the negation, where %b is
// born; %c is born at the exp, where %b dies, and lives to the final copy.
// %a and %c never live at the same time and share offset 0; %b overlaps
// both and sits above them. The arena is the two slots, the lower bound.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  func.func @disjoint_lifetimes(%x: tensor<16xf32>) -> tensor<16xf32> attributes {train.step} {
    %a = train.relu %x : tensor<16xf32>
    %b = train.neg %a : tensor<16xf32>
    %c = train.exp %b : tensor<16xf32>
    return %c : tensor<16xf32>
  }
}

// CHECK-LABEL: zrt.program @disjoint_lifetimes placement #dist.placement<cpu, [2]> arena 128 align 64 attributes {zrt.live_bytes = 128 : i64
// The plan is also recorded apart from the header the runtime allocates by:
// zero-run --check-memory measures the writes against it.
// CHECK-SAME:    zrt.planned_arena = 128 : i64
// CHECK:         %[[A:.+]] = zrt.arena_view [0] : memref<16xf32>
// CHECK-NEXT:    zrt.launch "train.relu" {{.*}} outs(%[[A]] : memref<16xf32>)
// CHECK-NEXT:    %[[B:.+]] = zrt.arena_view [64] : memref<16xf32>
// CHECK-NEXT:    zrt.launch "train.neg" on @compute ins(%[[A]] : memref<16xf32>) outs(%[[B]] : memref<16xf32>)
// CHECK-NEXT:    %[[C:.+]] = zrt.arena_view [0] : memref<16xf32>
// CHECK-NEXT:    zrt.launch "train.exp" on @compute ins(%[[B]] : memref<16xf32>) outs(%[[C]] : memref<16xf32>)

// With 128-byte alignment each 64-byte value takes 128 bytes.

// ALIGN128-LABEL: zrt.program @disjoint_lifetimes placement #dist.placement<cpu, [2]> arena 256 align 128 attributes {zrt.live_bytes = 256 : i64
// ALIGN128:         zrt.arena_view [0] : memref<16xf32>
// ALIGN128:         zrt.arena_view [128] : memref<16xf32>
// ALIGN128:         zrt.arena_view [0] : memref<16xf32>

// -----

// Offsets worked out by hand. The instructions, numbered, and the values
// (bytes rounded up to 64) with their lifetimes:
//
//   0 relu            %h       8x4xf32  128 B  [0, 3]
//   1 matmul          %logits  8x3xf32   96 B  [1, 7] (read by the copy to @output1)
//   2 cross-entropy   %loss    f32        4 B  [2, 6] (read by the copy to @output0)
//   3 matmul          %dw      4x3xf32   48 B  [3, 4]
//   4 reduce_sum      %db      3xf32     12 B  [4, 5]
//   5 scale           %half    3xf32     12 B  [5, 5] (never read)
//   6 copy %loss to @output0
//   7 copy %logits to @output1
//
// Largest first (by requested bytes; %db before %half, born earlier):
// %h at 0; %logits above it at 128; %dw above both at 256; %db overlaps
// only %logits and %dw and takes the gap [0, 128) left by %h; %half
// overlaps %logits and %db ([0, 64)) and takes the 64-byte gap [64, 128)
// between them; %loss overlaps everything and goes on top, at 320. The
// arena is 384 bytes, the lower bound reached at instruction 3 (%h,
// %logits, %loss and %dw: 128 + 128 + 64 + 64).
//
// With 128-byte alignment every value takes 128 bytes: %h 0, %logits 128,
// %dw 256, %db 0; %half overlaps %logits [128, 256) and %db [0, 128) and
// goes on top at 256; %loss overlaps all of them and goes to 384. Arena and
// lower bound are 512 (instruction 3, 4 x 128).

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  func.func @by_hand(%x: tensor<8x4xf32>, %labels: tensor<8xi32>, %w: tensor<4x3xf32>) -> (tensor<f32>, tensor<8x3xf32>) attributes {train.step} {
    %h = train.relu %x : tensor<8x4xf32>
    %logits = train.matmul %h, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
    %loss = train.softmax_cross_entropy %logits, %labels : tensor<8x3xf32>, tensor<8xi32> -> tensor<f32>
    %dw = train.matmul %h, %logits transpose_a : tensor<8x4xf32>, tensor<8x3xf32> -> tensor<4x3xf32>
    %db = train.reduce_sum %dw dims [0] : tensor<4x3xf32> -> tensor<3xf32>
    %half = train.scale %db by 5.000000e-01 : tensor<3xf32>
    return %loss, %logits : tensor<f32>, tensor<8x3xf32>
  }
}

// CHECK-LABEL: zrt.program @by_hand placement #dist.placement<cpu, [2]> arena 384 align 64 attributes {zrt.live_bytes = 384 : i64
// CHECK:         zrt.arena_view [0] : memref<8x4xf32>
// CHECK-NEXT:    zrt.launch "train.relu"
// CHECK-NEXT:    zrt.arena_view [128] : memref<8x3xf32>
// CHECK-NEXT:    zrt.launch "train.matmul"
// CHECK-NEXT:    zrt.arena_view [320] : memref<f32>
// CHECK-NEXT:    zrt.launch "train.softmax_cross_entropy"
// CHECK-NEXT:    zrt.arena_view [256] : memref<4x3xf32>
// CHECK-NEXT:    zrt.launch "train.matmul"
// CHECK-NEXT:    zrt.arena_view [0] : memref<3xf32>
// CHECK-NEXT:    zrt.launch "train.reduce_sum"
// CHECK-NEXT:    zrt.arena_view [64] : memref<3xf32>
// CHECK-NEXT:    zrt.launch "train.scale"

// ALIGN128-LABEL: zrt.program @by_hand placement #dist.placement<cpu, [2]> arena 512 align 128 attributes {zrt.live_bytes = 512 : i64
// ALIGN128:         zrt.arena_view [0] : memref<8x4xf32>
// ALIGN128-NEXT:    zrt.launch "train.relu"
// ALIGN128-NEXT:    zrt.arena_view [128] : memref<8x3xf32>
// ALIGN128-NEXT:    zrt.launch "train.matmul"
// ALIGN128-NEXT:    zrt.arena_view [384] : memref<f32>
// ALIGN128-NEXT:    zrt.launch "train.softmax_cross_entropy"
// ALIGN128-NEXT:    zrt.arena_view [256] : memref<4x3xf32>
// ALIGN128-NEXT:    zrt.launch "train.matmul"
// ALIGN128-NEXT:    zrt.arena_view [0] : memref<3xf32>
// ALIGN128-NEXT:    zrt.launch "train.reduce_sum"
// ALIGN128-NEXT:    zrt.arena_view [256] : memref<3xf32>
// ALIGN128-NEXT:    zrt.launch "train.scale"

// -----

// A collective's buffers stay reserved until the compute stream has waited
// for it. The all-reduce is the last reader of %a, but it reads %a on
// @comm until `done1`, and the compute stream waits for `done1` only at
// the add; so %b, computed in between, cannot take %a's bytes. %c, whose
// view is made before that wait but first written by the add after it,
// can: a buffer holds bytes from its first instruction, not from its view.
// In program order (SYNC) %a is dead once the all-reduce has run, and %b
// reuses offset 0.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  func.func @reserved_until_wait(%x: tensor<16xf32>) -> tensor<16xf32> attributes {train.step} {
    %a = train.relu %x : tensor<16xf32>
    %r = dist.all_reduce sum %a axis 0 : tensor<16xf32>
    %b = train.neg %x : tensor<16xf32>
    %c = train.add %r, %b : tensor<16xf32>
    return %c : tensor<16xf32>
  }
}

// CHECK-LABEL: zrt.program @reserved_until_wait placement #dist.placement<cpu, [2]> arena 192 align 64 attributes {zrt.live_bytes = 192 : i64
// CHECK:         %[[A:.+]] = zrt.arena_view [0] : memref<16xf32>
// CHECK-NEXT:    zrt.launch "train.relu" {{.*}} outs(%[[A]] : memref<16xf32>)
// CHECK-NEXT:    %[[R:.+]] = zrt.arena_view [64] : memref<16xf32>
// CHECK:         zrt.all_reduce sum axis 0 on @comm %[[A]] to %[[R]]
// CHECK-NEXT:    zrt.record @done1 on @comm
// CHECK-NEXT:    %[[B:.+]] = zrt.arena_view [128] : memref<16xf32>
// CHECK-NEXT:    zrt.launch "train.neg" {{.*}} outs(%[[B]] : memref<16xf32>)
// CHECK-NEXT:    %[[C:.+]] = zrt.arena_view [0] : memref<16xf32>
// CHECK-NEXT:    zrt.wait @done1 on @compute
// CHECK-NEXT:    zrt.launch "train.add" on @compute ins(%[[R]], %[[B]] : memref<16xf32>, memref<16xf32>) outs(%[[C]] : memref<16xf32>)

// SYNC-LABEL: zrt.program @reserved_until_wait placement #dist.placement<cpu, [2]> arena 192 align 64 attributes {zrt.live_bytes = 192 : i64
// SYNC:         %[[A:.+]] = zrt.arena_view [0] : memref<16xf32>
// SYNC-NEXT:    zrt.launch "train.relu" {{.*}} outs(%[[A]] : memref<16xf32>)
// SYNC-NEXT:    %[[R:.+]] = zrt.arena_view [64] : memref<16xf32>
// SYNC-NEXT:    zrt.all_reduce sum axis 0 on @compute %[[A]] to %[[R]]
// SYNC-NEXT:    %[[B:.+]] = zrt.arena_view [0] : memref<16xf32>
// SYNC-NEXT:    zrt.launch "train.neg" {{.*}} outs(%[[B]] : memref<16xf32>)
// SYNC-NEXT:    %[[C:.+]] = zrt.arena_view [128] : memref<16xf32>
// SYNC-NEXT:    zrt.launch "train.add" on @compute ins(%[[R]], %[[B]] : memref<16xf32>, memref<16xf32>) outs(%[[C]] : memref<16xf32>)

// -----

// Views are no values of their own: a reshape of %a keeps %a alive until
// the reshape's last reader. %a (64 B) is read through its view by the add,
// so %b, born before that add, cannot share its bytes; %c, born at the add,
// cannot either; the exp after it can take %a's slot.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  func.func @views_extend_lifetimes(%x: tensor<4x4xf32>, %y: tensor<16xf32>) -> tensor<16xf32> attributes {train.step} {
    %a = train.relu %x : tensor<4x4xf32>
    %flat = train.reshape %a : tensor<4x4xf32> -> tensor<16xf32>
    %b = train.neg %y : tensor<16xf32>
    %c = train.add %flat, %b : tensor<16xf32>
    %d = train.exp %c : tensor<16xf32>
    return %d : tensor<16xf32>
  }
}

// CHECK-LABEL: zrt.program @views_extend_lifetimes placement #dist.placement<cpu, [2]> arena 192 align 64 attributes {zrt.live_bytes = 192 : i64
// CHECK:         %[[A:.+]] = zrt.arena_view [0] : memref<4x4xf32>
// CHECK:         %[[FLAT:.+]] = zrt.view %[[A]][0] : memref<4x4xf32> to memref<16xf32>
// CHECK-NEXT:    %[[B:.+]] = zrt.arena_view [64] : memref<16xf32>
// CHECK-NEXT:    zrt.launch "train.neg"
// CHECK-NEXT:    %[[C:.+]] = zrt.arena_view [128] : memref<16xf32>
// CHECK-NEXT:    zrt.launch "train.add" on @compute ins(%[[FLAT]], %[[B]] : memref<16xf32>, memref<16xf32>) outs(%[[C]] : memref<16xf32>)
// CHECK-NEXT:    %[[D:.+]] = zrt.arena_view [0] : memref<16xf32>
// CHECK-NEXT:    zrt.launch "train.exp" on @compute ins(%[[C]] : memref<16xf32>) outs(%[[D]] : memref<16xf32>)

// -----

// The compile-time report (zero-report's figures, as in
// test/unit/PlanReportTest.cpp for the same stage-2 step over 4 ranks) is
// attached as `zrt.report`: 40 B of replicated parameter, two 3-element
// Adam slots (24 B), the 3-element gradient shard (12 B), a model state of
// 76 B and 64 B persistent; per collective kind, the count, the bytes of
// the padded payload and what each rank sends under ring accounting (3/4
// of 48 B for the reduce-scatter and the all-gather, twice 3/4 of 4 B for
// the loss all-reduce).

module attributes {dist.placement = #dist.placement<cpu, [4]>, dist.zero_stage = 2 : i64} {
  train.param @w param : tensor<10xf32> init zeros
  train.param @w.m slot of @w : tensor<10xf32> sharded flat over 0 -> tensor<3xf32> init zeros
  train.param @w.v slot of @w : tensor<10xf32> sharded flat over 0 -> tensor<3xf32> init zeros
  train.optimizer @adam adam lr 1.0e-03

  func.func @report(%x: tensor<10xf32>) -> tensor<f32> attributes {train.step} {
    %t = train.step_index : tensor<i64>
    %g = train.add %x, %x : tensor<10xf32>
    %s = dist.reduce_scatter mean %g axis 0 dim 0 : tensor<10xf32> -> tensor<3xf32>
    %loss = arith.constant dense<1.0> : tensor<f32>
    %w = train.load @w : tensor<10xf32>
    %ws = dist.slice %w axis 0 dim 0 : tensor<10xf32> -> tensor<3xf32>
    %m = train.load @w.m : tensor<3xf32>
    %v = train.load @w.v : tensor<3xf32>
    %w1, %m1, %v1 = train.adam %ws, %s, %m, %v step %t with @adam : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
    train.store %m1 to @w.m : tensor<3xf32>
    train.store %v1 to @w.v : tensor<3xf32>
    %full = dist.all_gather %w1 axis 0 dim 0 : tensor<3xf32> -> tensor<10xf32>
    train.store %full to @w : tensor<10xf32>
    %mean = dist.all_reduce mean %loss axis 0 : tensor<f32>
    return %mean : tensor<f32>
  }
}

// CHECK-LABEL: zrt.program @report placement #dist.placement<cpu, [4]>
// CHECK-SAME:    zrt.report = {gradients = 12 : i64, masters = 0 : i64, model_state = 76 : i64, parameters = 40 : i64, peak_gathered = 0 : i64, peak_transient = {{[0-9]+}} : i64, persistent = 64 : i64, slots = 24 : i64,
// CHECK-SAME:      traffic = {all_gather = {bytes = 48 : i64, count = 1 : i64, sent_bytes_per_rank = 3.600000e+01 : f64},
// CHECK-SAME:                 all_reduce = {bytes = 4 : i64, count = 1 : i64, sent_bytes_per_rank = 6.000000e+00 : f64},
// CHECK-SAME:                 reduce_scatter = {bytes = 48 : i64, count = 1 : i64, sent_bytes_per_rank = 3.600000e+01 : f64}}}
// CHECK-SAME:    zrt.zero_stage = 2 : i64
