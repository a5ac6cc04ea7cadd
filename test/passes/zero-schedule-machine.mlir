// RUN: rm -rf %t && split-file %s %t
// RUN: zero-opt %t/layers.mlir --pass-pipeline="builtin.module(zero-schedule)" | FileCheck %s --check-prefixes=CHECK,NONE
// RUN: zero-opt %t/layers.mlir --pass-pipeline="builtin.module(zero-schedule{machine=%t/fast-link.json})" | FileCheck %s --check-prefixes=CHECK,ONE
// RUN: zero-opt %t/layers.mlir --pass-pipeline="builtin.module(zero-schedule{machine=%t/slow-link.json})" | FileCheck %s --check-prefixes=CHECK,TWO
// RUN: zero-opt %t/layers.mlir --pass-pipeline="builtin.module(zero-schedule{machine=%t/slow-link.json prefetch-bytes=65536})" | FileCheck %s --check-prefixes=CHECK,ONE
// RUN: zero-opt %t/layers.mlir --pass-pipeline="builtin.module(zero-schedule{machine=%t/slow-link.json max-live-gathered-bytes=81920})" | FileCheck %s --check-prefixes=CHECK,ONE
// RUN: zero-opt %t/layers.mlir --pass-pipeline="builtin.module(zero-schedule{machine=%t/no-overlap.json})" | FileCheck %s --check-prefixes=CHECK,NONE
// RUN: zero-opt %t/layers.mlir --pass-pipeline="builtin.module(zero-schedule{machine=cpu prefetch-bytes=1000000})" | FileCheck %s --check-prefixes=CHECK,NONE
// RUN: not zero-opt %t/layers.mlir --pass-pipeline="builtin.module(zero-schedule{machine=a100})" 2>&1 | FileCheck %s --check-prefix=PRESET
// RUN: not zero-opt %t/grid.mlir --pass-pipeline="builtin.module(zero-schedule{machine=h100-nvlink-8})" 2>&1 | FileCheck %s --check-prefix=AXIS

// Given the machine the step runs on, zero-schedule needs no window: it
// predicts each gather's time on the link and the compute before its use
// (the way zero-report predicts the lowered step) and issues the gather
// at the latest earlier use from which that compute covers it and the
// collectives queued before it. Just early enough costs the least memory.
//
// Three layers on four ranks: @a and @b are 64x64 f32 (16 KiB gathered),
// @c is 64x256 (64 KiB). Each machine runs a 64x64x64 matmul (524,288
// FLOPs) in 524 us and has no launch cost; only their links differ.
//
// fast-link (1e8 B/s): a 16 KiB gather takes 123 us, @c's 492 us. One
// matmul covers each, so each gather is issued at the previous layer's use
// (ONE).
//
// slow-link (7e7 B/s): 176 us and 702 us. @b is still covered by one
// matmul, but @c is not (524 < 702): it goes to @a's use, where two
// matmuls (1,048 us) cover @b's gather and its own (878 us) (TWO).
//
// A `prefetch-bytes` window of 64 KiB (only @c ahead of the compute) caps
// that: @c goes one layer ahead, where it is only partly hidden (ONE). So
// does a bound of 80 KiB on gathered bytes alive at once: @a, @b and @c
// would be 96 KiB.
//
// A machine whose collectives progress only while the compute stream waits
// for them (async_collectives false, like the `cpu` preset) hides nothing,
// so nothing moves, whatever the window (NONE). Without a machine and
// without a window nothing moves either.

