// RUN: zero-opt %s -split-input-file -verify-diagnostics --pass-pipeline="builtin.module(dist-lower-reshard)"

// A change along two axes needs an order of collectives the pass does not
// choose, and no collective makes a partial value from a whole one.

module attributes {dist.placement = #dist.placement<cpu, [2, 2]>} {
  func.func @two_axes(%p: tensor<4x8xf32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{changes the SBP along 2 placement axes; dist-lower-reshard lowers a change along one axis at a time}}
    %0 = dist.reshard %p from [P(sum), P(sum)] to [B, B] : tensor<4x8xf32> -> tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}

// -----

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  func.func @to_partial(%b: tensor<4x8xf32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{asks for P(sum) from B along axis 0; no collective makes a partial value from a whole one}}
    %0 = dist.reshard %b from [B] to [P(sum)] : tensor<4x8xf32> -> tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}
