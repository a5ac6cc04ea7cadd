// RUN: zero-opt %s -verify-diagnostics --pass-pipeline="builtin.module(zero-report)"

// The report is about training steps: a module with no function marked
// `train.step` has nothing to report on, and that is an error rather than
// an empty report.

// expected-error @below {{zero-report: no function is marked 'train.step'}}
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @w param : tensor<8xf32> init zeros

  func.func @not_a_step(%g: tensor<8xf32>) -> tensor<8xf32> {
    %sum = dist.all_reduce sum %g axis 0 : tensor<8xf32>
    return %sum : tensor<8xf32>
  }
}
