// RUN: zero-opt %s -split-input-file -verify-diagnostics --pass-pipeline="builtin.module(zero-verify)"

// zero-verify rejects collectives under control flow that depends on
// rank-local values, when the paths could issue different collective
// sequences: some ranks would wait forever in a collective the others skip.
//
// Rank-local values are the step inputs marked split (`S(d)`), loads of
// sharded state, the results of `reduce_scatter`, `slice` and
// `all_to_all`, and everything computed from them. Every case here is
// rejected; zero-verify-ok.mlir has the programs it accepts.

//===----------------------------------------------------------------------===//
// scf.if
//===----------------------------------------------------------------------===//

// A branch on the rank's own batch (a split step input) that all-reduces
// only in the then branch: ranks whose batch takes the else branch skip
// the all-reduce.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @if_then_only(%x: tensor<8xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %g: tensor<8xf32>)
      -> tensor<8xf32> attributes {train.step} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %first = tensor.extract %x[%c0] : tensor<8xf32>
    // expected-note @below {{the rank-local value comes from here}}
    %positive = arith.cmpf ogt, %first, %zero : f32
    // expected-note @below {{the control flow is here}}
    %r = scf.if %positive -> tensor<8xf32> {
      // expected-error @below {{'dist.all_reduce' is issued under 'scf.if' whose condition depends on rank-local values; ranks that decide differently issue different collectives and hang}}
      %sum = dist.all_reduce sum %g axis 0 : tensor<8xf32>
      scf.yield %sum : tensor<8xf32>
    } else {
      scf.yield %g : tensor<8xf32>
    }
    return %r : tensor<8xf32>
  }
}

// -----

// Both branches issue collectives, but not the same sequence: the same two
// collectives in the other order still hang (a rank in the all-reduce
// waits for peers that are in the all-gather).

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @if_different_order(%x: tensor<8xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %g: tensor<8xf32>, %s: tensor<2xf32>)
      -> (tensor<8xf32>, tensor<8xf32>) attributes {train.step} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %first = tensor.extract %x[%c0] : tensor<8xf32>
    // expected-note @below {{the rank-local value comes from here}}
    %positive = arith.cmpf ogt, %first, %zero : f32
    // expected-note @below {{the control flow is here}}
    %r:2 = scf.if %positive -> (tensor<8xf32>, tensor<8xf32>) {
      // expected-error @below {{'dist.all_reduce' is issued under 'scf.if' whose condition depends on rank-local values}}
      %sum = dist.all_reduce sum %g axis 0 : tensor<8xf32>
      %full = dist.all_gather %s axis 0 dim 0 : tensor<2xf32> -> tensor<8xf32>
      scf.yield %sum, %full : tensor<8xf32>, tensor<8xf32>
    } else {
      %full = dist.all_gather %s axis 0 dim 0 : tensor<2xf32> -> tensor<8xf32>
      %sum = dist.all_reduce sum %g axis 0 : tensor<8xf32>
      scf.yield %sum, %full : tensor<8xf32>, tensor<8xf32>
    }
    return %r#0, %r#1 : tensor<8xf32>, tensor<8xf32>
  }
}

// -----

// Both branches all-reduce the same tensor type, but with different
// reductions: a different collective, so still rejected.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @if_different_reduction(%x: tensor<8xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %g: tensor<8xf32>)
      -> tensor<8xf32> attributes {train.step} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %first = tensor.extract %x[%c0] : tensor<8xf32>
    // expected-note @below {{the rank-local value comes from here}}
    %positive = arith.cmpf ogt, %first, %zero : f32
    // expected-note @below {{the control flow is here}}
    %r = scf.if %positive -> tensor<8xf32> {
      // expected-error @below {{'dist.all_reduce' is issued under 'scf.if' whose condition depends on rank-local values}}
      %sum = dist.all_reduce sum %g axis 0 : tensor<8xf32>
      scf.yield %sum : tensor<8xf32>
    } else {
      %max = dist.all_reduce max %g axis 0 : tensor<8xf32>
      scf.yield %max : tensor<8xf32>
    }
    return %r : tensor<8xf32>
  }
}

// -----

// A load of a sharded parameter is this rank's shard, so a condition on it
// is rank-local even though no step input is split.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @w param : tensor<8xf32> sharded flat over 0 -> tensor<2xf32>

  func.func @if_on_sharded_load(%g: tensor<8xf32>) -> tensor<8xf32> attributes {train.step} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %shard = train.load @w : tensor<2xf32>
    %first = tensor.extract %shard[%c0] : tensor<2xf32>
    // expected-note @below {{the rank-local value comes from here}}
    %positive = arith.cmpf ogt, %first, %zero : f32
    // expected-note @below {{the control flow is here}}
    %r = scf.if %positive -> tensor<8xf32> {
      // expected-error @below {{'dist.all_reduce' is issued under 'scf.if' whose condition depends on rank-local values}}
      %sum = dist.all_reduce sum %g axis 0 : tensor<8xf32>
      scf.yield %sum : tensor<8xf32>
    } else {
      scf.yield %g : tensor<8xf32>
    }
    return %r : tensor<8xf32>
  }
}

