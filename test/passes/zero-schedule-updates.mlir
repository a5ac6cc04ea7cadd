// RUN: rm -rf %t && split-file %s %t
// RUN: zero-opt %t/stage2.mlir --pass-pipeline="builtin.module(zero-schedule{machine=%t/fast-link.json})" | FileCheck %s --check-prefixes=CHECK,MOVED
// RUN: zero-opt %t/stage2.mlir --pass-pipeline="builtin.module(zero-schedule{machine=%t/no-overlap.json})" | FileCheck %s --check-prefixes=CHECK,KEPT
// RUN: zero-opt %t/stage2.mlir --pass-pipeline="builtin.module(zero-schedule)" | FileCheck %s --check-prefixes=CHECK,KEPT

// At stage 2, zero-shard updates every parameter after the backward and
// gathers the updated shards after every update, where nothing is left to
// compute behind the gathers. Compiled for a machine whose collectives
// overlap compute, zero-schedule moves each update and its gather into the
// backward (MOVED); on one whose collectives do not (async_collectives
// false) or for no machine, nothing moves (KEPT).
//
// Two 64x64 layers over two ranks, Adam, as zero-shard and zero-bucket
// leave them (no buckets). On fast-link a matmul takes 524 us and a
// reduction or gather of 16 KiB 82 us.
//
// @w2's update needs @w2's reduced gradient (%g2), which the backward
// reduces right after computing it. Right after it, the compute stream
// would wait for the reduction at once: the update lands where the compute
// since the reduction (the two matmuls of @w1's gradient) covers it and a
// gather queued ahead, in front of the next hand-off (%g1's reduction), and
// its gather goes to the communication stream with it. The reload and
// slice of @w2 come after the backward's last read of @w2 (%dh): an update
// may write @w2's buffer in place; @w1's come after the forward's. The
// loads of the moments, which depend on nothing, go right in front of the
// update, not to the top of the step where they would be alive for all of
// it. @w1's update follows its own reduction, the last of the backward.
// The copies of the gathered parameters into place stay at the end, where
// the compute stream waits for the gathers, and so does the loss's
// all-reduce: reductions never move.

// CHECK-LABEL: func.func @step
// MOVED:         train.matmul %{{.+}}, %[[W1:[^ ]+]] :
// MOVED-NEXT:    train.load @w1 :
// MOVED-NEXT:    train.reshape
// MOVED-NEXT:    dist.slice
// CHECK:         %[[RS2:.+]] = dist.reduce_scatter mean
// CHECK-NEXT:    %[[DH:.+]] = train.matmul %{{.+}}, %{{.+}} transpose_b
// MOVED-NEXT:    train.load @w2 :
// MOVED-NEXT:    train.reshape
// MOVED-NEXT:    %[[W2_SLICE:.+]] = dist.slice
// CHECK-NEXT:    %[[DW1:.+]] = train.matmul %{{.+}}, %[[DH]] transpose_a
// CHECK-NEXT:    %[[DW1_FLAT:.+]] = train.reshape %[[DW1]]
// MOVED-NEXT:    train.load @w2.m
// MOVED-NEXT:    train.load @w2.v
// MOVED-NEXT:    %[[W2_NEW:[^,]+]], {{.+}} = train.adam %[[W2_SLICE]], %[[RS2]]
// MOVED-NEXT:    train.store %{{.+}} to @w2.m
// MOVED-NEXT:    train.store %{{.+}} to @w2.v
// MOVED-NEXT:    %[[W2_GATHERED:.+]] = dist.all_gather %[[W2_NEW]]
// CHECK-NEXT:    %[[RS1:.+]] = dist.reduce_scatter mean %[[DW1_FLAT]]
// MOVED-NEXT:    train.load @w1.m
// MOVED-NEXT:    train.load @w1.v
// MOVED-NEXT:    train.adam %{{.+}}, %[[RS1]]
// MOVED-NEXT:    train.store %{{.+}} to @w1.m
// MOVED-NEXT:    train.store %{{.+}} to @w1.v
// MOVED-NEXT:    dist.all_gather
// MOVED-NEXT:    dist.all_reduce mean
// MOVED-NEXT:    train.reshape %[[W2_GATHERED]]
// MOVED-NEXT:    train.store %{{.+}} to @w2
// KEPT-NEXT:     train.load @w2 :
// KEPT-NEXT:     train.reshape
// KEPT-NEXT:     dist.slice
// KEPT-NEXT:     train.load @w2.m
// KEPT-NEXT:     train.load @w2.v
// KEPT-NEXT:     train.adam %{{.+}}, %[[RS2]]
// KEPT-NEXT:     train.store
// KEPT-NEXT:     train.store
// KEPT-NEXT:     train.load @w1 :
// KEPT-NEXT:     train.reshape
// KEPT-NEXT:     dist.slice
// KEPT-NEXT:     train.load @w1.m
// KEPT-NEXT:     train.load @w1.v
// KEPT-NEXT:     train.adam %{{.+}}, %[[RS1]]
// KEPT-NEXT:     train.store
// KEPT-NEXT:     train.store
// KEPT-NEXT:     dist.all_reduce mean
// KEPT-NEXT:     dist.all_gather
// KEPT-NEXT:     dist.all_gather

