// zero-report's prediction (`machine=`) on small hand-written programs with
// a machine of round numbers, so that every figure can be computed by hand:
//
//   links: 1 GB/s, 1 us per ring step; matmul: 1 TFLOP/s; memory: 10 GB/s;
//   no launch overhead.
//
// Over 4 ranks a reduce-scatter of a 4 MB buffer takes (N-1)/N * 4e6 B /
// 1e9 B/s + (N-1) * 1 us = 3 ms + 3 us = 3.003 ms; a 1000x1000x1000 matmul
// 2e9 FLOP / 1e12 FLOP/s = 2 ms (its 12 MB at 10 GB/s would be 1.2 ms: it
// is compute-bound); a train.add over three 1 MB buffers 3e6 B / 1e10 B/s =
// 0.3 ms. The persistent buffers are 8 MB; the arena views 1 MB and 4 MB.
//
// RUN: rm -rf %t && split-file %s %t
// RUN: zero-opt %t/hidden.mlir --pass-pipeline="builtin.module(zero-report{machine=%t/round.json})" -o /dev/null 2>&1 | FileCheck %s --check-prefix=HIDDEN
// RUN: zero-opt %t/exposed.mlir --pass-pipeline="builtin.module(zero-report{machine=%t/round.json})" -o /dev/null 2>&1 | FileCheck %s --check-prefix=EXPOSED
// RUN: zero-opt %t/hidden.mlir --pass-pipeline="builtin.module(zero-report{machine=%t/blocking.json})" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BLOCKING
// RUN: zero-opt %t/exposed.mlir --pass-pipeline="builtin.module(zero-report{machine=%t/round.json format=json})" -o /dev/null 2>&1 | FileCheck %s --check-prefix=JSON
// RUN: zero-opt %t/hidden.mlir --pass-pipeline="builtin.module(zero-report{machine=%t/overhead.json})" -o /dev/null 2>&1 | FileCheck %s --check-prefix=OVERHEAD
// RUN: zero-opt %t/exposed.mlir --pass-pipeline="builtin.module(zero-report{machine=%t/round.json format=timeline output=%t/exposed.svg})" -o /dev/null
// RUN: sed 's|^    zrt.buffer @g |    zrt.buffer @ids input : memref<8x512xi32>\n    zrt.buffer @g |' %t/exposed.mlir > %t/tokens.mlir
// RUN: sed 's|"async_collectives": true|"async_collectives": true, "peak_flops": 2e12|' %t/round.json > %t/peak.json
// RUN: zero-opt %t/tokens.mlir --pass-pipeline="builtin.module(zero-report{machine=%t/peak.json})" -o /dev/null 2>&1 | FileCheck %s --check-prefix=THROUGHPUT
// RUN: zero-opt %t/tokens.mlir --pass-pipeline="builtin.module(zero-report{machine=%t/peak.json format=json})" -o /dev/null 2>&1 | FileCheck %s --check-prefix=THROUGHPUT-JSON
// RUN: FileCheck %s --input-file=%t/exposed.svg --check-prefix=SVG
// The IR is not changed.
// RUN: zero-opt %t/hidden.mlir --pass-pipeline="builtin.module(zero-report{machine=%t/round.json})" 2>/dev/null | FileCheck %s --check-prefix=IR

// The reduce-scatter is issued before two matmuls that do not need it: it
// runs on @comm from 0 to 3.003 ms while they run from 0 to 4 ms, so the
// compute stream's wait at 4 ms does not block and no communication is
// exposed. The step is 4 ms of matmuls and 0.3 ms of the add.
// HIDDEN-LABEL: Predicted step on machine 'round' (4 rank(s), program @hidden):
// HIDDEN-NEXT:    step time                    4.3000 ms
// HIDDEN-NEXT:    compute stream busy          4.3000 ms   (100.0 % of the step)
// HIDDEN-NEXT:    communication                3.0030 ms   (time some collective runs)
// HIDDEN-NEXT:    exposed communication        0.0000 ms   (0.00 % of the step)
// Both views are live while the reduce-scatter and the matmuls run.
// HIDDEN-NEXT:    peak device memory         13000000 B   (persistent 8000000 B + peak live arena; arena planned 5000000 B)
// The two matmuls' 4 GFLOP are the model's; the program has no integer
// input (no tokens line) and the machine no peak_flops (no MFU).
// HIDDEN-NEXT:    model FLOPs a step      4.000 GFLOP a device   (matmuls and attention, each once)
// HIDDEN-NEXT:    Busy time per stream:
// HIDDEN-NEXT:      @compute                   4.3000 ms
// HIDDEN-NEXT:      @comm                      3.0030 ms
// HIDDEN-NEXT:    Collectives (body, instruction, kind, bytes, predicted time, start):
// Instructions are numbered as zero-run's profile numbers them: records and
// waits count, views do not.
// HIDDEN-NEXT:      step        2  reduce_scatter         4000000 B       3.0030 ms  at 0.0000 ms
// HIDDEN-NOT:       all_gather