// -----

// A reduce-scatter leaves every rank a different shard: a condition on the
// result is rank-local, although it comes out of a collective.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @if_on_reduce_scatter(%g: tensor<8xf32>) -> tensor<8xf32> attributes {train.step} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %shard = dist.reduce_scatter sum %g axis 0 dim 0 : tensor<8xf32> -> tensor<2xf32>
    %first = tensor.extract %shard[%c0] : tensor<2xf32>
    // expected-note @below {{the rank-local value comes from here}}
    %positive = arith.cmpf ogt, %first, %zero : f32
    // expected-note @below {{the control flow is here}}
    %r = scf.if %positive -> tensor<8xf32> {
      // expected-error @below {{'dist.all_reduce' is issued under 'scf.if' whose condition depends on rank-local values}}
      %sum = dist.all_reduce sum %g axis 0 : tensor<8xf32>
      scf.yield %sum : tensor<8xf32>
    } else {
      scf.yield %g : tensor<8xf32>
    }
    return %r : tensor<8xf32>
  }
}

// -----

// `dist.slice` moves no data, but its result is still this rank's own
// shard of a replicated tensor.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @if_on_slice(%g: tensor<8xf32>) -> tensor<8xf32> attributes {train.step} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %shard = dist.slice %g axis 0 dim 0 : tensor<8xf32> -> tensor<2xf32>
    %first = tensor.extract %shard[%c0] : tensor<2xf32>
    // expected-note @below {{the rank-local value comes from here}}
    %positive = arith.cmpf ogt, %first, %zero : f32
    // expected-note @below {{the control flow is here}}
    %r = scf.if %positive -> tensor<8xf32> {
      // expected-error @below {{'dist.all_reduce' is issued under 'scf.if' whose condition depends on rank-local values}}
      %sum = dist.all_reduce sum %g axis 0 : tensor<8xf32>
      scf.yield %sum : tensor<8xf32>
    } else {
      scf.yield %g : tensor<8xf32>
    }
    return %r : tensor<8xf32>
  }
}

// -----

// Locality flows out of control flow too: an scf.if on a uniform condition
// that yields a rank-local value in one branch has a rank-local result, and
// a branch on that result is rejected. The collective is found however deep
// it sits in the branch.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @local_through_if_result(%x: tensor<8xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %g: tensor<8xf32>, %flag: i1)
      -> tensor<8xf32> attributes {train.step} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %picked = scf.if %flag -> f32 {
      %first = tensor.extract %x[%c0] : tensor<8xf32>
      scf.yield %first : f32
    } else {
      scf.yield %zero : f32
    }
    // expected-note @below {{the rank-local value comes from here}}
    %positive = arith.cmpf ogt, %picked, %zero : f32
    // expected-note @below {{the control flow is here}}
    %r = scf.if %positive -> tensor<8xf32> {
      %inner = scf.if %flag -> tensor<8xf32> {
        // expected-error @below {{'dist.all_reduce' is issued under 'scf.if' whose condition depends on rank-local values}}
        %sum = dist.all_reduce sum %g axis 0 : tensor<8xf32>
        scf.yield %sum : tensor<8xf32>
      } else {
        scf.yield %g : tensor<8xf32>
      }
      scf.yield %inner : tensor<8xf32>
    } else {
      scf.yield %g : tensor<8xf32>
    }
    return %r : tensor<8xf32>
  }
}

//===----------------------------------------------------------------------===//
// Loops
//===----------------------------------------------------------------------===//

// -----

// A loop whose trip count comes from the rank's batch runs a different
// number of all-reduces on each rank, even with the same collective in
// every iteration.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @for_local_bound(%x: tensor<8xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %g: tensor<8xf32>)
      -> tensor<8xf32> attributes {train.step} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %first = tensor.extract %x[%c0] : tensor<8xf32>
    %count = arith.fptosi %first : f32 to i64
    // expected-note @below {{the rank-local value comes from here}}
    %n = arith.index_cast %count : i64 to index
    // expected-note @below {{the control flow is here}}
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %g) -> tensor<8xf32> {
      // expected-error @below {{'dist.all_reduce' is issued under 'scf.for' whose trip count depends on rank-local values; ranks that decide differently issue different collectives and hang}}
      %sum = dist.all_reduce sum %acc axis 0 : tensor<8xf32>
      scf.yield %sum : tensor<8xf32>
    }
    return %r : tensor<8xf32>
  }
}

