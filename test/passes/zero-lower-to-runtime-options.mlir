// RUN: zero-opt %s -verify-diagnostics --pass-pipeline="builtin.module(zero-lower-to-runtime{alignment=0})"
// RUN: zero-opt %s -verify-diagnostics --pass-pipeline="builtin.module(zero-lower-to-runtime{alignment=48})"
// RUN: zero-opt %s -verify-diagnostics --pass-pipeline="builtin.module(zero-lower-to-runtime{alignment=-64})"
// RUN: zero-opt %s --pass-pipeline="builtin.module(zero-lower-to-runtime{alignment=1})" | FileCheck %s --check-prefix=ALIGN1
// RUN: zero-opt %s --pass-pipeline="builtin.module(zero-lower-to-runtime{alignment=4096})" | FileCheck %s --check-prefix=ALIGN4096

// `alignment` must be a power of two: zero, non-powers of two and negative
// values are refused before anything is lowered, each RUN line with its own
// value in the message. Any power of two is accepted, 1 included (values
// packed back to back) up to page-sized slots.

// expected-error-re @below {{{{^}}zero-lower-to-runtime: alignment must be a power of two, got {{0|48|-64}}{{$}}}}
module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  func.func @step(%x: tensor<3xf32>) -> tensor<3xf32> attributes {train.step} {
    %a = train.relu %x : tensor<3xf32>
    %b = train.neg %a : tensor<3xf32>
    return %b : tensor<3xf32>
  }
}

// Two 12-byte values live together at the negation.

// ALIGN1:      zrt.program @step placement #dist.placement<cpu, [2]> arena 24 align 1 attributes {zrt.live_bytes = 24 : i64
// ALIGN1:        zrt.arena_view [0] : memref<3xf32>
// ALIGN1:        zrt.arena_view [12] : memref<3xf32>

// ALIGN4096:   zrt.program @step placement #dist.placement<cpu, [2]> arena 8192 align 4096 attributes {zrt.live_bytes = 8192 : i64
// ALIGN4096:     zrt.arena_view [0] : memref<3xf32>
// ALIGN4096:     zrt.arena_view [4096] : memref<3xf32>