// The same collective issued after the first matmul, whose result the next
// matmul does not need, but the compute stream waits for it right away:
// it runs from 2 to 5.003 ms and all of it is exposed.
// EXPOSED-LABEL: Predicted step on machine 'round' (4 rank(s), program @exposed):
// EXPOSED-NEXT:    step time                    7.3030 ms
// EXPOSED-NEXT:    compute stream busy          4.3000 ms   (58.9 % of the step)
// EXPOSED-NEXT:    communication                3.0030 ms   (time some collective runs)
// EXPOSED-NEXT:    exposed communication        3.0030 ms   (41.12 % of the step)
// EXPOSED:         step        3  reduce_scatter         4000000 B       3.0030 ms  at 2.0000 ms

// Without asynchronous collectives (CPU ranks) the reduce-scatter of the
// first program only runs when the compute stream waits for it, at 4 ms:
// the overlap is lost and the step is 4 + 3.003 + 0.3 ms.
// BLOCKING-LABEL: Predicted step on machine 'blocking' (4 rank(s), program @hidden, collectives progress only while the compute stream waits):
// BLOCKING-NEXT:    step time                    7.3030 ms
// BLOCKING:         exposed communication        3.0030 ms   (41.12 % of the step)
// BLOCKING:         step        2  reduce_scatter         4000000 B       3.0030 ms  at 4.0000 ms

// The JSON report: the machine it used, the totals, and every instruction
// with its FLOPs, bytes and times (the compute stream's blocked time is a
// `wait` with no instruction index).
// JSON-LABEL: "prediction": {
// JSON:         "bodies": [
// JSON:             "collectives": [
// JSON-NEXT:          {
// JSON-NEXT:            "bytes": 4000000,
// JSON-NEXT:            "index": 3,
// JSON-NEXT:            "kind": "collective",
// JSON-NEXT:            "name": "reduce_scatter",
// JSON-NEXT:            "seconds": 0.003003
// JSON-NEXT:            "start_seconds": 0.002,
// JSON-NEXT:            "stream": "comm"
// JSON:             "instructions": [
// JSON:               "bytes": 12000000,
// JSON-NEXT:          "flops": 2000000000,
// JSON-NEXT:          "index": 0,
// JSON-NEXT:          "kind": "matmul",
// JSON-NEXT:          "name": "train.matmul",
// JSON-NEXT:          "seconds": 0.002,
// JSON:               "index": -1,
// JSON-NEXT:          "kind": "wait",
// JSON-NEXT:          "name": "wait",
// JSON:             "kind": "step",
// JSON:           "device_arena_bytes": 5000000,
// JSON-NEXT:      "device_persistent_bytes": 8000000,
// JSON:           "machine": {
// JSON-NEXT:        "async_collectives": true,
// JSON:             "name": "round"
// JSON:           "program": "exposed",
// JSON-NEXT:      "ranks": 4,
// JSON-NEXT:      "recompute_flops": 0,
// JSON-NEXT:      "step_seconds": 0.007303
// JSON-NEXT:      "stream_busy_seconds": {
// JSON-NEXT:        "comm": 0.003003
// JSON-NEXT:        "compute": 0.0043