// -----

// The step of a loop counts as much as its bounds.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @for_local_step(%x: tensor<8xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %g: tensor<8xf32>)
      -> tensor<8xf32> attributes {train.step} {
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %first = tensor.extract %x[%c0] : tensor<8xf32>
    %count = arith.fptosi %first : f32 to i64
    // expected-note @below {{the rank-local value comes from here}}
    %step = arith.index_cast %count : i64 to index
    // expected-note @below {{the control flow is here}}
    %r = scf.for %i = %c0 to %c16 step %step iter_args(%acc = %g) -> tensor<8xf32> {
      // expected-error @below {{'dist.all_reduce' is issued under 'scf.for' whose trip count depends on rank-local values}}
      %sum = dist.all_reduce sum %acc axis 0 : tensor<8xf32>
      scf.yield %sum : tensor<8xf32>
    }
    return %r : tensor<8xf32>
  }
}

// -----

// A while loop whose condition reads the rank's batch.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @while_local_condition(%x: tensor<8xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %g: tensor<8xf32>)
      -> tensor<8xf32> attributes {train.step} {
    %c0 = arith.constant 0 : index
    %first = tensor.extract %x[%c0] : tensor<8xf32>
    // expected-note @below {{the control flow is here}}
    %r = scf.while (%acc = %g) : (tensor<8xf32>) -> tensor<8xf32> {
      %last = tensor.extract %acc[%c0] : tensor<8xf32>
      // expected-note @below {{the rank-local value comes from here}}
      %more = arith.cmpf olt, %last, %first : f32
      scf.condition(%more) %acc : tensor<8xf32>
    } do {
    ^bb0(%a: tensor<8xf32>):
      // expected-error @below {{'dist.all_reduce' is issued under 'scf.while' whose loop condition depends on rank-local values; ranks that decide differently issue different collectives and hang}}
      %sum = dist.all_reduce sum %a axis 0 : tensor<8xf32>
      scf.yield %sum : tensor<8xf32>
    }
    return %r : tensor<8xf32>
  }
}

// -----

// A while loop that starts from a rank-local value: its region arguments,
// and so its condition, are rank-local too.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @while_local_init(%x: tensor<8xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %g: tensor<8xf32>)
      -> f32 attributes {train.step} {
    %c0 = arith.constant 0 : index
    %limit = arith.constant 10.0 : f32
    %one = arith.constant 1.0 : f32
    %first = tensor.extract %x[%c0] : tensor<8xf32>
    // expected-note @below {{the control flow is here}}
    %r = scf.while (%v = %first) : (f32) -> f32 {
      // expected-note @below {{the rank-local value comes from here}}
      %more = arith.cmpf olt, %v, %limit : f32
      scf.condition(%more) %v : f32
    } do {
    ^bb0(%a: f32):
      // expected-error @below {{'dist.all_reduce' is issued under 'scf.while' whose loop condition depends on rank-local values}}
      %sum = dist.all_reduce sum %g axis 0 : tensor<8xf32>
      %next = arith.addf %a, %one : f32
      scf.yield %next : f32
    }
    return %r : f32
  }
}

//===----------------------------------------------------------------------===//
// Unstructured control flow
//===----------------------------------------------------------------------===//

// -----

// A conditional branch on the rank's batch in a step that issues a
// collective on one of the paths.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @cond_br_local(%x: tensor<8xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %g: tensor<8xf32>)
      -> tensor<8xf32> attributes {train.step} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %first = tensor.extract %x[%c0] : tensor<8xf32>
    // expected-note @below {{the rank-local value comes from here}}
    %positive = arith.cmpf ogt, %first, %zero : f32
    // expected-error @below {{branches on a rank-local value in a step that issues collectives; ranks that branch differently hang}}
    cf.cond_br %positive, ^reduce, ^skip
  ^reduce:
    %sum = dist.all_reduce sum %g axis 0 : tensor<8xf32>
    return %sum : tensor<8xf32>
  ^skip:
    return %g : tensor<8xf32>
  }
}

// -----

// The same with a reduce-scatter's shard deciding.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @cond_br_on_reduce_scatter(%g: tensor<8xf32>) -> tensor<8xf32> attributes {train.step} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %shard = dist.reduce_scatter sum %g axis 0 dim 0 : tensor<8xf32> -> tensor<2xf32>
    %first = tensor.extract %shard[%c0] : tensor<2xf32>
    // expected-note @below {{the rank-local value comes from here}}
    %positive = arith.cmpf ogt, %first, %zero : f32
    // expected-error @below {{branches on a rank-local value in a step that issues collectives}}
    cf.cond_br %positive, ^reduce, ^skip
  ^reduce:
    %sum = dist.all_reduce sum %g axis 0 : tensor<8xf32>
    return %sum : tensor<8xf32>
  ^skip:
    return %g : tensor<8xf32>
  }
}

