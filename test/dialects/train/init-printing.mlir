// RUN: zero-opt %s | FileCheck %s
// RUN: zero-opt %s | zero-opt | FileCheck %s

// Initializer arguments print as the shortest decimal that reads back as
// the same double, always as a float literal (a '.' before any exponent).
// CHECK-LABEL: module
// CHECK-NEXT: train.param @std param : tensor<4xf32> init normal(0.0, 0.088)
// CHECK-NEXT: train.param @whole param : tensor<4xf32> init uniform(-100.0, 2.5e-07)
// CHECK-NEXT: train.param @tiny param : tensor<4xf32> init constant(1.0e-30)
// CHECK-NEXT: train.param @big param : tensor<4xf32> init constant(123456789.0)
// CHECK-NEXT: train.param @neg_zero param : tensor<4xf32> init constant(-0.0)
train.param @std param : tensor<4xf32> init normal(0.0, 0.088)
train.param @whole param : tensor<4xf32> init uniform(-100.0, 2.5e-7)
train.param @tiny param : tensor<4xf32> init constant(1.0e-30)
train.param @big param : tensor<4xf32> init constant(123456789.0)
train.param @neg_zero param : tensor<4xf32> init constant(-0.0)
