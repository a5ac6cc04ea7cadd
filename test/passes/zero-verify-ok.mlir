// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-verify)" | FileCheck %s

// The programs zero-verify accepts: every rank issues the same collective
// sequence, whatever its local data. The pass only checks; the IR comes out
// unchanged. zero-verify.mlir has the programs it rejects.

// A branch on the rank's batch whose two branches issue the same
// collectives in the same order (here on different operands): every rank
// joins the same all-reduce whichever way it goes.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @if_same_collectives(%x: tensor<8xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %g: tensor<8xf32>, %h: tensor<8xf32>)
      -> tensor<8xf32> attributes {train.step} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %first = tensor.extract %x[%c0] : tensor<8xf32>
    %positive = arith.cmpf ogt, %first, %zero : f32
    %r = scf.if %positive -> tensor<8xf32> {
      %sum = dist.all_reduce sum %g axis 0 : tensor<8xf32>
      scf.yield %sum : tensor<8xf32>
    } else {
      %scaled = arith.addf %h, %h : tensor<8xf32>
      %sum = dist.all_reduce sum %scaled axis 0 : tensor<8xf32>
      scf.yield %sum : tensor<8xf32>
    }
    return %r : tensor<8xf32>
  }
}

// CHECK-LABEL: func.func @if_same_collectives
// CHECK:         %[[COND:.+]] = arith.cmpf ogt
// CHECK:         scf.if %[[COND]]
// CHECK-NEXT:      dist.all_reduce sum
// CHECK:         } else {
// CHECK:           dist.all_reduce sum

// -----

// An all-reduce's result is the same on every rank, so a branch on it is
// uniform even though it was computed from the rank's batch.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @if_on_all_reduce(%x: tensor<8xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %g: tensor<8xf32>)
      -> tensor<8xf32> attributes {train.step} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %mean = dist.all_reduce mean %x axis 0 : tensor<8xf32>
    %first = tensor.extract %mean[%c0] : tensor<8xf32>
    %positive = arith.cmpf ogt, %first, %zero : f32
    %r = scf.if %positive -> tensor<8xf32> {
      %sum = dist.all_reduce sum %g axis 0 : tensor<8xf32>
      scf.yield %sum : tensor<8xf32>
    } else {
      scf.yield %g : tensor<8xf32>
    }
    return %r : tensor<8xf32>
  }
}

// CHECK-LABEL: func.func @if_on_all_reduce
// CHECK:         %[[MEAN:.+]] = dist.all_reduce mean
// CHECK:         %[[FIRST:.+]] = tensor.extract %[[MEAN]]
// CHECK:         %[[COND:.+]] = arith.cmpf ogt, %[[FIRST]]
// CHECK:         scf.if %[[COND]]
// CHECK-NEXT:      dist.all_reduce sum

// -----

// An all-gather of a shard is the whole tensor on every rank: uniform again,
// although the shard came from a reduce-scatter.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @if_on_all_gather(%g: tensor<8xf32>) -> tensor<8xf32> attributes {train.step} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %shard = dist.reduce_scatter sum %g axis 0 dim 0 : tensor<8xf32> -> tensor<2xf32>
    %full = dist.all_gather %shard axis 0 dim 0 : tensor<2xf32> -> tensor<8xf32>
    %first = tensor.extract %full[%c0] : tensor<8xf32>
    %positive = arith.cmpf ogt, %first, %zero : f32
    %r = scf.if %positive -> tensor<8xf32> {
      %sum = dist.all_reduce sum %g axis 0 : tensor<8xf32>
      scf.yield %sum : tensor<8xf32>
    } else {
      scf.yield %g : tensor<8xf32>
    }
    return %r : tensor<8xf32>
  }
}

// CHECK-LABEL: func.func @if_on_all_gather
// CHECK:         %[[FULL:.+]] = dist.all_gather
// CHECK:         %[[FIRST:.+]] = tensor.extract %[[FULL]]
// CHECK:         %[[COND:.+]] = arith.cmpf ogt, %[[FIRST]]
// CHECK:         scf.if %[[COND]]

// -----