// -----

//===----------------------------------------------------------------------===//
// Locality carried by loops, block arguments and async collectives
//===----------------------------------------------------------------------===//

// A loop-carried flag that becomes rank-local inside the loop: the init is
// uniform, but the yielded value is computed from the rank's batch, so from
// the second iteration on the branch differs between ranks.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @loop_carried_flag(%x: tensor<8xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %g: tensor<8xf32>)
      -> tensor<8xf32> attributes {train.step} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %false = arith.constant false
    %zero = arith.constant 0.0 : f32
    %first = tensor.extract %x[%c0] : tensor<8xf32>
    // expected-note @below {{the rank-local value is carried in here from rank-local data}}
    %r:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%flag = %false, %acc = %g) -> (i1, tensor<8xf32>) {
      // expected-note @below {{the control flow is here}}
      %next = scf.if %flag -> tensor<8xf32> {
        // expected-error @below {{'dist.all_reduce' is issued under 'scf.if' whose condition depends on rank-local values}}
        %sum = dist.all_reduce sum %acc axis 0 : tensor<8xf32>
        scf.yield %sum : tensor<8xf32>
      } else {
        scf.yield %acc : tensor<8xf32>
      }
      %positive = arith.cmpf ogt, %first, %zero : f32
      scf.yield %positive, %next : i1, tensor<8xf32>
    }
    return %r#1 : tensor<8xf32>
  }
}

// -----

// A rank-local value forwarded to a block argument, then branched on.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @branch_on_block_argument(%x: tensor<8xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %g: tensor<8xf32>)
      -> tensor<8xf32> attributes {train.step} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %first = tensor.extract %x[%c0] : tensor<8xf32>
    cf.br ^check(%first : f32)
  ^check(%v: f32):
    // expected-note @below {{the rank-local value comes from here}}
    %c = arith.cmpf ogt, %v, %zero : f32
    // expected-error @below {{branches on a rank-local value in a step that issues collectives; ranks that branch differently hang}}
    cf.cond_br %c, ^reduce, ^skip
  ^reduce:
    %sum = dist.all_reduce sum %g axis 0 : tensor<8xf32>
    return %sum : tensor<8xf32>
  ^skip:
    return %g : tensor<8xf32>
  }
}

// -----

// One branch loops over four all-reduces, the other issues one: the flat
// list of collective kinds is the same, the sequences are not.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @loop_versus_single(%x: tensor<8xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %g: tensor<8xf32>)
      -> tensor<8xf32> attributes {train.step} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %zero = arith.constant 0.0 : f32
    %first = tensor.extract %x[%c0] : tensor<8xf32>
    // expected-note @below {{the rank-local value comes from here}}
    %positive = arith.cmpf ogt, %first, %zero : f32
    // expected-note @below {{the control flow is here}}
    %r = scf.if %positive -> tensor<8xf32> {
      %l = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %g) -> tensor<8xf32> {
        // expected-error @below {{'dist.all_reduce' is issued under 'scf.if' whose condition depends on rank-local values}}
        %sum = dist.all_reduce sum %acc axis 0 : tensor<8xf32>
        scf.yield %sum : tensor<8xf32>
      }
      scf.yield %l : tensor<8xf32>
    } else {
      %sum = dist.all_reduce sum %g axis 0 : tensor<8xf32>
      scf.yield %sum : tensor<8xf32>
    }
    return %r : tensor<8xf32>
  }
}

// -----

// An asynchronous reduce-scatter leaves each rank its own shard, as the
// synchronous one does.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @async_shard_condition(%g: tensor<8xf32>, %h: tensor<8xf32>)
      -> tensor<8xf32> attributes {train.step} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %t = dist.reduce_scatter_start sum %g axis 0 dim 0 : tensor<8xf32> -> !dist.token<tensor<2xf32>>
    %s = dist.wait %t : !dist.token<tensor<2xf32>>
    %first = tensor.extract %s[%c0] : tensor<2xf32>
    // expected-note @below {{the rank-local value comes from here}}
    %positive = arith.cmpf ogt, %first, %zero : f32
    // expected-note @below {{the control flow is here}}
    %r = scf.if %positive -> tensor<8xf32> {
      // expected-error @below {{'dist.all_reduce' is issued under 'scf.if' whose condition depends on rank-local values}}
      %sum = dist.all_reduce sum %h axis 0 : tensor<8xf32>
      scf.yield %sum : tensor<8xf32>
    } else {
      scf.yield %h : tensor<8xf32>
    }
    return %r : tensor<8xf32>
  }
}
