// RUN: zero-opt %s --pass-pipeline="builtin.module(zero-lower-to-runtime)" | FileCheck %s

// A learning-rate schedule reaches the update kernels as params next to the
// optimizer's hyper-parameters: `schedule` (the kind, as a string),
// `warmup`, and for the decaying kinds `total` and `min_lr` (defaulted to
// 0 when not written). The kernels compute the step's rate from the
// runtime's 1-based step, which every rank shares, so every rank and every
// ZeRO stage applies the same rate. `lr` stays the peak rate.
//
// An optimizer whose rate never varies (no schedule, or `schedule
// constant` without warmup) adds no params at all: its updates lower, and
// run, exactly as without schedules.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @a param : tensor<4xf32> init zeros
  train.param @a.m slot of @a : tensor<4xf32> init zeros
  train.param @a.v slot of @a : tensor<4xf32> init zeros
  train.param @s param : tensor<4xf32> init zeros
  train.param @u param : tensor<4xf32> init zeros
  train.param @u.buf slot of @u : tensor<4xf32> init zeros
  train.param @c param : tensor<4xf32> init zeros
  train.optimizer @cosine adamw lr 3.0e-04 weight_decay 1.0e-01 schedule cosine warmup 100 total 10000 min_lr 3.0e-05
  train.optimizer @linear sgd lr 1.0e-01 schedule linear total 500
  train.optimizer @warmup momentum lr 5.0e-02 momentum 9.0e-01 schedule constant warmup 10
  train.optimizer @constant sgd lr 2.5e-01 schedule constant

  func.func @scheduled_updates(%g: tensor<4xf32>) attributes {train.step} {
    %t = train.step_index : tensor<i64>
    %a = train.load @a : tensor<4xf32>
    %am = train.load @a.m : tensor<4xf32>
    %av = train.load @a.v : tensor<4xf32>
    %a1, %am1, %av1 = train.adamw %a, %g, %am, %av step %t with @cosine : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
    train.store %a1 to @a : tensor<4xf32>
    train.store %am1 to @a.m : tensor<4xf32>
    train.store %av1 to @a.v : tensor<4xf32>
    %s = train.load @s : tensor<4xf32>
    %s1 = train.sgd %s, %g with @linear : tensor<4xf32>, tensor<4xf32>
    train.store %s1 to @s : tensor<4xf32>
    %u = train.load @u : tensor<4xf32>
    %b = train.load @u.buf : tensor<4xf32>
    %u1, %b1 = train.sgd_momentum %u, %g, %b with @warmup : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
    train.store %u1 to @u : tensor<4xf32>
    train.store %b1 to @u.buf : tensor<4xf32>
    %c = train.load @c : tensor<4xf32>
    %c1 = train.sgd %c, %g with @constant : tensor<4xf32>, tensor<4xf32>
    train.store %c1 to @c : tensor<4xf32>
    return
  }
}

// Warmup and cosine decay: all four schedule params, min_lr as written.
// CHECK-LABEL: zrt.program @scheduled_updates
// CHECK:         zrt.launch "train.adamw"
// CHECK-SAME:      params {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, lr = 3.000000e-04 : f64, min_lr = 3.000000e-05 : f64, schedule = "cosine", total = 10000 : i64, warmup = 100 : i64, weight_decay = 1.000000e-01 : f64}
// A linear decay without warmup or floor: both default to 0.
// CHECK:         zrt.launch "train.sgd"
// CHECK-SAME:      params {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, lr = 1.000000e-01 : f64, min_lr = 0.000000e+00 : f64, schedule = "linear", total = 500 : i64, warmup = 0 : i64, weight_decay = 0.000000e+00 : f64}
// A warmup to a constant rate: nothing to decay to, so no total or min_lr.
// CHECK:         zrt.launch "train.sgd_momentum"
// CHECK-SAME:      params {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, lr = 5.000000e-02 : f64, momentum = 9.000000e-01 : f64, schedule = "constant", warmup = 10 : i64, weight_decay = 0.000000e+00 : f64}
// `schedule constant` alone is today's constant rate: no schedule params.
// CHECK:         zrt.launch "train.sgd"
// CHECK-SAME:      params {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, lr = 2.500000e-01 : f64, weight_decay = 0.000000e+00 : f64}
// CHECK-NOT:     zrt.launch
// CHECK:         }
