// RUN: not zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-materialize-optimizer)" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MATERIALIZE
// RUN: not zero-opt %s -split-input-file --pass-pipeline="builtin.module(dist-data-parallel)" -o /dev/null 2>&1 | FileCheck %s --check-prefix=DATA-PARALLEL
// RUN: not zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-shard)" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SHARD

// The diagnostics of the ZeRO passes: inputs a pass refuses, and option
// values no pass accepts.
//
// Each of the three RUN lines above runs one pass over every case below, so
// a case written for one pass may also fail under another (a module that is
// not data parallel is refused by zero-shard, whatever it was written to
// show). The checks therefore pin each error to its case: the pattern runs
// from the message, across the line break ({{[[:space:]]+}}), to the source
// line MLIR quotes under it, which names the case's module or operation.

//===----------------------------------------------------------------------===//
// train-materialize-optimizer
//===----------------------------------------------------------------------===//

// A parameter takes one apply_gradient: the gradients of a tied parameter
// are summed in the step and applied once.

// MATERIALIZE: error: 'train.apply_gradient' op applies a second gradient to @tied; sum the gradients of a tied parameter and apply them once{{[[:space:]]+}}train.apply_gradient %dw_head to @tied
// MATERIALIZE: note: first applied here{{[[:space:]]+}}train.apply_gradient %dw_embed to @tied
module @two_gradients attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @tied param : tensor<4xf32> init zeros
  train.optimizer @sgd sgd lr 1.0e-01

  func.func @step(%dw_embed: tensor<4xf32>, %dw_head: tensor<4xf32>) attributes {train.step} {
    train.apply_gradient %dw_embed to @tied with @sgd : tensor<4xf32>
    train.apply_gradient %dw_head to @tied with @sgd : tensor<4xf32>
    return
  }
}

// -----

// An update under control flow would not run once per step.

// MATERIALIZE: error: 'train.apply_gradient' op sits in a nested region; apply gradients at the top level of the step so that they run once per step{{[[:space:]]+}}train.apply_gradient %dw_maybe to @w
module @nested_apply attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<4xf32> init zeros
  train.optimizer @sgd sgd lr 1.0e-01

  func.func @step(%dw_maybe: tensor<4xf32>, %apply: i1) attributes {train.step} {
    scf.if %apply {
      train.apply_gradient %dw_maybe to @w with @sgd : tensor<4xf32>
    }
    return
  }
}

// -----

// The symbols the pass declares must be free: here @w.m exists already, as
// if the pass had run before.

// MATERIALIZE: error: 'train.param' op needs the symbol @w.m for its slot, but it is already taken (was train-materialize-optimizer already run?){{[[:space:]]+}}train.param @w param : tensor<4xf32> init ones
module @slot_name_taken attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<4xf32> init ones
  train.param @w.m slot of @w : tensor<4xf32> init zeros
  train.optimizer @adam adam lr 1.0e-03

  func.func @step(%dw: tensor<4xf32>) attributes {train.step} {
    train.apply_gradient %dw to @w with @adam : tensor<4xf32>
    return
  }
}

//===----------------------------------------------------------------------===//
// dist-data-parallel
//===----------------------------------------------------------------------===//

// -----

// Without a placement and without ranks=N there is no group to average over.

// DATA-PARALLEL: error: dist-data-parallel: the module has no 'dist.placement'; place it (e.g. #dist.placement<cpu, [4]>) or pass ranks=N{{[[:space:]]+}}module @unplaced {
module @unplaced {
  train.param @w param : tensor<4xf32> init zeros
  train.optimizer @sgd sgd lr 1.0e-01

  func.func @step(%x: tensor<2x4xf32>) attributes {train.step} {
    %dw = train.reduce_sum %x dims [0] : tensor<2x4xf32> -> tensor<4xf32>
    train.apply_gradient %dw to @w with @sgd : tensor<4xf32>
    return
  }
}

// -----

// Running the pass twice would average every gradient twice; the
// dist.zero_stage it sets marks the module as done.

// DATA-PARALLEL: error: dist-data-parallel: the module is already data parallel ('dist.zero_stage' is set){{[[:space:]]+}}module @already_data_parallel
module @already_data_parallel attributes {dist.placement = #dist.placement<cpu, [2]>, dist.zero_stage = 0 : i64} {
  train.param @w param : tensor<4xf32> init zeros
  train.optimizer @sgd sgd lr 1.0e-01

  func.func @step(%x: tensor<2x4xf32> {dist.sbp = #dist.sbp<[S(0)]>}) attributes {train.step} {
    %dw = train.reduce_sum %x dims [0] : tensor<2x4xf32> -> tensor<4xf32>
    %dw_mean = dist.all_reduce mean %dw axis 0 : tensor<4xf32>
    %w = train.load @w : tensor<4xf32>
    %new_w = train.sgd %w, %dw_mean with @sgd : tensor<4xf32>, tensor<4xf32>
    train.store %new_w to @w : tensor<4xf32>
    return
  }
}

//===----------------------------------------------------------------------===//
// zero-shard
//===----------------------------------------------------------------------===//

// -----

// zero-shard partitions a data-parallel step: it needs the gradient
// averages dist-data-parallel inserts, and refuses a module without them.

// SHARD: error: zero-shard: the module is not data parallel; run dist-data-parallel first{{[[:space:]]+}}module @shard_before_data_parallel
module @shard_before_data_parallel attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<4xf32> init zeros
  train.optimizer @sgd sgd lr 1.0e-01

  func.func @step(%dw: tensor<4xf32>) attributes {train.step} {
    %w = train.load @w : tensor<4xf32>
    %new_w = train.sgd %w, %dw with @sgd : tensor<4xf32>, tensor<4xf32>
    train.store %new_w to @w : tensor<4xf32>
    return
  }
}

