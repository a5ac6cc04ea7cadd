// RUN: zero-opt %s -split-input-file -verify-diagnostics --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=2})"

// Steps zero-shard rejects after train-materialize-optimizer and
// dist-data-parallel ran: it rewrites only the optimizer updates whose
// parameter, slots and results are persistent state it can shard. Explicit
// update ops written by hand go through both passes unchanged (their
// gradient gets averaged) and reach zero-shard as they are.

// The step returns a function of the updated parameter: the update's result
// is used by something other than a store to persistent state, so it cannot
// be replaced by an update of this rank's shard.

module @update_result_used attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<4xf32> init ones
  train.optimizer @sgd sgd lr 0.1
  func.func @step(%g: tensor<4xf32>) -> tensor<4xf32> attributes {train.step} {
    %w = train.load @w : tensor<4xf32>
    // expected-error @below {{'train.sgd' op has a result used by 'train.add'; zero-shard expects updated values to be stored to persistent state}}
    %new = train.sgd %w, %g with @sgd : tensor<4xf32>, tensor<4xf32>
    train.store %new to @w : tensor<4xf32>
    // expected-note @below {{used here}}
    %twice = train.add %new, %new : tensor<4xf32>
    return %twice : tensor<4xf32>
  }
}

// -----

// The same with a momentum update whose new momentum buffer feeds the loss.

module @slot_result_used attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<4xf32> init ones
  train.param @w.momentum slot of @w : tensor<4xf32> init zeros
  train.optimizer @momentum momentum lr 0.1 momentum 0.9
  func.func @step(%g: tensor<4xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<4xf32>
    %buf = train.load @w.momentum : tensor<4xf32>
    // expected-error @below {{'train.sgd_momentum' op has a result used by 'train.reduce_sum'; zero-shard expects updated values to be stored to persistent state}}
    %new, %new_buf = train.sgd_momentum %w, %g, %buf with @momentum : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
    train.store %new to @w : tensor<4xf32>
    train.store %new_buf to @w.momentum : tensor<4xf32>
    // expected-note @below {{used here}}
    %norm = train.reduce_sum %new_buf dims [0] : tensor<4xf32> -> tensor<f32>
    return %norm : tensor<f32>
  }
}

// -----

// An update of a tensor that is not loaded from persistent state.

module @param_not_loaded attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<4xf32> init ones
  train.optimizer @sgd sgd lr 0.1
  func.func @step(%g: tensor<4xf32>, %p: tensor<4xf32>) attributes {train.step} {
    // expected-error @below {{'train.sgd' op updates a tensor that is not loaded from persistent state; zero-shard shards the updates train-materialize-optimizer writes}}
    %new = train.sgd %p, %g with @sgd : tensor<4xf32>, tensor<4xf32>
    train.store %new to @w : tensor<4xf32>
    return
  }
}

// -----

// A momentum buffer that is a function argument, not an optimizer slot.

module @slot_not_loaded attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<4xf32> init ones
  train.optimizer @momentum momentum lr 0.1 momentum 0.9
  func.func @step(%g: tensor<4xf32>, %buf: tensor<4xf32>) -> tensor<4xf32> attributes {train.step} {
    %w = train.load @w : tensor<4xf32>
    // expected-error @below {{'train.sgd_momentum' op takes slot operand #0 that is not loaded from an optimizer slot}}
    %new, %new_buf = train.sgd_momentum %w, %g, %buf with @momentum : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
    train.store %new to @w : tensor<4xf32>
    return %new_buf : tensor<4xf32>
  }
}

// -----

// A momentum buffer loaded from another parameter rather than from a slot.

module @slot_is_a_param attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<4xf32> init ones
  train.param @other param : tensor<4xf32> init zeros
  train.optimizer @momentum momentum lr 0.1 momentum 0.9
  func.func @step(%g: tensor<4xf32>) attributes {train.step} {
    %w = train.load @w : tensor<4xf32>
    %buf = train.load @other : tensor<4xf32>
    // expected-error @below {{'train.sgd_momentum' op takes slot operand #0 that is not loaded from an optimizer slot}}
    %new, %new_buf = train.sgd_momentum %w, %g, %buf with @momentum : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
    train.store %new to @w : tensor<4xf32>
    train.store %new_buf to @other : tensor<4xf32>
    return
  }
}
