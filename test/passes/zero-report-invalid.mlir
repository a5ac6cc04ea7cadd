// RUN: not zero-opt %s --pass-pipeline="builtin.module(zero-report{format=xml})" 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: not zero-opt %s --pass-pipeline="builtin.module(zero-pipeline{stage=1 ranks=4 report=yaml})" 2>&1 | FileCheck %s --check-prefix=REPORT

// An unknown report format is rejected when the options are parsed, before
// anything is computed or rewritten, on zero-report (`format`) and on
// zero-pipeline (`report`), with the choices named.

// FORMAT: for the --format option: 'xml' is not a choice: text, json or timeline
// FORMAT-NOT: train.param
// REPORT: for the --report option: 'yaml' is not a choice: none, text, json or timeline
// REPORT-NOT: train.param
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @w param : tensor<8xf32> init zeros
  train.optimizer @sgd sgd lr 0.1

  func.func @step(%g: tensor<8xf32>) -> tensor<8xf32> attributes {train.step} {
    train.apply_gradient %g to @w with @sgd : tensor<8xf32>
    return %g : tensor<8xf32>
  }
}