// CHECK-LABEL: func.func @layers
// CHECK:         %[[GA:.+]] = dist.all_gather
// CHECK-NEXT:    %[[WA:.+]] = train.reshape %[[GA]]
// NONE-NEXT:     %[[Y1:.+]] = train.matmul %{{.+}}, %[[WA]]
// NONE-NEXT:     %[[GB:.+]] = dist.all_gather
// NONE-NEXT:     %[[WB:.+]] = train.reshape %[[GB]]
// NONE-NEXT:     %[[Y2:.+]] = train.matmul %[[Y1]], %[[WB]]
// NONE-NEXT:     %[[GC:.+]] = dist.all_gather
// NONE-NEXT:     %[[WC:.+]] = train.reshape %[[GC]]
// NONE-NEXT:     train.matmul %[[Y2]], %[[WC]]
//
// ONE-NEXT:      %[[GB:.+]] = dist.all_gather
// ONE-NEXT:      %[[Y1:.+]] = train.matmul %{{.+}}, %[[WA]]
// ONE-NEXT:      %[[WB:.+]] = train.reshape %[[GB]]
// ONE-NEXT:      %[[GC:.+]] = dist.all_gather
// ONE-NEXT:      %[[Y2:.+]] = train.matmul %[[Y1]], %[[WB]]
// ONE-NEXT:      %[[WC:.+]] = train.reshape %[[GC]]
// ONE-NEXT:      train.matmul %[[Y2]], %[[WC]]
//
// TWO-NEXT:      %[[GB:.+]] = dist.all_gather
// TWO-NEXT:      %[[GC:.+]] = dist.all_gather
// TWO-NEXT:      %[[Y1:.+]] = train.matmul %{{.+}}, %[[WA]]
// TWO-NEXT:      %[[WB:.+]] = train.reshape %[[GB]]
// TWO-NEXT:      %[[Y2:.+]] = train.matmul %[[Y1]], %[[WB]]
// TWO-NEXT:      %[[WC:.+]] = train.reshape %[[GC]]
// TWO-NEXT:      train.matmul %[[Y2]], %[[WC]]

// A machine that does not load fails before anything moves, and so does a
// step with a collective over a placement axis the machine has no link for:
// its cost would be unknown.
// PRESET: error: machine 'a100' is neither a preset (a100-40gb-nvlink-8, a100-80gb-nvlink-8, a100-40gb-nodes-roce200, h100-nvlink-8, h200-nvlink-8, h100-nodes-ib400, h100-96gb-nvlink-8, h100-96gb-nodes-ib400, cpu) nor a .json file
// AXIS: error: zero-schedule: machine 'h100-nvlink-8' has links for 1 placement axis(es); this collective runs over axis 1

//--- layers.mlir
module attributes {dist.placement = #dist.placement<cuda, [4]>} {
  train.param @a param : tensor<64x64xf32> sharded flat over 0 -> tensor<1024xf32> init zeros
  train.param @b param : tensor<64x64xf32> sharded flat over 0 -> tensor<1024xf32> init zeros
  train.param @c param : tensor<64x256xf32> sharded flat over 0 -> tensor<4096xf32> init zeros
  func.func @layers(%x: tensor<64x64xf32>) -> tensor<64x256xf32> attributes {train.step} {
    %a = train.load @a : tensor<1024xf32>
    %b = train.load @b : tensor<1024xf32>
    %c = train.load @c : tensor<4096xf32>
    %ga = dist.all_gather %a axis 0 dim 0 : tensor<1024xf32> -> tensor<4096xf32>
    %wa = train.reshape %ga : tensor<4096xf32> -> tensor<64x64xf32>
    %y1 = train.matmul %x, %wa : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
    %gb = dist.all_gather %b axis 0 dim 0 : tensor<1024xf32> -> tensor<4096xf32>
    %wb = train.reshape %gb : tensor<4096xf32> -> tensor<64x64xf32>
    %y2 = train.matmul %y1, %wb : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
    %gc = dist.all_gather %c axis 0 dim 0 : tensor<4096xf32> -> tensor<16384xf32>
    %wc = train.reshape %gc : tensor<16384xf32> -> tensor<64x256xf32>
    %y3 = train.matmul %y2, %wc : tensor<64x64xf32>, tensor<64x256xf32> -> tensor<64x256xf32>
    return %y3 : tensor<64x256xf32>
  }
}

//--- grid.mlir
module attributes {dist.placement = #dist.placement<cuda, [2, 2]>} {
  train.param @a param : tensor<16xf32> sharded flat over 1 -> tensor<8xf32> init zeros
  func.func @grid(%x: tensor<16xf32>) -> tensor<16xf32> attributes {train.step} {
    %a = train.load @a : tensor<8xf32>
    %ga = dist.all_gather %a axis 1 dim 0 : tensor<8xf32> -> tensor<16xf32>
    %y = train.mul %x, %ga : tensor<16xf32>
    return %y : tensor<16xf32>
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

//--- slow-link.json
{
  "name": "slow-link",
  "links": [{"bandwidth": 7e7, "latency": 0}],
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
  "links": [{"bandwidth": 7e7, "latency": 0}],
  "matmul_flops": {"f32": 1e9, "bf16": 1e9, "f16": 1e9},
  "memory_bandwidth": 1e15,
  "launch_overhead": 0,
  "host_link_bandwidth": 1e9,
  "host_memory_bandwidth": 1e9,
  "async_collectives": false
}
