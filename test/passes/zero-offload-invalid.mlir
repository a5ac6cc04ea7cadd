// RUN: not zero-opt %s --pass-pipeline="builtin.module(zero-pipeline{stage=0 lower-to-runtime=1 offload=optimizer})" 2>&1 | FileCheck %s --check-prefix=STAGE0
// RUN: not zero-opt %s --pass-pipeline="builtin.module(zero-pipeline{stage=2 lower-to-runtime=1 offload=optimizer+params})" 2>&1 | FileCheck %s --check-prefix=PARAMS-STAGE2
// RUN: not zero-opt %s --pass-pipeline="builtin.module(zero-pipeline{stage=2 lower-to-runtime=1 offload=cpu})" 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not zero-opt %s --pass-pipeline="builtin.module(zero-pipeline{stage=2 lower-to-runtime=1 offload=auto})" 2>&1 | FileCheck %s --check-prefix=NO-BUDGET
// RUN: not zero-opt %s --pass-pipeline="builtin.module(zero-pipeline{stage=2 lower-to-runtime=1 device-memory-budget=-1})" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not zero-opt %s --pass-pipeline="builtin.module(zero-offload{device-memory-budget=-1})" 2>&1 | FileCheck %s --check-prefix=NEGATIVE-OFFLOAD
// RUN: not zero-opt %s --pass-pipeline="builtin.module(zero-pipeline{stage=2 lower-to-runtime=1 offload=auto device-memory-budget=2147})" 2>&1 | FileCheck %s --check-prefix=NOTHING-FITS
// RUN: not zero-opt %s --pass-pipeline="builtin.module(zero-pipeline{stage=3 lower-to-runtime=1 offload=auto device-memory-budget=1603})" 2>&1 | FileCheck %s --check-prefix=NOTHING-FITS3
// RUN: not zero-opt %s --pass-pipeline="builtin.module(zero-pipeline{stage=2 lower-to-runtime=1 offload=optimizer device-memory-budget=2147})" 2>&1 | FileCheck %s --check-prefix=OVER
// RUN: not zero-opt %s --pass-pipeline="builtin.module(zero-pipeline{stage=2 offload=optimizer})" 2>&1 | FileCheck %s --check-prefix=NOT-LOWERED
// RUN: not zero-opt %s --pass-pipeline="builtin.module(zero-offload{offload=optimizer})" 2>&1 | FileCheck %s --check-prefix=NO-PROGRAM

// Options zero-offload refuses, each with what to do instead, and budgets
// no placement meets, with the shortfall and what was tried. The model is
// test/passes/zero-offload.mlir's: 2148 device bytes per rank is the least
// at stage 2 (all optimizer state on the host), 1604 at stage 3 (@big's
// parameter shard too; moving @small's as well costs more staging than it
// saves).

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @big param : tensor<16x8xf32> init normal(0.0, 0.02)
  train.param @small param : tensor<8x2xf32> init normal(0.0, 0.02)
  train.optimizer @adam adam lr 1.0e-03

  func.func @step(%x: tensor<4x16xf32>, %dy: tensor<4x2xf32>) -> tensor<f32>
      attributes {train.step} {
    %big = train.load @big : tensor<16x8xf32>
    %small = train.load @small : tensor<8x2xf32>
    %h = train.matmul %x, %big : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
    %y = train.matmul %h, %small : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
    %loss = train.reduce_mean %y dims [0, 1] : tensor<4x2xf32> -> tensor<f32>
    %dsmall = train.matmul %h, %dy transpose_a : tensor<4x8xf32>, tensor<4x2xf32> -> tensor<8x2xf32>
    %dh = train.matmul %dy, %small transpose_b : tensor<4x2xf32>, tensor<8x2xf32> -> tensor<4x8xf32>
    %dbig = train.matmul %x, %dh transpose_a : tensor<4x16xf32>, tensor<4x8xf32> -> tensor<16x8xf32>
    train.apply_gradient %dbig to @big with @adam : tensor<16x8xf32>
    train.apply_gradient %dsmall to @small with @adam : tensor<8x2xf32>
    return %loss : tensor<f32>
  }
}

// STAGE0: error: zero-offload: offload=optimizer needs ZeRO stage 1, 2 or 3 (at stage 0 every rank would hold and update the whole optimizer state on its host)
// PARAMS-STAGE2: error: zero-offload: offload=optimizer+params needs ZeRO stage 3, where parameters are sharded; this program is stage 2
// UNKNOWN: for the --offload option: 'cpu' is not a choice: none, optimizer, optimizer+params or auto
// NO-BUDGET: error: zero-offload: offload=auto needs a device-memory-budget to fit
// zero-pipeline checks its options before it runs a pass; zero-offload alone
// checks its own.
// NEGATIVE: error: zero-pipeline: device-memory-budget must not be negative, got -1
// NEGATIVE-OFFLOAD: error: zero-offload: device-memory-budget must be a number of bytes (0 for none), got -1
// NOTHING-FITS: error: zero-offload: no placement fits a device-memory-budget of 2147 B per rank: the least device memory this program can use is 2148 B, short by 1 B; tried nothing in host memory (2724 B), all optimizer state (2148 B)
// NOTHING-FITS3: error: zero-offload: no placement fits a device-memory-budget of 1603 B per rank: the least device memory this program can use is 1604 B, short by 1 B; tried nothing in host memory (2436 B), all optimizer state (1860 B), and then the sharded parameters one by one, largest first (all of them: 1636 B)
// OVER: error: zero-offload: with offload=optimizer the device needs 2148 B per rank (868 B of buffers, 1280 B of arena), over the device-memory-budget of 2147 B by 1 B; offload=auto finds the least offload that fits, if any
// NOT-LOWERED: error: zero-pipeline: offload and device-memory-budget place the lowered program's memory; they need lower-to-runtime
// NO-PROGRAM: error: zero-offload: expected a zrt.program; run zero-lower-to-runtime first (zero-pipeline with lower-to-runtime does)
