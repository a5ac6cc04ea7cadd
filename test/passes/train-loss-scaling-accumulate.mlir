// RUN: zero-opt %s --pass-pipeline="builtin.module(train-autodiff,train-materialize-optimizer{accumulate-steps=2})" | FileCheck %s
// RUN: zero-opt %s --pass-pipeline="builtin.module(train-autodiff,train-materialize-optimizer{accumulate-steps=2},dist-data-parallel,zero-shard{stage=2},zero-verify)" | FileCheck %s --check-prefix=S2

// Dynamic loss scaling with gradient accumulation: the f16 step of
// train-loss-scaling.mlir (loss_scale and clip_norm) over 2 micro-batches.
module attributes {dist.placement = #dist.placement<cpu, [3]>} {
  train.param @w param : tensor<4x3xf16> init normal(0.0, 0.1)
  train.param @b param : tensor<3xf16> init zeros
  train.optimizer @opt sgd lr 0.1 clip_norm 1.0 loss_scale 1024.0 growth_interval 100
  func.func @step(%x: tensor<2x4xf16>, %labels: tensor<2xi32>) -> tensor<f32>
      attributes {train.step} {
    %w = train.load @w : tensor<4x3xf16>
    %b = train.load @b : tensor<3xf16>
    %mm = train.matmul %x, %w : tensor<2x4xf16>, tensor<4x3xf16> -> tensor<2x3xf16>
    %logits = train.bias_add %mm, %b : tensor<2x3xf16>, tensor<3xf16>
    %loss = train.softmax_cross_entropy %logits, %labels : tensor<2x3xf16>, tensor<2xi32> -> tensor<f32>
    train.minimize %loss : tensor<f32>
    return %loss : tensor<f32>
  }
}

// The micro-step keeps the scaled backward and adds each scaled gradient,
// widened to f32, into its accumulator; it neither unscales nor steps the
// scaler, so the scale is the same for every micro-batch of a step.
// CHECK-LABEL: func.func @step(
// CHECK:         %[[S:.*]] = train.load @loss_scale : tensor<f32>
// CHECK-NEXT:    train.softmax_cross_entropy_grad %{{.*}}, %{{.*}}, %[[S]]
// CHECK:         %[[WIDE:.*]] = train.cast %{{.*}} : tensor<4x3xf16> -> tensor<4x3xf32>
// CHECK-NEXT:    %[[ACC:.*]] = train.load @w.grad : tensor<4x3xf32>
// CHECK-NEXT:    %[[SUM:.*]] = train.add %[[ACC]], %[[WIDE]] : tensor<4x3xf32>
// CHECK-NEXT:    train.store %[[SUM]] to @w.grad : tensor<4x3xf32>
// CHECK-NOT:     train.unscale
// CHECK-NOT:     train.update_loss_scale
// CHECK:         return

// The apply step unscales the averaged sums once: an overflow in any
// micro-batch left an infinity or a NaN in them, so it skips the whole
// step, and only then steps the scaler and clears the accumulators.
// CHECK-LABEL: func.func @step_apply()
// CHECK:         %[[MW:.*]] = train.scale %{{.*}} by 5.000000e-01 : tensor<4x3xf32>
// CHECK:         %[[MB:.*]] = train.scale %{{.*}} by 5.000000e-01 : tensor<3xf32>
// CHECK-NEXT:    %[[SCALE:.*]] = train.load @loss_scale : tensor<f32>
// CHECK-NEXT:    %[[UW:.*]], %[[UB:.*]], %[[F:.*]] = train.unscale %[[MW]], %[[MB]] scale %[[SCALE]]
// CHECK:         train.clip_by_global_norm %[[UW]], %[[UB]]
// CHECK:         train.sgd %w.master, %{{.*}} skip_if %[[F]] with @opt
// CHECK:         train.sgd %b.master, %{{.*}} skip_if %[[F]] with @opt
// CHECK:         %[[GOOD:.*]] = train.load @loss_scale.good_steps
// CHECK-NEXT:    %[[NEXT:.*]], %[[NEXT_GOOD:.*]] = train.update_loss_scale %[[SCALE]], %[[GOOD]], %[[F]] growth_interval 100
// CHECK-NEXT:    train.store %[[NEXT]] to @loss_scale
// CHECK-NEXT:    train.store %[[NEXT_GOOD]] to @loss_scale.good_steps
// CHECK:         train.store %{{.*}} to @w.grad : tensor<4x3xf32>
// CHECK:         train.store %{{.*}} to @b.grad : tensor<3xf32>

// At stage 2 each rank unscales its accumulator shards, so the flag is
// all-reduced (max) before any rank decides to skip.
// S2-LABEL: func.func @step_apply()
// S2:         %{{.*}}, %{{.*}}, %[[F:.*]] = train.unscale %{{.*}}, %{{.*}} scale %{{.*}} : tensor<4xf32>, tensor<1xf32>
// S2-NEXT:    %[[ANY:.*]] = dist.all_reduce max %[[F]] axis 0 : tensor<f32>
// S2:         train.sgd %w.master, %{{.*}} skip_if %[[ANY]] with @opt
// S2:         train.update_loss_scale %{{.*}}, %{{.*}}, %[[ANY]]
