// Machines zero-report cannot predict on, and predictions it cannot make:
// each is one located error naming the problem, and exit status 1. A
// machine file must give every field (docs/zero-opt.md lists them), with
// positive bandwidths and rates, and nothing else.
//
// RUN: rm -rf %t && split-file %s %t
// DEFINE: %{report} = zero-opt %t/program.mlir -o /dev/null --pass-pipeline
// RUN: not %{report}="builtin.module(zero-report{machine=%t/missing.json})" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not %{report}="builtin.module(zero-report{machine=%t/negative.json})" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not %{report}="builtin.module(zero-report{machine=%t/unknown.json})" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not %{report}="builtin.module(zero-report{machine=%t/mistyped.json})" 2>&1 | FileCheck %s --check-prefix=MISTYPED
// RUN: not %{report}="builtin.module(zero-report{machine=%t/nolinks.json})" 2>&1 | FileCheck %s --check-prefix=NOLINKS
// RUN: not %{report}="builtin.module(zero-report{machine=%t/broken.json})" 2>&1 | FileCheck %s --check-prefix=BROKEN
// RUN: not %{report}="builtin.module(zero-report{machine=%t/absent.json})" 2>&1 | FileCheck %s --check-prefix=ABSENT
// RUN: not %{report}="builtin.module(zero-report{machine=a100})" 2>&1 | FileCheck %s --check-prefix=PRESET
// RUN: sed -e 's/-1e9/1e9/' -e 's/"async_collectives": true/"async_collectives": true, "peak_flops": 1e12/' %t/negative.json > %t/low-peak.json
// RUN: not %{report}="builtin.module(zero-report{machine=%t/low-peak.json})" 2>&1 | FileCheck %s --check-prefix=LOW-PEAK
// RUN: sed -e 's/-1e9/1e9/' -e 's/"async_collectives": true/"async_collectives": true, "matmul_tile": [128, 64]/' %t/negative.json > %t/tile.json
// RUN: not %{report}="builtin.module(zero-report{machine=%t/tile.json})" 2>&1 | FileCheck %s --check-prefix=TILE
// RUN: not %{report}="builtin.module(zero-report{machine=%t/two-axes.json})" 2>&1 | FileCheck %s --check-prefix=ZERO-RATE
// RUN: not %{report}="builtin.module(zero-report{format=timeline})" 2>&1 | FileCheck %s --check-prefix=TIMELINE
// RUN: not zero-opt %zero_src_root/examples/mlp.mlir -o /dev/null --pass-pipeline="builtin.module(zero-report{machine=cpu})" 2>&1 | FileCheck %s --check-prefix=UNLOWERED
// RUN: not zero-opt %t/grid.mlir -o /dev/null --pass-pipeline="builtin.module(zero-report{machine=cpu})" 2>&1 | FileCheck %s --check-prefix=AXIS
// RUN: not zero-opt %zero_src_root/examples/mlp.mlir -o /dev/null --pass-pipeline="builtin.module(zero-pipeline{machine=cpu report=timeline})" 2>&1 | FileCheck %s --check-prefix=PIPELINE
// RUN: not zero-opt %zero_src_root/examples/mlp.mlir -o /dev/null --pass-pipeline="builtin.module(zero-pipeline{stage=3 machine=a100})" 2>&1 | FileCheck %s --check-prefix=PIPELINE-PRESET
// RUN: not zero-opt %zero_src_root/examples/mlp.mlir -o /dev/null --pass-pipeline="builtin.module(zero-pipeline{report=timeline lower-to-runtime=true})" 2>&1 | FileCheck %s --check-prefix=PIPELINE-TIMELINE

// MISSING: error: machine '{{.*}}missing.json': missing field 'memory_bandwidth'
// NEGATIVE: error: machine '{{.*}}negative.json': field 'links[0].bandwidth' must be positive, got -1000000000
// UNKNOWN: error: machine '{{.*}}unknown.json': unknown field 'matmul_flops.fp8'
// MISTYPED: error: machine '{{.*}}mistyped.json': field 'async_collectives' must be true or false
// NOLINKS: error: machine '{{.*}}nolinks.json': field 'links' must be a non-empty array
// BROKEN: error: machine '{{.*}}broken.json': not valid JSON
// ABSENT: error: machine '{{.*}}absent.json': cannot read it: No such file or directory
// PRESET: error: machine 'a100' is neither a preset (a100-40gb-nvlink-8, a100-80gb-nvlink-8, a100-40gb-nodes-roce200, h100-nvlink-8, h200-nvlink-8, h100-nodes-ib400, h100-96gb-nvlink-8, h100-96gb-nodes-ib400, cpu) nor a .json file

// A datasheet peak below the achieved matmul rate is a typo in one of them
// (MFU would pass 100 %); a GEMM tile has three sizes.
// LOW-PEAK: error: machine '{{.*}}low-peak.json': field 'peak_flops' (1e+12) is below the machine's fastest matmul rate (2e+12); it is the card's datasheet peak, which no kernel exceeds
// TILE: error: machine '{{.*}}tile.json': field 'matmul_tile' must be three integers from 1 to 65536: the output rows, output columns and contracted depth of a GEMM kernel's tile, such as [128, 128, 64]; got [128,64]