// A replicated parameter is the same on every rank; only loads of sharded
// state are rank-local.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @w param : tensor<8xf32>

  func.func @if_on_replicated_load(%g: tensor<8xf32>) -> tensor<8xf32> attributes {train.step} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %w = train.load @w : tensor<8xf32>
    %first = tensor.extract %w[%c0] : tensor<8xf32>
    %positive = arith.cmpf ogt, %first, %zero : f32
    %r = scf.if %positive -> tensor<8xf32> {
      %sum = dist.all_reduce sum %g axis 0 : tensor<8xf32>
      scf.yield %sum : tensor<8xf32>
    } else {
      scf.yield %g : tensor<8xf32>
    }
    return %r : tensor<8xf32>
  }
}

// CHECK-LABEL: func.func @if_on_replicated_load
// CHECK:         %[[W:.+]] = train.load @w
// CHECK:         %[[FIRST:.+]] = tensor.extract %[[W]]
// CHECK:         scf.if

// -----

// Rank-local control flow is fine when it issues no collective: the
// all-reduce after the branch is reached by every rank.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @if_without_collectives(%x: tensor<8xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %g: tensor<8xf32>)
      -> tensor<8xf32> attributes {train.step} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %first = tensor.extract %x[%c0] : tensor<8xf32>
    %positive = arith.cmpf ogt, %first, %zero : f32
    %picked = scf.if %positive -> tensor<8xf32> {
      scf.yield %x : tensor<8xf32>
    } else {
      scf.yield %g : tensor<8xf32>
    }
    %sum = dist.all_reduce sum %picked axis 0 : tensor<8xf32>
    return %sum : tensor<8xf32>
  }
}

// CHECK-LABEL: func.func @if_without_collectives
// CHECK:         %[[PICKED:.+]] = scf.if
// CHECK-NEXT:      scf.yield
// CHECK-NEXT:    } else {
// CHECK-NEXT:      scf.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    dist.all_reduce sum %[[PICKED]]

// -----

// A loop with uniform bounds runs the same number of collectives on every
// rank, even when it carries rank-local data into them.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @for_uniform_bound(%x: tensor<8xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %g: tensor<8xf32>)
      -> tensor<8xf32> attributes {train.step} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %x) -> tensor<8xf32> {
      %sum = dist.all_reduce mean %acc axis 0 : tensor<8xf32>
      %next = arith.addf %sum, %x : tensor<8xf32>
      scf.yield %next : tensor<8xf32>
    }
    return %r : tensor<8xf32>
  }
}

// CHECK-LABEL: func.func @for_uniform_bound
// CHECK:         scf.for
// CHECK-NEXT:      dist.all_reduce mean

// -----

// A trip count taken from an all-reduced value is uniform too.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @for_bound_from_all_reduce(%x: tensor<8xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %g: tensor<8xf32>)
      -> tensor<8xf32> attributes {train.step} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %max = dist.all_reduce max %x axis 0 : tensor<8xf32>
    %first = tensor.extract %max[%c0] : tensor<8xf32>
    %count = arith.fptosi %first : f32 to i64
    %n = arith.index_cast %count : i64 to index
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %g) -> tensor<8xf32> {
      %sum = dist.all_reduce sum %acc axis 0 : tensor<8xf32>
      scf.yield %sum : tensor<8xf32>
    }
    return %r : tensor<8xf32>
  }
}

// CHECK-LABEL: func.func @for_bound_from_all_reduce
// CHECK:         %[[N:.+]] = arith.index_cast
// CHECK:         scf.for %{{.+}} = %{{.+}} to %[[N]] step
// CHECK-NEXT:      dist.all_reduce sum

// -----

// A while loop whose condition only reads uniform values.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @while_uniform_condition(%x: tensor<8xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %g: tensor<8xf32>)
      -> tensor<8xf32> attributes {train.step} {
    %c0 = arith.constant 0 : index
    %limit = arith.constant 100.0 : f32
    %r = scf.while (%acc = %g) : (tensor<8xf32>) -> tensor<8xf32> {
      %last = tensor.extract %acc[%c0] : tensor<8xf32>
      %more = arith.cmpf olt, %last, %limit : f32
      scf.condition(%more) %acc : tensor<8xf32>
    } do {
    ^bb0(%a: tensor<8xf32>):
      %sum = dist.all_reduce sum %a axis 0 : tensor<8xf32>
      scf.yield %sum : tensor<8xf32>
    }
    return %r : tensor<8xf32>
  }
}