// With an integer input (token ids, 8 x 512 on this rank) and a machine
// with a datasheet peak, the step's throughput: 4096 tokens in 7.303 ms
// are 560865.4 a second; the two matmuls' 4 GFLOP in 7.303 ms against a
// peak of 2 TFLOP/s are 27.39 % MFU.
// THROUGHPUT:      exposed communication        3.0030 ms
// THROUGHPUT:      tokens / s                 560865.4 a device   (4096 a step: the elements of input @ids)
// THROUGHPUT-NEXT: model FLOPs a step      4.000 GFLOP a device   (matmuls and attention, each once)
// THROUGHPUT-NEXT: MFU                           27.39 %   (of the 2.0 TFLOP/s datasheet peak)
// THROUGHPUT-JSON: "mfu": 0.2738{{[0-9]+}},
// THROUGHPUT-JSON: "model_flops": 4000000000,
// THROUGHPUT-JSON: "recompute_flops": 0,
// THROUGHPUT-JSON: "tokens": 4096,
// THROUGHPUT-JSON: "tokens_input": "ids",
// THROUGHPUT-JSON: "tokens_per_second": 560865.

// A launch overhead is added to every kernel and copy (3 kernels: 3 us),
// not to collectives.
// OVERHEAD: step time                    4.3030 ms
// OVERHEAD: communication                3.0030 ms

// The timeline of the exposed program, an SVG picture with a lane per stream with a
// rectangle per instruction (its kind as class and color, its name, index,
// time and bytes as tooltip), the compute stream's blocked time in grey,
// the collective named in its rectangle; below, the live device memory
// (persistent buffers plus live arena views) as a step path, with the
// persistent and the planned bytes as lines; a time axis in ms. The
// plot is 1020 px for 7.303 ms, from x = 150.
// SVG-LABEL: <svg xmlns="http://www.w3.org/2000/svg"
// SVG:       <text class="title" {{.*}}>Predicted step of @exposed on round, 4 rank(s): 7.303 ms, exposed communication 3.003 ms (41.1 %)</text>
// SVG:       <g class="lane" id="stream-compute">
// SVG-NEXT:  <text {{.*}}>@compute 4.300 ms</text>
// SVG:       <rect class="matmul" x="150.00" y="57.0" width="279.34" {{.*}} fill="#4e79a7"><title>train.matmul #0: 2.0000 ms at 0.0000 ms, 12000000 B</title></rect>
// SVG-NEXT:  <rect class="wait" x="429.34" {{.*}}<title>wait #-1: 3.0030 ms at 2.0000 ms, 0 B</title></rect>
// SVG-NEXT:  <rect class="matmul" x="848.76" {{.*}}<title>train.matmul #6: 2.0000 ms at 5.0030 ms, 12000000 B</title></rect>
// SVG-NEXT:  <rect class="kernel" {{.*}}<title>train.add #7: 0.3000 ms at 7.0030 ms, 3000000 B</title></rect>
// SVG-NEXT:  </g>
// SVG-NEXT:  <g class="lane" id="stream-comm">
// SVG-NEXT:  <text {{.*}}>@comm 3.003 ms</text>
// SVG-NEXT:  <rect {{.*}} fill="#fafafa"
// SVG-NEXT:  <rect class="collective" x="429.34" y="89.0" width="419.42" {{.*}} fill="#e15759"><title>reduce_scatter #3: 3.0030 ms at 2.0000 ms, 4000000 B</title></rect>
// SVG-NEXT:  <text {{.*}}>reduce_scatter</text>
// SVG-NEXT:  </g>
// SVG-NEXT:  <g class="memory">
// SVG:       >device memory (MiB)</text>
// SVG:       <line class="planned" {{.*}}<title>persistent + planned arena: 12.40 MiB</title></line>
// SVG-NEXT:  <line class="persistent" {{.*}}<title>persistent buffers: 7.63 MiB</title></line>
// SVG-NEXT:  <path class="live" {{.*}} d="M150.00,{{[0-9.]+}} L
// SVG:       <g class="axis">
// SVG:       text-anchor="middle">7</text>
// SVG-NEXT:  <text {{.*}}>time (ms)</text>
// SVG:       </svg>

// IR: zrt.program @hidden

