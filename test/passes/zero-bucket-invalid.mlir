// RUN: zero-opt %s -verify-diagnostics --pass-pipeline="builtin.module(zero-bucket{reduce-bucket-bytes=-1})"
// RUN: zero-opt %s -verify-diagnostics --pass-pipeline="builtin.module(zero-bucket{allgather-bucket-bytes=-8})"
// RUN: zero-opt %s -verify-diagnostics --pass-pipeline="builtin.module(zero-pipeline{reduce-bucket-bytes=-1})"
// RUN: zero-opt %s -verify-diagnostics --pass-pipeline="builtin.module(zero-bucket{allgather-across-uses-bytes=-1})"
// RUN: zero-opt %s -verify-diagnostics --pass-pipeline="builtin.module(zero-pipeline{allgather-across-uses-bytes=-1})"

// A negative bucket budget, reduction or gather, or a negative bound on a
// gather bucket that takes members across a use, is rejected before anything
// is rewritten, on its own and through zero-pipeline.

// zero-pipeline checks its options before it runs zero-bucket, and names
// the one that is negative.
// expected-error-re @below {{{{zero-bucket: bucket sizes must not be negative|zero-pipeline: (reduce-bucket-bytes|allgather-across-uses-bytes) must not be negative, got -1}}}}
module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @step(%a: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
      attributes {train.step} {
    %0 = dist.all_reduce sum %a axis 0 : tensor<8xf32>
    %1 = dist.all_reduce sum %b axis 0 : tensor<8xf32>
    return %0, %1 : tensor<8xf32>, tensor<8xf32>
  }
}
