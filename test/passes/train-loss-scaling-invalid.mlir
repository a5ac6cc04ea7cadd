// RUN: zero-opt %s -split-input-file -verify-diagnostics --pass-pipeline="builtin.module(train-autodiff,train-materialize-optimizer{accumulate-steps=2})"

// The initial scale multiplies the loss: below 1 it would shrink gradients.
module {
  // expected-error @+1 {{needs a finite loss_scale >= 1 (the initial dynamic loss scale), got 5.000000e-01}}
  train.optimizer @opt sgd lr 0.1 loss_scale 0.5
}

// -----

// growth_interval belongs to dynamic loss scaling.
module {
  // expected-error @+1 {{takes growth_interval only with loss_scale}}
  train.optimizer @opt sgd lr 0.1 growth_interval 10
}

// -----

// The count of good steps is an f32, exact up to 2^24.
module {
  // expected-error @+1 {{needs growth_interval in [1, 2^24] steps, got 20000000}}
  train.optimizer @opt sgd lr 0.1 loss_scale 1024.0 growth_interval 20000000
}

// -----

// The scaler's state is a replicated f32 scalar.
module {
  // expected-error @+1 {{is loss-scaler state, a tensor<f32> scalar, got 'tensor<2xf32>'}}
  train.param @loss_scale scaler : tensor<2xf32> init zeros
}

// -----

// train-autodiff declares @loss_scale itself.
module {
  train.param @w param : tensor<4xf32> init zeros
  train.param @loss_scale param : tensor<4xf32> init zeros
  // expected-error @+1 {{scales the loss, which needs the symbol @loss_scale for the loss scaler's state, but it is already taken}}
  train.optimizer @opt sgd lr 0.1 loss_scale 1024.0
  func.func @step(%x: tensor<4xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<4xf32>
    %p = train.mul %w, %x : tensor<4xf32>
    %loss = train.reduce_sum %p dims [0] : tensor<4xf32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// With accumulation the apply step unscales the summed micro-batch
// gradients itself, so it needs the train.unscale train-autodiff writes; a
// hand-written overflow flag cannot be moved there.
module {
  train.param @w param : tensor<4xf32> init zeros
  train.optimizer @opt sgd lr 0.1
  func.func @step(%g: tensor<4xf32>, %found: tensor<f32>) attributes {train.step} {
    // expected-error @+1 {{'train.apply_gradient' op skips its update on overflow but applies a gradient that the train.unscale computing the flag does not produce; gradient accumulation needs the unscale train-autodiff writes}}
    train.apply_gradient %g to @w with @opt skip_if %found : tensor<4xf32>
    return
  }
}

// -----

// The scale doubles after growth_interval good steps: at least one.
func.func @interval(%s: tensor<f32>, %g: tensor<f32>, %f: tensor<f32>) {
  // expected-error @+1 {{attribute 'growth_interval' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %0, %1 = train.update_loss_scale %s, %g, %f growth_interval 0 : tensor<f32>
  return
}
