// RUN: zero-opt %s -verify-diagnostics --pass-pipeline="builtin.module(zero-report{format=xml})"
// RUN: zero-opt %s -verify-diagnostics --pass-pipeline="builtin.module(zero-pipeline{stage=1 ranks=4 report=yaml})"

// An unknown report format is rejected before anything is computed or
// rewritten, on zero-report (`format`) and on zero-pipeline (`report`).
// Each RUN line expects its own message.

// expected-error-re @below {{{{^}}{{zero-report: format must be text, json or timeline, got 'xml'|zero-pipeline: report must be none, text, json or timeline, got 'yaml'}}{{$}}}}
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @w param : tensor<8xf32> init zeros
  train.optimizer @sgd sgd lr 0.1

  func.func @step(%g: tensor<8xf32>) -> tensor<8xf32> attributes {train.step} {
    train.apply_gradient %g to @w with @sgd : tensor<8xf32>
    return %g : tensor<8xf32>
  }
}