//--- round.json
{
  "name": "round",
  "links": [{"bandwidth": 1e9, "latency": 1e-6}],
  "matmul_flops": {"f32": 1e12, "bf16": 2e12, "f16": 2e12},
  "memory_bandwidth": 1e10,
  "launch_overhead": 0,
  "host_link_bandwidth": 1e9,
  "host_memory_bandwidth": 1e9,
  "async_collectives": true
}

//--- blocking.json
{
  "name": "blocking",
  "links": [{"bandwidth": 1e9, "latency": 1e-6}],
  "matmul_flops": {"f32": 1e12, "bf16": 2e12, "f16": 2e12},
  "memory_bandwidth": 1e10,
  "launch_overhead": 0,
  "host_link_bandwidth": 1e9,
  "host_memory_bandwidth": 1e9,
  "async_collectives": false
}

//--- overhead.json
{
  "name": "overhead",
  "links": [{"bandwidth": 1e9, "latency": 1e-6}],
  "matmul_flops": {"f32": 1e12, "bf16": 2e12, "f16": 2e12},
  "memory_bandwidth": 1e10,
  "launch_overhead": 1e-6,
  "host_link_bandwidth": 1e9,
  "host_memory_bandwidth": 1e9,
  "async_collectives": true
}

//--- hidden.mlir
module {
  zrt.program @hidden placement #dist.placement<cpu, [4]> arena 5000000 align 64 {
    zrt.stream @compute
    zrt.stream @comm
    zrt.event @ready
    zrt.event @done
    zrt.buffer @a param : memref<1000x1000xf32>
    zrt.buffer @g grad_accum : memref<1000000xf32>
    zrt.step {
      %a = zrt.buffer_ref @a : memref<1000x1000xf32>
      %g = zrt.buffer_ref @g : memref<1000000xf32>
      %s = zrt.arena_view [0] : memref<250000xf32>
      %c = zrt.arena_view [1000000] : memref<1000x1000xf32>
      zrt.record @ready on @compute
      zrt.wait @ready on @comm
      zrt.reduce_scatter sum axis 0 on @comm %g to %s : memref<1000000xf32> to memref<250000xf32>
      zrt.record @done on @comm
      zrt.launch "train.matmul" on @compute ins(%a, %a : memref<1000x1000xf32>, memref<1000x1000xf32>) outs(%c : memref<1000x1000xf32>)
      zrt.launch "train.matmul" on @compute ins(%a, %c : memref<1000x1000xf32>, memref<1000x1000xf32>) outs(%a : memref<1000x1000xf32>)
      zrt.wait @done on @compute
      zrt.launch "train.add" on @compute ins(%s, %s : memref<250000xf32>, memref<250000xf32>) outs(%s : memref<250000xf32>)
    }
  }
}

//--- exposed.mlir
module {
  zrt.program @exposed placement #dist.placement<cpu, [4]> arena 5000000 align 64 {
    zrt.stream @compute
    zrt.stream @comm
    zrt.event @ready
    zrt.event @done
    zrt.buffer @a param : memref<1000x1000xf32>
    zrt.buffer @g grad_accum : memref<1000000xf32>
    zrt.step {
      %a = zrt.buffer_ref @a : memref<1000x1000xf32>
      %g = zrt.buffer_ref @g : memref<1000000xf32>
      %s = zrt.arena_view [0] : memref<250000xf32>
      %c = zrt.arena_view [1000000] : memref<1000x1000xf32>
      zrt.launch "train.matmul" on @compute ins(%a, %a : memref<1000x1000xf32>, memref<1000x1000xf32>) outs(%c : memref<1000x1000xf32>)
      zrt.record @ready on @compute
      zrt.wait @ready on @comm
      zrt.reduce_scatter sum axis 0 on @comm %g to %s : memref<1000000xf32> to memref<250000xf32>
      zrt.record @done on @comm
      zrt.wait @done on @compute
      zrt.launch "train.matmul" on @compute ins(%a, %c : memref<1000x1000xf32>, memref<1000x1000xf32>) outs(%a : memref<1000x1000xf32>)
      zrt.launch "train.add" on @compute ins(%s, %s : memref<250000xf32>, memref<250000xf32>) outs(%s : memref<250000xf32>)
    }
  }
}