// CHECK-LABEL: func.func @while_uniform_condition
// CHECK:         scf.while
// CHECK:           scf.condition
// CHECK:         } do {
// CHECK:           dist.all_reduce sum

// -----

// A conditional branch on a uniform value in a step with collectives.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @cond_br_uniform(%x: tensor<8xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %g: tensor<8xf32>)
      -> tensor<8xf32> attributes {train.step} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %mean = dist.all_reduce mean %x axis 0 : tensor<8xf32>
    %first = tensor.extract %mean[%c0] : tensor<8xf32>
    %positive = arith.cmpf ogt, %first, %zero : f32
    cf.cond_br %positive, ^reduce, ^skip
  ^reduce:
    %sum = dist.all_reduce sum %g axis 0 : tensor<8xf32>
    return %sum : tensor<8xf32>
  ^skip:
    return %g : tensor<8xf32>
  }
}

// CHECK-LABEL: func.func @cond_br_uniform
// CHECK:         %[[COND:.+]] = arith.cmpf ogt
// CHECK-NEXT:    cf.cond_br %[[COND]], ^[[REDUCE:.+]], ^{{.+}}
// CHECK:       ^[[REDUCE]]:
// CHECK-NEXT:    dist.all_reduce sum

// -----

// A conditional branch on the rank's batch in a step without collectives:
// nothing to hang on.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @cond_br_no_collectives(%x: tensor<8xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %g: tensor<8xf32>)
      -> tensor<8xf32> attributes {train.step} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %first = tensor.extract %x[%c0] : tensor<8xf32>
    %positive = arith.cmpf ogt, %first, %zero : f32
    cf.cond_br %positive, ^double, ^keep
  ^double:
    %doubled = arith.addf %g, %g : tensor<8xf32>
    return %doubled : tensor<8xf32>
  ^keep:
    return %g : tensor<8xf32>
  }
}

// CHECK-LABEL: func.func @cond_br_no_collectives
// CHECK:         %[[COND:.+]] = arith.cmpf ogt
// CHECK-NEXT:    cf.cond_br %[[COND]]
// CHECK-NOT:     dist.
// CHECK:         return

// -----

// A branch that forwards rank-local data to its successor but decides on a
// uniform flag: only the condition decides which collectives run.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  // CHECK-LABEL: func.func @forwarding_branch_on_uniform_flag
  func.func @forwarding_branch_on_uniform_flag(%flag: i1, %x: tensor<8xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %g: tensor<8xf32>)
      -> tensor<8xf32> attributes {train.step} {
    // CHECK: cf.cond_br
    cf.cond_br %flag, ^join(%x : tensor<8xf32>), ^join(%g : tensor<8xf32>)
  ^join(%v: tensor<8xf32>):
    %sum = dist.all_reduce sum %g axis 0 : tensor<8xf32>
    return %sum : tensor<8xf32>
  }
}

// -----

// An asynchronous all-reduce of rank-local data is the same on every rank
// once waited for, so branching on it is safe.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  // CHECK-LABEL: func.func @async_all_reduce_condition
  func.func @async_all_reduce_condition(%x: tensor<8xf32> {dist.sbp = #dist.sbp<[S(0)]>}, %g: tensor<8xf32>)
      -> tensor<8xf32> attributes {train.step} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %t = dist.all_reduce_start sum %x axis 0 : tensor<8xf32> -> !dist.token<tensor<8xf32>>
    %total = dist.wait %t : !dist.token<tensor<8xf32>>
    %first = tensor.extract %total[%c0] : tensor<8xf32>
    %positive = arith.cmpf ogt, %first, %zero : f32
    // CHECK: scf.if
    %r = scf.if %positive -> tensor<8xf32> {
      %sum = dist.all_reduce sum %g axis 0 : tensor<8xf32>
      scf.yield %sum : tensor<8xf32>
    } else {
      scf.yield %g : tensor<8xf32>
    }
    return %r : tensor<8xf32>
  }
}
