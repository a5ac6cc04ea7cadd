// RUN: zero-opt %s -split-input-file -verify-diagnostics --pass-pipeline="builtin.module(zero-lower-to-runtime)"

// The diagnostics of zero-lower-to-runtime: modules and steps the runtime
// cannot execute. The pass lowers one straight-line, data-parallel step
// (after train-materialize-optimizer, dist-data-parallel and zero-shard)
// whose ops are `train` and `dist` ops and splat constants; anything else
// is refused with a located error and the pass fails.
// zero-lower-to-runtime-options.mlir has the option errors.

//===----------------------------------------------------------------------===//
// The module and its functions
//===----------------------------------------------------------------------===//

// Without a placement there is no group to run the collectives over, nor a
// group size to pad buffers for.

// expected-error @below {{zero-lower-to-runtime: the module needs a dist.placement}}
module {
  func.func @unplaced(%x: tensor<4xf32>) -> tensor<4xf32> attributes {train.step} {
    return %x : tensor<4xf32>
  }
}

// -----

// There must be exactly one step function, and with gradient accumulation
// one apply step (train-materialize-optimizer writes the pair).

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  func.func @first(%x: tensor<4xf32>) -> tensor<4xf32> attributes {train.step} {
    return %x : tensor<4xf32>
  }
  // expected-error @below {{'func.func' op is a second train.step function; zero-lower-to-runtime lowers one training step}}
  func.func @second(%x: tensor<4xf32>) -> tensor<4xf32> attributes {train.step} {
    return %x : tensor<4xf32>
  }
}

// -----

// A module without a step has nothing to lower.

// expected-error @below {{zero-lower-to-runtime: expected one train.step function, found none}}
module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  func.func @not_a_step(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----

// A step that accumulates over micro-steps needs the apply step that
// updates from the accumulators.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  // expected-error @below {{'func.func' op accumulates gradients but the module has no apply step (train-materialize-optimizer writes both)}}
  func.func @accumulating(%x: tensor<4xf32>) -> tensor<4xf32> attributes {train.step, train.accumulate_steps = 4 : i64} {
    return %x : tensor<4xf32>
  }
}

// -----

// An apply step without a step that accumulates would never run.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> attributes {train.step} {
    return %x : tensor<4xf32>
  }
  // expected-error @below {{'func.func' op is an apply step, but the step does not accumulate gradients}}
  func.func @orphan_apply() attributes {train.apply_step} {
    return
  }
}

// -----

// The step is the program: a helper function it calls would be lost, so
// helpers must be inlined first.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  // expected-error @below {{'func.func' op is not the training step; inline it first (--inline) before zero-lower-to-runtime}}
  func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = train.relu %x : tensor<4xf32>
    return %y : tensor<4xf32>
  }
  func.func @calls_helper(%x: tensor<4xf32>) -> tensor<4xf32> attributes {train.step} {
    %y = func.call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

//===----------------------------------------------------------------------===//
// Control flow
//===----------------------------------------------------------------------===//

// -----

// The runtime replays a straight list of instructions: a step with several
// blocks is refused...

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  // expected-error @below {{'func.func' op has several blocks; zero-lower-to-runtime lowers straight-line steps only}}
  func.func @several_blocks(%x: tensor<4xf32>) -> tensor<4xf32> attributes {train.step} {
    cf.br ^next
  ^next:
    return %x : tensor<4xf32>
  }
}

// -----

// ... and so is an op with regions in it.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  func.func @region(%x: tensor<4xf32>) -> tensor<4xf32> attributes {train.step} {
    // expected-error @below {{'scf.execute_region' op has no runtime kernel}}
    %y = scf.execute_region -> tensor<4xf32> {
      %r = train.relu %x : tensor<4xf32>
      scf.yield %r : tensor<4xf32>
    }
    return %y : tensor<4xf32>
  }
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

// -----

// A constant is a fill: it must be a splat.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  func.func @not_splat() -> tensor<2xf32> attributes {train.step} {
    // expected-error @below {{'arith.constant' op cannot be lowered to the runtime: only splat tensor constants are supported}}
    %c = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
    return %c : tensor<2xf32>
  }
}

// -----

// `train.apply_gradient` leaves the optimizer state implicit; the runtime
// runs the explicit update ops train-materialize-optimizer makes of it.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<4xf32> init zeros
  train.optimizer @sgd sgd lr 1.000000e-01

  func.func @unmaterialized(%g: tensor<4xf32>) attributes {train.step} {
    // expected-error @below {{'train.apply_gradient' op must be materialized first: run train-materialize-optimizer (zero-pipeline does)}}
    train.apply_gradient %g to @w with @sgd : tensor<4xf32>
    return
  }
}

// -----