//--- stage2.mlir
module @two_layers attributes {dist.placement = #dist.placement<cuda, [2]>, dist.zero_stage = 2 : i64} {
  train.param @w1 param : tensor<64x64xf32> init normal(0.0, 0.1)
  train.param @w1.m slot of @w1 : tensor<64x64xf32> sharded flat over 0 -> tensor<2048xf32> init zeros
  train.param @w1.v slot of @w1 : tensor<64x64xf32> sharded flat over 0 -> tensor<2048xf32> init zeros
  train.param @w2 param : tensor<64x64xf32> init normal(0.0, 0.1)
  train.param @w2.m slot of @w2 : tensor<64x64xf32> sharded flat over 0 -> tensor<2048xf32> init zeros
  train.param @w2.v slot of @w2 : tensor<64x64xf32> sharded flat over 0 -> tensor<2048xf32> init zeros
  train.optimizer @adam adam lr 1.000000e-03
  func.func @step(%x: tensor<64x64xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %labels: tensor<64xi32> {dist.sbp = #dist.sbp<[S(0)]>}) -> tensor<f32> attributes {train.step} {
    %step = train.step_index : tensor<i64>
    %w1 = train.load @w1 : tensor<64x64xf32>
    %w2 = train.load @w2 : tensor<64x64xf32>
    %h = train.matmul %x, %w1 : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
    %logits = train.matmul %h, %w2 : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
    %loss = train.softmax_cross_entropy %logits, %labels : tensor<64x64xf32>, tensor<64xi32> -> tensor<f32>
    %one = arith.constant dense<1.000000e+00> : tensor<f32>
    %dlogits = train.softmax_cross_entropy_grad %logits, %labels, %one : tensor<64x64xf32>, tensor<64xi32>
    %dw2 = train.matmul %h, %dlogits transpose_a : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
    %dw2_flat = train.reshape %dw2 : tensor<64x64xf32> -> tensor<4096xf32>
    %g2 = dist.reduce_scatter mean %dw2_flat axis 0 dim 0 : tensor<4096xf32> -> tensor<2048xf32>
    %dh = train.matmul %dlogits, %w2 transpose_b : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
    %dw1 = train.matmul %x, %dh transpose_a : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
    %dw1_flat = train.reshape %dw1 : tensor<64x64xf32> -> tensor<4096xf32>
    %g1 = dist.reduce_scatter mean %dw1_flat axis 0 dim 0 : tensor<4096xf32> -> tensor<2048xf32>
    %w2_full = train.load @w2 : tensor<64x64xf32>
    %w2_flat = train.reshape %w2_full : tensor<64x64xf32> -> tensor<4096xf32>
    %w2_shard = dist.slice %w2_flat axis 0 dim 0 : tensor<4096xf32> -> tensor<2048xf32>
    %w2_m = train.load @w2.m : tensor<2048xf32>
    %w2_v = train.load @w2.v : tensor<2048xf32>
    %w2_new, %w2_m_new, %w2_v_new = train.adam %w2_shard, %g2, %w2_m, %w2_v step %step with @adam : tensor<2048xf32>, tensor<2048xf32>, tensor<2048xf32>
    train.store %w2_m_new to @w2.m : tensor<2048xf32>
    train.store %w2_v_new to @w2.v : tensor<2048xf32>
    %w1_full = train.load @w1 : tensor<64x64xf32>
    %w1_flat = train.reshape %w1_full : tensor<64x64xf32> -> tensor<4096xf32>
    %w1_shard = dist.slice %w1_flat axis 0 dim 0 : tensor<4096xf32> -> tensor<2048xf32>
    %w1_m = train.load @w1.m : tensor<2048xf32>
    %w1_v = train.load @w1.v : tensor<2048xf32>
    %w1_new, %w1_m_new, %w1_v_new = train.adam %w1_shard, %g1, %w1_m, %w1_v step %step with @adam : tensor<2048xf32>, tensor<2048xf32>, tensor<2048xf32>
    train.store %w1_m_new to @w1.m : tensor<2048xf32>
    train.store %w1_v_new to @w1.v : tensor<2048xf32>
    %mean_loss = dist.all_reduce mean %loss axis 0 : tensor<f32>
    %w2_gathered = dist.all_gather %w2_new axis 0 dim 0 : tensor<2048xf32> -> tensor<4096xf32>
    %w1_gathered = dist.all_gather %w1_new axis 0 dim 0 : tensor<2048xf32> -> tensor<4096xf32>
    %w2_next = train.reshape %w2_gathered : tensor<4096xf32> -> tensor<64x64xf32>
    train.store %w2_next to @w2 : tensor<64x64xf32>
    %w1_next = train.reshape %w1_gathered : tensor<4096xf32> -> tensor<64x64xf32>
    train.store %w1_next to @w1 : tensor<64x64xf32>
    return %mean_loss : tensor<f32>
  }
}

//--- fast-link.json
{
  "name": "fast-link",
  "links": [{"bandwidth": 1e8, "latency": 0}],
  "matmul_flops": {"f32": 1e9, "bf16": 1e9, "f16": 1e9},
  "memory_bandwidth": 1e15,
  "launch_overhead": 0,
  "host_link_bandwidth": 1e9,
  "host_memory_bandwidth": 1e9,
  "async_collectives": true
}

//--- no-overlap.json
{
  "name": "no-overlap",
  "links": [{"bandwidth": 1e8, "latency": 0}],
  "matmul_flops": {"f32": 1e9, "bf16": 1e9, "f16": 1e9},
  "memory_bandwidth": 1e15,
  "launch_overhead": 0,
  "host_link_bandwidth": 1e9,
  "host_memory_bandwidth": 1e9,
  "async_collectives": false
}
