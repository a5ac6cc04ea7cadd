// RUN: zero-opt %s -split-input-file -verify-diagnostics --pass-pipeline="builtin.module(train-autodiff)"

// Every diagnostic of train-autodiff and of train.minimize's verifier.

// An op without a gradient rule on the path from a parameter to the loss.
module {
  train.param @w param : tensor<4xf32> init zeros
  train.optimizer @sgd sgd lr 1.0e-01
  func.func @step(%x: tensor<4xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<4xf32>
    // expected-error @below {{'math.exp' op is on the path from a trainable parameter to the loss but has no gradient rule}}
    %e = math.exp %w : tensor<4xf32>
    %loss = train.reduce_sum %e dims [0] : tensor<4xf32> -> tensor<f32>
    // expected-note @below {{the loss is minimized here}}
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// An op without a rule off the path (only on the input side) is fine; a
// loss that reads no trainable parameter is not.
module {
  train.param @w frozen : tensor<4xf32> init zeros
  train.optimizer @sgd sgd lr 1.0e-01
  func.func @step(%x: tensor<4xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<4xf32>
    %e = math.exp %x : tensor<4xf32>
    %y = train.mul %e, %w : tensor<4xf32>
    %loss = train.reduce_sum %y dims [0] : tensor<4xf32> -> tensor<f32>
    // expected-error @below {{'train.minimize' op minimizes a loss that depends on no trainable parameter (every parameter it reads is frozen, or it reads none); there is nothing to train}}
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A non-scalar loss.
module {
  func.func @step(%x: tensor<4xf32>) attributes {train.step} {
    // expected-error @below {{'train.minimize' op minimizes a value of type 'tensor<4xf32>', but the loss must be a scalar: a 0-d float tensor such as tensor<f32> (reduce it first, e.g. with train.reduce_mean)}}
    train.minimize %x : tensor<4xf32>
    return
  }
}

// -----

// An integer loss.
module {
  func.func @step(%x: tensor<i32>) attributes {train.step} {
    // expected-error @below {{'train.minimize' op minimizes a value of type 'tensor<i32>', but the loss must be a scalar}}
    train.minimize %x : tensor<i32>
    return
  }
}

// -----

// train.minimize outside a training step.
module {
  func.func @helper(%x: tensor<f32>) {
    // expected-error @below {{'train.minimize' op must be in a function marked 'train.step': the loss belongs to a training step}}
    train.minimize %x : tensor<f32>
    return
  }
}

// -----

// Two losses in one step.
module {
  func.func @step(%x: tensor<f32>, %y: tensor<f32>) attributes {train.step} {
    train.minimize %x : tensor<f32>
    // expected-error @below {{'train.minimize' op is a second train.minimize in @step; a step minimizes one loss (add the losses into one scalar first)}}
    train.minimize %y : tensor<f32>
    return
  }
}

// -----

// Several optimizers and no optimizer= option.
module {
  train.param @w param : tensor<4xf32> init zeros
  train.optimizer @a sgd lr 1.0e-01
  train.optimizer @b sgd lr 1.0e-02
  func.func @step(%x: tensor<4xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<4xf32>
    %loss = train.reduce_sum %w dims [0] : tensor<4xf32> -> tensor<f32>
    // expected-error @below {{train-autodiff: the module declares 2 optimizers (@a, @b) and no parameter group ('with @name' on a train.param) tells which is the default; choose one with the pass option optimizer=NAME}}
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// No optimizer at all.
module {
  train.param @w param : tensor<4xf32> init zeros
  func.func @step(%x: tensor<4xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<4xf32>
    %loss = train.reduce_sum %w dims [0] : tensor<4xf32> -> tensor<f32>
    // expected-error @below {{train-autodiff: the module declares no train.optimizer to apply the gradients with; declare one}}
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A step that already applies gradients by hand.
module {
  train.param @w param : tensor<4xf32> init zeros
  train.optimizer @sgd sgd lr 1.0e-01
  func.func @step(%x: tensor<4xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<4xf32>
    %loss = train.reduce_sum %w dims [0] : tensor<4xf32> -> tensor<f32>
    // expected-error @below {{'train.apply_gradient' op is in a step with a train.minimize; train-autodiff generates every apply_gradient of such a step, remove the hand-written ones}}
    train.apply_gradient %x to @w with @sgd : tensor<4xf32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// The loss is minimized inside control flow.
module {
  train.param @w param : tensor<4xf32> init zeros
  train.optimizer @sgd sgd lr 1.0e-01
  func.func @step(%x: tensor<4xf32>, %c: i1) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<4xf32>
    %loss = train.reduce_sum %w dims [0] : tensor<4xf32> -> tensor<f32>
    scf.if %c {
      // expected-error @below {{'train.minimize' op is nested in control flow; train-autodiff needs the loss to be minimized at the top level of @step}}
      train.minimize %loss : tensor<f32>
    }
    return %loss : tensor<f32>
  }
}

// -----

// Control flow on the gradient path has no gradient rule.
module {
  train.param @w param : tensor<4xf32> init zeros
  train.optimizer @sgd sgd lr 1.0e-01
  func.func @step(%x: tensor<4xf32>, %c: i1) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<4xf32>
    // expected-error @below {{'scf.if' op is on the path from a trainable parameter to the loss but has no gradient rule}}
    %y = scf.if %c -> tensor<4xf32> {
      scf.yield %w : tensor<4xf32>
    } else {
      scf.yield %x : tensor<4xf32>
    }
    %loss = train.reduce_sum %y dims [0] : tensor<4xf32> -> tensor<f32>
    // expected-note @below {{the loss is minimized here}}
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A scalar that is not a tensor on the path: the rules build tensor ops.
module {
  train.param @w param : tensor<4xf32> init zeros
  train.optimizer @sgd sgd lr 1.0e-01
  func.func @step(%x: tensor<4xf32>, %s: f32) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<4xf32>
    %e = train.mul %w, %x : tensor<4xf32>
    %loss = train.reduce_sum %e dims [0] : tensor<4xf32> -> tensor<f32>
    // expected-error @below {{'tensor.extract' op produces a 'f32' on the path from a parameter to the loss; train-autodiff differentiates ranked tensors only}}
    %ext = tensor.extract %loss[] : tensor<f32>
    %scaled = arith.mulf %ext, %s : f32
    %back = tensor.from_elements %scaled : tensor<f32>
    train.minimize %back : tensor<f32>
    return %back : tensor<f32>
  }
}

// -----

// A parameter that zero-shard already sharded.
module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<4xf32> sharded flat over 0 -> tensor<2xf32> init zeros
  train.optimizer @sgd sgd lr 1.0e-01
  func.func @step(%x: tensor<4xf32>) -> tensor<f32> attributes {train.step} {
    // expected-error @below {{'train.load' op loads w, which is stored sharded; run train-autodiff before zero-shard}}
    %w = train.load @w : tensor<2xf32>
    %loss = train.reduce_sum %w dims [0] : tensor<2xf32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}
