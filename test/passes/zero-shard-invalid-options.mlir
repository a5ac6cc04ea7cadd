// RUN: not zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=4})" 2>&1 | FileCheck %s --check-prefix=STAGE4
// RUN: not zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=0})" 2>&1 | FileCheck %s --check-prefix=STAGE0
// RUN: not zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{layout=rows})" 2>&1 | FileCheck %s --check-prefix=ROWS
// RUN: not zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{layout=replicated})" 2>&1 | FileCheck %s --check-prefix=REPLICATED
// RUN: not zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{min-shard-elements=-1})" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=3 max-reuse-distance=-2})" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,zero-shard)" 2>&1 | FileCheck %s --check-prefix=BEFORE-DP
// RUN: not zero-opt %s --pass-pipeline="builtin.module(dist-data-parallel,zero-shard)" 2>&1 | FileCheck %s --check-prefix=BEFORE-MATERIALIZE
// RUN: not zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard,zero-shard{stage=2})" 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=3 layout=dim0 min-shard-elements=0 max-reuse-distance=0})" | FileCheck %s --check-prefix=VALID

// zero-shard's options and its place in the pipeline, on a step that is
// valid: each error comes from the options or the pass order alone. The
// diagnostics are located at the module and the pass prints no IR.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<4x2xf32> init normal(0.0, 0.1)
  train.optimizer @sgd sgd lr 0.1
  func.func @step(%x: tensor<3x4xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<4x2xf32>
    %y = train.matmul %x, %w : tensor<3x4xf32>, tensor<4x2xf32> -> tensor<3x2xf32>
    %loss = train.reduce_sum %y dims [0, 1] : tensor<3x2xf32> -> tensor<f32>
    %dy = arith.constant dense<1.0> : tensor<3x2xf32>
    %dw = train.matmul %x, %dy transpose_a : tensor<3x4xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
    train.apply_gradient %dw to @w with @sgd : tensor<4x2xf32>
    return %loss : tensor<f32>
  }
}

// Only stages 1-3 exist; stage 0 is dist-data-parallel alone.
// STAGE4: zero-shard-invalid-options.mlir:[[# @LINE - 15]]:1: error: zero-shard: stage must be 1, 2 or 3, got 4 (stage 0 is dist-data-parallel alone)
// STAGE4-NOT: train.param
// STAGE0: zero-shard-invalid-options.mlir:[[# @LINE - 17]]:1: error: zero-shard: stage must be 1, 2 or 3, got 0 (stage 0 is dist-data-parallel alone)

// Only flat and dim0 shard; 'replicated' names a storage layout, not a way
// to shard.
// ROWS:       for the --layout option: 'rows' is not a choice: flat or dim0
// REPLICATED: for the --layout option: 'replicated' is not a choice: flat or dim0

// NEGATIVE: error: zero-shard: min-shard-elements and max-reuse-distance must not be negative

// Before dist-data-parallel the module is not marked data parallel.
// BEFORE-DP: error: zero-shard: the module is not data parallel; run dist-data-parallel first

// Before train-materialize-optimizer the update is still implicit.
// BEFORE-MATERIALIZE:      zero-shard-invalid-options.mlir:[[# @LINE - 21]]:5: error: 'train.apply_gradient' op is still implicit; run train-materialize-optimizer before zero-shard
// BEFORE-MATERIALIZE-NEXT: train.apply_gradient %dw to @w with @sgd

// A second zero-shard finds the module already sharded.
// TWICE: error: zero-shard: the module is already at ZeRO stage 1
// TWICE-NOT: dist.zero_stage

// Zero is a valid value of both numeric options (their defaults).
// VALID: dist.zero_stage = 3