// -----

// zero-shard shards explicit optimizer state; an implicit apply_gradient
// has none yet.

// SHARD: error: 'train.apply_gradient' op is still implicit; run train-materialize-optimizer before zero-shard{{[[:space:]]+}}train.apply_gradient %dw_mean to @w
module @still_implicit attributes {dist.placement = #dist.placement<cpu, [2]>, dist.zero_stage = 0 : i64} {
  train.param @w param : tensor<4xf32> init zeros
  train.optimizer @sgd sgd lr 1.0e-01

  func.func @step(%x: tensor<2x4xf32> {dist.sbp = #dist.sbp<[S(0)]>}) attributes {train.step} {
    %dw = train.reduce_sum %x dims [0] : tensor<2x4xf32> -> tensor<4xf32>
    %dw_mean = dist.all_reduce mean %dw axis 0 : tensor<4xf32>
    train.apply_gradient %dw_mean to @w with @sgd : tensor<4xf32>
    return
  }
}

// -----

// A module is sharded once.

// SHARD: error: zero-shard: the module is already at ZeRO stage 1{{[[:space:]]+}}module @already_sharded
module @already_sharded attributes {dist.placement = #dist.placement<cpu, [2]>, dist.zero_stage = 1 : i64} {
  func.func @step() attributes {train.step} {
    return
  }
}

// -----

// The update's gradient must be the average dist-data-parallel wrote: here
// the module claims stage 0 but the update reads the local gradient.

// SHARD: error: 'train.sgd' op takes a gradient that is not averaged by 'dist.all_reduce mean' over axis 0; run dist-data-parallel before zero-shard{{[[:space:]]+}}%new_w = train.sgd %w, %dw_local
module @not_averaged attributes {dist.placement = #dist.placement<cpu, [2]>, dist.zero_stage = 0 : i64} {
  train.param @w param : tensor<4xf32> init zeros
  train.optimizer @sgd sgd lr 1.0e-01

  func.func @step(%x: tensor<2x4xf32> {dist.sbp = #dist.sbp<[S(0)]>}) attributes {train.step} {
    %dw_local = train.reduce_sum %x dims [0] : tensor<2x4xf32> -> tensor<4xf32>
    %w = train.load @w : tensor<4xf32>
    %new_w = train.sgd %w, %dw_local with @sgd : tensor<4xf32>, tensor<4xf32>
    train.store %new_w to @w : tensor<4xf32>
    return
  }
}

//===----------------------------------------------------------------------===//
// Option values
//===----------------------------------------------------------------------===//

// Option values are checked before the module is looked at, so every case
// above fails the same way; each check matches the first.

// At least one micro-batch per optimizer step.
// RUN: not zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-materialize-optimizer{accumulate-steps=0})" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ACCUMULATE-ZERO
// ACCUMULATE-ZERO: error: train-materialize-optimizer: accumulate-steps must be at least 1, got 0

// A negative group size.
// RUN: not zero-opt %s -split-input-file --pass-pipeline="builtin.module(dist-data-parallel{ranks=-2})" -o /dev/null 2>&1 | FileCheck %s --check-prefix=RANKS-NEGATIVE
// RANKS-NEGATIVE: error: dist-data-parallel: ranks must be positive, got -2

// zero-shard implements stages 1 to 3; stage 0 is dist-data-parallel alone.
// RUN: not zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-shard{stage=4})" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SHARD-STAGE-4
// SHARD-STAGE-4: error: zero-shard: stage must be 1, 2 or 3, got 4 (stage 0 is dist-data-parallel alone)
// RUN: not zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-shard{stage=0})" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SHARD-STAGE-0
// SHARD-STAGE-0: error: zero-shard: stage must be 1, 2 or 3, got 0 (stage 0 is dist-data-parallel alone)

// Two shard layouts exist; `replicated` is a storage layout but not a way
// to shard. An enum-valued option names its choices.
// RUN: not zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-shard{layout=rows})" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SHARD-LAYOUT-ROWS
// SHARD-LAYOUT-ROWS: for the --layout option: 'rows' is not a choice: flat or dim0
// RUN: not zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-shard{layout=replicated})" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SHARD-LAYOUT-REPLICATED
// SHARD-LAYOUT-REPLICATED: for the --layout option: 'replicated' is not a choice: flat or dim0

// The pipeline goes from stage 0 (plain data parallelism) to stage 3.
// RUN: not zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-pipeline{stage=7})" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PIPELINE-STAGE
// PIPELINE-STAGE: error: zero-pipeline: stage must be 0, 1, 2 or 3, got 7

// Reports come as text, JSON or (with a machine) a timeline, from the
// pipeline and from zero-report.
// RUN: not zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-pipeline{report=yaml})" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PIPELINE-REPORT
// PIPELINE-REPORT: for the --report option: 'yaml' is not a choice: none, text, json or timeline
// RUN: not zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-report{format=yaml})" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT-FORMAT
// REPORT-FORMAT: for the --format option: 'yaml' is not a choice: text, json or timeline

// A report file that cannot be created (its directory does not exist).
// RUN: not zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-report{output=%t.no-such-dir/report.json})" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT-OUTPUT -DPATH=%t.no-such-dir/report.json -DMESSAGE=%errc_ENOENT
// REPORT-OUTPUT: error: zero-report: cannot write '[[PATH]]': [[MESSAGE]]
