// RUN: zero-opt %s -split-input-file -verify-diagnostics --pass-pipeline="builtin.module(zero-shard{stage=2})"

// zero-shard run on hand-written steps that are not what
// train-materialize-optimizer and dist-data-parallel leave: a step that is
// not data parallel yet, one already sharded, one with implicit updates or
// unaveraged gradients, and gradient accumulators in forms it does not know.

// No dist.zero_stage: dist-data-parallel has not run.

// expected-error @below {{zero-shard: the module is not data parallel; run dist-data-parallel first}}
module @not_data_parallel attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<4xf32> init ones
  train.optimizer @sgd sgd lr 0.1
  func.func @step(%g: tensor<4xf32>) attributes {train.step} {
    train.apply_gradient %g to @w with @sgd : tensor<4xf32>
    return
  }
}

// -----

// zero-shard already ran: the module is at stage 1.

// expected-error @below {{zero-shard: the module is already at ZeRO stage 1}}
module @already_sharded attributes {dist.placement = #dist.placement<cpu, [2]>, dist.zero_stage = 1 : i64} {
  train.param @w param : tensor<4xf32> init ones
  train.param @w.momentum slot of @w : tensor<4xf32> sharded flat over 0 -> tensor<2xf32> init zeros
}

// -----

// Data parallel but placed nowhere.

// expected-error @below {{zero-shard: the module has no 'dist.placement'}}
module @no_placement attributes {dist.zero_stage = 0 : i64} {
  train.param @w param : tensor<4xf32> init ones
}

// -----

// train-materialize-optimizer has not run: the update is still implicit.

module @implicit_update attributes {dist.placement = #dist.placement<cpu, [2]>, dist.zero_stage = 0 : i64} {
  train.param @w param : tensor<4xf32> init ones
  train.optimizer @sgd sgd lr 0.1
  func.func @step(%g: tensor<4xf32> {dist.sbp = #dist.sbp<[S(0)]>}) attributes {train.step} {
    %avg = dist.all_reduce mean %g axis 0 : tensor<4xf32>
    // expected-error @below {{'train.apply_gradient' op is still implicit; run train-materialize-optimizer before zero-shard}}
    train.apply_gradient %avg to @w with @sgd : tensor<4xf32>
    return
  }
}

// -----

// The gradient is summed over the ranks, not averaged.

module @summed_gradient attributes {dist.placement = #dist.placement<cpu, [2]>, dist.zero_stage = 0 : i64} {
  train.param @w param : tensor<4xf32> init ones
  train.optimizer @sgd sgd lr 0.1
  func.func @step(%g: tensor<4xf32> {dist.sbp = #dist.sbp<[S(0)]>}) attributes {train.step} {
    %sum = dist.all_reduce sum %g axis 0 : tensor<4xf32>
    %w = train.load @w : tensor<4xf32>
    // expected-error @below {{'train.sgd' op takes a gradient that is not averaged by 'dist.all_reduce mean' over axis 0; run dist-data-parallel before zero-shard}}
    %new = train.sgd %w, %sum with @sgd : tensor<4xf32>, tensor<4xf32>
    train.store %new to @w : tensor<4xf32>
    return
  }
}

// -----

// On a mesh the gradient must be averaged over each axis, the innermost
// first (dist-data-parallel{mesh=...}); here it is averaged within the node
// only.

module @averaged_over_axis_1 attributes {dist.placement = #dist.placement<cpu, [2, 2]>, dist.zero_stage = 0 : i64} {
  train.param @w param : tensor<4xf32> init ones
  train.optimizer @sgd sgd lr 0.1
  func.func @step(%g: tensor<4xf32>) attributes {train.step} {
    %avg = dist.all_reduce mean %g axis 1 : tensor<4xf32>
    %w = train.load @w : tensor<4xf32>
    // expected-error @below {{'train.sgd' op takes a gradient that is not averaged by 'dist.all_reduce mean' over each axis of the mesh, the innermost first; run dist-data-parallel before zero-shard}}
    %new = train.sgd %w, %avg with @sgd : tensor<4xf32>, tensor<4xf32>
    train.store %new to @w : tensor<4xf32>
    return
  }
}

// -----

// The gradient reaches the update without any all-reduce.

module @unreduced_gradient attributes {dist.placement = #dist.placement<cpu, [2]>, dist.zero_stage = 0 : i64} {
  train.param @w param : tensor<4xf32> init ones
  train.optimizer @sgd sgd lr 0.1
  func.func @step(%g: tensor<4xf32>) attributes {train.step} {
    %w = train.load @w : tensor<4xf32>
    // expected-error @below {{'train.sgd' op takes a gradient that is not averaged by 'dist.all_reduce mean' over axis 0; run dist-data-parallel before zero-shard}}
    %new = train.sgd %w, %g with @sgd : tensor<4xf32>, tensor<4xf32>
    train.store %new to @w : tensor<4xf32>
    return
  }
}

// -----

// Stage 2 shards gradient accumulators, which must be written as
// train-materialize-optimizer does: `acc = acc + grad` from a load of the
// same accumulator. Here the sum starts from something else.

module @accumulate_without_load attributes {dist.placement = #dist.placement<cpu, [2]>, dist.zero_stage = 0 : i64} {
  train.param @w param : tensor<4xf32> init ones
  train.param @w.grad grad_accum of @w : tensor<4xf32> init zeros
  func.func @step(%g: tensor<4xf32>, %x: tensor<4xf32>) attributes {train.step} {
    // expected-error @below {{without loading it first}}
    %sum = train.add %x, %g : tensor<4xf32>
    train.store %sum to @w.grad : tensor<4xf32>
    return
  }
}

// -----

// An accumulator written with something that is neither a sum nor a splat
// reset.

module @unknown_accumulator_write attributes {dist.placement = #dist.placement<cpu, [2]>, dist.zero_stage = 0 : i64} {
  train.param @w param : tensor<4xf32> init ones
  train.param @w.grad grad_accum of @w : tensor<4xf32> init zeros
  func.func @step(%g: tensor<4xf32>) attributes {train.step} {
    %twice = train.scale %g by 2.0 : tensor<4xf32>
    // expected-error @below {{in a form zero-shard does not know; it shards the accumulation train-materialize-optimizer writes}}
    train.store %twice to @w.grad : tensor<4xf32>
    return
  }
}

// -----

// An accumulator read other than by the averaging train.scale of the apply
// step.

module @unknown_accumulator_read attributes {dist.placement = #dist.placement<cpu, [2]>, dist.zero_stage = 0 : i64} {
  train.param @w param : tensor<4xf32> init ones
  train.param @w.grad grad_accum of @w : tensor<4xf32> init zeros
  func.func @step() -> tensor<4xf32> attributes {train.step} {
    // expected-error @below {{in a form zero-shard does not know}}
    %acc = train.load @w.grad : tensor<4xf32>
    return %acc : tensor<4xf32>
  }
}