// The runtime has kernels for train ops only: upstream ops that zero-opt
// parses are refused, here math.exp...

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  func.func @math_op(%x: tensor<4xf32>) -> tensor<4xf32> attributes {train.step} {
    // expected-error @below {{'math.exp' op has no runtime kernel: the runtime executes train and dist ops and splat arith.constant}}
    %y = math.exp %x : tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

// ... arith.addf (use train.add)...

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  func.func @arith_op(%x: tensor<4xf32>) -> tensor<4xf32> attributes {train.step} {
    // expected-error @below {{'arith.addf' op has no runtime kernel: the runtime executes train and dist ops and splat arith.constant}}
    %y = arith.addf %x, %x : tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

// ... tensor.empty...

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  func.func @tensor_op() -> tensor<4xf32> attributes {train.step} {
    // expected-error @below {{'tensor.empty' op has no runtime kernel: the runtime executes train and dist ops and splat arith.constant}}
    %y = tensor.empty() : tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

// ... and linalg ops. A linalg op carries its body as a region, so it is
// currently refused by the region check before the kernel check; either
// message refuses it.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  func.func @linalg_op(%x: tensor<4xf32>, %out: tensor<4xf32>) -> tensor<4xf32> attributes {train.step} {
    // expected-error-re @below {{'linalg.add' op {{holds regions|has no runtime kernel}}}}
    %y = linalg.add ins(%x, %x : tensor<4xf32>, tensor<4xf32>) outs(%out : tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

// dist ops that earlier passes lower away have no runtime counterpart: the
// generic `dist.reshard` (dist-data-parallel turns it into the concrete
// collective)...

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  func.func @reshard(%x: tensor<4xf32>) -> tensor<4xf32> attributes {train.step} {
    // expected-error-re @below {{'dist.reshard' op is not lowered to the runtime: reshards and asynchronous collectives{{.*}}}}
    %y = dist.reshard %x from [P(sum)] to [B] : tensor<4xf32> -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

// ... and the explicitly asynchronous `*_start` / `dist.wait` pairs: the
// pass makes every collective asynchronous itself, with streams and events.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  func.func @start_and_wait(%x: tensor<4xf32>) -> tensor<4xf32> attributes {train.step} {
    // expected-error-re @below {{'dist.all_reduce_start' op is not lowered to the runtime: reshards and asynchronous collectives{{.*}}}}
    %t = dist.all_reduce_start sum %x axis 0 : tensor<4xf32> -> !dist.token<tensor<4xf32>>
    %y = dist.wait %t : !dist.token<tensor<4xf32>>
    return %y : tensor<4xf32>
  }
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

// -----

// The runtime's collectives split dimension 0 only; a reduce-scatter...

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  func.func @reduce_scatter_dim1(%x: tensor<4x2xf32>) -> tensor<4x1xf32> attributes {train.step} {
    // expected-error @below {{'dist.reduce_scatter' op splits dimension 1; the runtime's collectives split dimension 0 (use layout=flat or dim0)}}
    %y = dist.reduce_scatter sum %x axis 0 dim 1 : tensor<4x2xf32> -> tensor<4x1xf32>
    return %y : tensor<4x1xf32>
  }
}

// -----

// ... or an all-gather along dimension 1 is refused.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  func.func @all_gather_dim1(%x: tensor<4x1xf32>) -> tensor<4x2xf32> attributes {train.step} {
    // expected-error @below {{'dist.all_gather' op splits dimension 1; the runtime's collectives split dimension 0 (use layout=flat or dim0)}}
    %y = dist.all_gather %x axis 0 dim 1 : tensor<4x1xf32> -> tensor<4x2xf32>
    return %y : tensor<4x2xf32>
  }
}

// -----

// The runtime's inputs are statically shaped tensors.
module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  // expected-error @below {{'func.func' op takes or returns 'i1'; the runtime's inputs and outputs are statically shaped tensors}}
  func.func @step(%c: i1) attributes {train.step} {
    return
  }
}

// -----

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  // expected-error @below {{'func.func' op takes or returns 'tensor<?xf32>'; the runtime's inputs and outputs are statically shaped tensors}}
  func.func @step(%x: tensor<?xf32>) attributes {train.step} {
    return
  }
}

// -----

// The runtime's all_to_all exchanges blocks of dimension 0 only.
module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  func.func @step(%x: tensor<4x4xf32>) -> tensor<4x4xf32> attributes {train.step} {
    // expected-error @below {{'dist.all_to_all' op exchanges along dimensions 1 -> 1; the runtime's all_to_all splits and concatenates dimension 0}}
    %y = dist.all_to_all %x axis 0 split 1 concat 1 : tensor<4x4xf32> -> tensor<4x4xf32>
    return %y : tensor<4x4xf32>
  }
}
