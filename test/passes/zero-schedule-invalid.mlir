// RUN: zero-opt %s -split-input-file -verify-diagnostics --pass-pipeline="builtin.module(zero-schedule{max-live-gathered-bytes=96})"

// A bound the step cannot keep is an error that says what holds the bytes,
// never a clamp. Four ranks.

// A single gathered parameter (128 bytes) above the bound.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @big param : tensor<32xf32> sharded flat over 0 -> tensor<8xf32> init zeros
  func.func @step(%x: tensor<32xf32>) -> tensor<32xf32> attributes {train.step} {
    %big = train.load @big : tensor<8xf32>
    // expected-error @below {{zero-schedule: max-live-gathered-bytes is 96 bytes, smaller than @big, which gathers 128 bytes at once; raise the bound}}
    %g = dist.all_gather %big axis 0 dim 0 : tensor<8xf32> -> tensor<32xf32>
    %y = arith.mulf %x, %g : tensor<32xf32>
    return %y : tensor<32xf32>
  }
}

// -----

// Two parameters of 64 bytes each, both needed by one op: 128 bytes must be
// alive by that op whatever the schedule. The error is at the first op
// where the bytes are alive, and a note names each gathered tensor.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @a param : tensor<16xf32> sharded flat over 0 -> tensor<4xf32> init zeros
  train.param @b param : tensor<16xf32> sharded flat over 0 -> tensor<4xf32> init zeros
  func.func @step() -> tensor<16xf32> attributes {train.step} {
    %a = train.load @a : tensor<4xf32>
    %b = train.load @b : tensor<4xf32>
    // expected-note @below {{@a: 64 gathered bytes alive from here}}
    %ga = dist.all_gather %a axis 0 dim 0 : tensor<4xf32> -> tensor<16xf32>
    // expected-error @below {{zero-schedule: max-live-gathered-bytes is 96 bytes, but the step holds 128 bytes of gathered parameters alive here before any prefetch}}
    // expected-note @below {{@b: 64 gathered bytes alive from here}}
    %gb = dist.all_gather %b axis 0 dim 0 : tensor<4xf32> -> tensor<16xf32>
    %y = arith.mulf %ga, %gb : tensor<16xf32>
    return %y : tensor<16xf32>
  }
}

// -----

// A bucket of 64 bytes fits the bound, but while it is unpacked the bucket
// and its members (64 bytes more) are alive together.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @a param : tensor<8xf32> sharded flat over 0 -> tensor<2xf32> init zeros
  train.param @b param : tensor<8xf32> sharded flat over 0 -> tensor<2xf32> init zeros
  func.func @step(%x: tensor<8xf32>) -> tensor<8xf32> attributes {train.step} {
    %a = train.load @a : tensor<2xf32>
    %b = train.load @b : tensor<2xf32>
    %bucket = dist.pack %a, %b : tensor<2xf32>, tensor<2xf32> -> tensor<4xf32>
    // expected-note @below {{the bucket of @a, @b: 64 gathered bytes alive from here}}
    %full = dist.all_gather %bucket axis 0 dim 0 : tensor<4xf32> -> tensor<16xf32>
    // expected-error @below {{but the step holds 128 bytes of gathered parameters alive here}}
    // expected-note @below {{@a: 32 gathered bytes alive from here}}
    // expected-note @below {{@b: 32 gathered bytes alive from here}}
    %m:2 = dist.unpack %full shards 4 : tensor<16xf32> -> tensor<8xf32>, tensor<8xf32>
    %y = arith.mulf %x, %m#0 : tensor<8xf32>
    %z = arith.mulf %y, %m#1 : tensor<8xf32>
    return %z : tensor<8xf32>
  }
}