// A rate of zero is refused (links for more placement axes than the
// program uses are not).
// ZERO-RATE: error: machine '{{.*}}two-axes.json': field 'matmul_flops.bf16' must be positive, got 0

// TIMELINE: error: zero-report: format=timeline draws the predicted step; it needs machine=

// The prediction is of the lowered program: a module that only has the
// training step (examples/mlp.mlir) is refused.
// UNLOWERED: error: zero-report: machine= predicts the step of the lowered program, and the module has no zrt.program: run zero-lower-to-runtime first

// A collective over placement axis 1 on a machine that describes one axis.
// AXIS: error: machine 'cpu' has links for 1 placement axis(es); this collective runs over axis 1

// zero-pipeline draws the predicted step after lowering: without the
// lowering, or without a machine, there is nothing to draw. (machine= alone
// is fine: it places the stage-3 gathers.) A machine that does not load
// fails before any pass runs.
// PIPELINE: error: zero-pipeline: report=timeline draws the predicted step of the lowered program; it needs machine= and lower-to-runtime=true
// PIPELINE-TIMELINE: error: zero-pipeline: report=timeline draws the predicted step of the lowered program; it needs machine= and lower-to-runtime=true
// PIPELINE-PRESET: error: machine 'a100' is neither a preset (a100-40gb-nvlink-8, a100-80gb-nvlink-8, a100-40gb-nodes-roce200, h100-nvlink-8, h200-nvlink-8, h100-nodes-ib400, h100-96gb-nvlink-8, h100-96gb-nodes-ib400, cpu) nor a .json file

//--- missing.json
{
  "name": "missing",
  "links": [{"bandwidth": 1e9, "latency": 1e-6}],
  "matmul_flops": {"f32": 1e12, "bf16": 2e12, "f16": 2e12},
  "launch_overhead": 0,
  "host_link_bandwidth": 1e9,
  "host_memory_bandwidth": 1e9,
  "async_collectives": true
}

//--- negative.json
{
  "name": "negative",
  "links": [{"bandwidth": -1e9, "latency": 1e-6}],
  "matmul_flops": {"f32": 1e12, "bf16": 2e12, "f16": 2e12},
  "memory_bandwidth": 1e10,
  "launch_overhead": 0,
  "host_link_bandwidth": 1e9,
  "host_memory_bandwidth": 1e9,
  "async_collectives": true
}

//--- unknown.json
{
  "name": "unknown",
  "links": [{"bandwidth": 1e9, "latency": 1e-6}],
  "matmul_flops": {"f32": 1e12, "bf16": 2e12, "f16": 2e12, "fp8": 4e12},
  "memory_bandwidth": 1e10,
  "launch_overhead": 0,
  "host_link_bandwidth": 1e9,
  "host_memory_bandwidth": 1e9,
  "async_collectives": true
}

//--- mistyped.json
{
  "name": "mistyped",
  "links": [{"bandwidth": 1e9, "latency": 1e-6}],
  "matmul_flops": {"f32": 1e12, "bf16": 2e12, "f16": 2e12},
  "memory_bandwidth": 1e10,
  "launch_overhead": 0,
  "host_link_bandwidth": 1e9,
  "host_memory_bandwidth": 1e9,
  "async_collectives": "yes"
}

//--- nolinks.json
{
  "name": "nolinks",
  "links": [],
  "matmul_flops": {"f32": 1e12, "bf16": 2e12, "f16": 2e12},
  "memory_bandwidth": 1e10,
  "launch_overhead": 0,
  "host_link_bandwidth": 1e9,
  "host_memory_bandwidth": 1e9,
  "async_collectives": true
}

//--- broken.json
{"name": "broken",

//--- two-axes.json
{
  "name": "two-axes",
  "links": [{"bandwidth": 1e9, "latency": 1e-6}, {"bandwidth": 1e8, "latency": 1e-5}],
  "matmul_flops": {"f32": 1e12, "bf16": 0, "f16": 2e12},
  "memory_bandwidth": 1e10,
  "launch_overhead": 0,
  "host_link_bandwidth": 1e9,
  "host_memory_bandwidth": 1e9,
  "async_collectives": true
}

//--- program.mlir
module {
  zrt.program @p placement #dist.placement<cpu, [2]> arena 0 align 64 {
    zrt.stream @compute
    zrt.buffer @a param : memref<4xf32>
    zrt.step {
      %a = zrt.buffer_ref @a : memref<4xf32>
      zrt.launch "train.add" on @compute ins(%a, %a : memref<4xf32>, memref<4xf32>) outs(%a : memref<4xf32>)
    }
  }
}

//--- grid.mlir
module {
  zrt.program @p placement #dist.placement<cpu, [2, 2]> arena 0 align 64 {
    zrt.stream @compute
    zrt.buffer @a param : memref<4xf32>
    zrt.step {
      %a = zrt.buffer_ref @a : memref<4xf32>
      zrt.all_reduce sum axis 1 on @compute %a to %a : memref<4xf32> to memref<4xf32>
    }
  }
}
