// RUN: zero-opt %s -verify-diagnostics --pass-pipeline="builtin.module(zero-schedule{prefetch-bytes=-1})"
// RUN: zero-opt %s -verify-diagnostics --pass-pipeline="builtin.module(zero-schedule{max-live-gathered-bytes=-64})"
// RUN: zero-opt %s -verify-diagnostics --pass-pipeline="builtin.module(zero-pipeline{stage=3 prefetch-bytes=-1})"
// RUN: zero-opt %s -verify-diagnostics --pass-pipeline="builtin.module(zero-pipeline{stage=3 max-live-gathered-bytes=-64})"

// A negative prefetch window or live bound is rejected before anything
// moves, naming the option, on its own and through zero-pipeline.

// expected-error @below {{must not be negative}}
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @step(%a: tensor<8xf32>) -> tensor<8xf32> attributes {train.step} {
    return %a : tensor<8xf32>
  }
}
