// RUN: zero-opt %s --pass-pipeline="builtin.module(train-autodiff,train-materialize-optimizer)" | FileCheck %s --check-prefix=AD
// RUN: zero-opt %s --pass-pipeline="builtin.module(train-autodiff,train-materialize-optimizer,dist-data-parallel)" | FileCheck %s --check-prefix=DP
// RUN: zero-opt %s --pass-pipeline="builtin.module(train-autodiff,train-materialize-optimizer,dist-data-parallel,zero-lower-to-runtime)" | FileCheck %s --check-prefix=DP-LOWER
// RUN: zero-opt %s --pass-pipeline="builtin.module(train-autodiff,train-materialize-optimizer,dist-data-parallel,zero-shard{stage=1},zero-verify)" | FileCheck %s --check-prefix=S1
// RUN: zero-opt %s --pass-pipeline="builtin.module(train-autodiff,train-materialize-optimizer,dist-data-parallel,zero-shard{stage=3},zero-verify)" | FileCheck %s --check-prefix=S3
// RUN: zero-opt %s --pass-pipeline="builtin.module(train-autodiff,train-materialize-optimizer,dist-data-parallel,zero-shard{stage=2 min-shard-elements=4},zero-verify)" | FileCheck %s --check-prefix=MIXED

// Dynamic loss scaling of an f16 step through the passes, together with
// clipping: the optimizer has `loss_scale` and `clip_norm`. On 3 ranks @b
// (3 elements) has a 1-element shard and @w (12) a 4-element one.
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

// train-autodiff declares the scaler's state, seeds the backward with the
// loaded scale instead of 1, unscales every gradient into f32 with one
// train.unscale, and skips each update on overflow; the step ends by
// stepping the scaler. The clip reads the unscaled gradients.
// AD:         train.optimizer @opt sgd {{.*}} loss_scale 1.024000e+03 growth_interval 100
// AD-NEXT:    train.param @loss_scale scaler : tensor<f32> init constant(1024.0)
// AD-NEXT:    train.param @loss_scale.good_steps scaler : tensor<f32> init zeros
// AD-LABEL: func.func @step
// AD:         %loss = train.softmax_cross_entropy
// AD-NEXT:    %[[S:.*]] = train.load @loss_scale : tensor<f32>
// AD-NEXT:    train.softmax_cross_entropy_grad %{{.*}}, %{{.*}}, %[[S]]
// AD:         %[[UW:.*]], %[[UB:.*]], %[[F:.*]] = train.unscale %{{.*}}, %{{.*}} scale %[[S]] : tensor<4x3xf16>, tensor<3xf16>
// AD:         train.clip_by_global_norm %[[UW]], %[[UB]] max_norm 1.000000e+00 : tensor<4x3xf32>, tensor<3xf32>
// AD:         train.sgd %w.master, %{{.*}} skip_if %[[F]] with @opt
// AD:         train.sgd %b.master, %{{.*}} skip_if %[[F]] with @opt
// AD:         %[[G:.*]] = train.load @loss_scale.good_steps : tensor<f32>
// AD-NEXT:    %[[NS:.*]], %[[NG:.*]] = train.update_loss_scale %[[S]], %[[G]], %[[F]] growth_interval 100 : tensor<f32>
// AD-NEXT:    train.store %[[NS]] to @loss_scale : tensor<f32>
// AD-NEXT:    train.store %[[NG]] to @loss_scale.good_steps : tensor<f32>

// dist-data-parallel averages the gradients behind the unscale (and the
// clip), so that every rank checks the same averaged gradients: no
// collective for the flag at stage 0.
// DP-LABEL: func.func @step
// DP:         %[[B:.*]] = dist.all_reduce mean %reduced axis 0 : tensor<3xf16>
// DP:         %[[W:.*]] = dist.all_reduce mean %mm_1 axis 0 : tensor<4x3xf16>
// DP-NEXT:    %{{.*}}, %{{.*}}, %[[F:.*]] = train.unscale %[[W]], %[[B]] scale
// DP-NOT:     dist.all_reduce max
// DP:         train.sgd %w.master, %{{.*}} skip_if %[[F]]

// The lowering runs the unscale, the updates with the flag as their last
// operand, and the scaler step as kernels; the scaler's state is two
// replicated buffers.
// DP-LOWER:     zrt.buffer @loss_scale scaler : memref<f32> {zrt.init = #train.init<constant(1024.0)>
// DP-LOWER:     zrt.buffer @loss_scale.good_steps scaler : memref<f32> {zrt.init = #train.init<zeros>
// DP-LOWER:     zrt.launch "train.unscale" on @compute ins({{.*}}, %loss_scale : memref<4x3xf16>, memref<3xf16>, memref<f32>) outs({{.*}}, %[[F:[a-z0-9_]+]] : memref<4x3xf32>, memref<3xf32>, memref<f32>)
// DP-LOWER:     zrt.launch "train.sgd" on @compute ins(%w.master, %{{.*}}, %[[F]] : memref<4x3xf32>, memref<4x3xf32>, memref<f32>)
// DP-LOWER:     zrt.launch "train.update_loss_scale" on @compute ins(%loss_scale, %loss_scale.good_steps, %[[F]] : {{.*}}) {{.*}} params {growth_interval = 100 : i64}

// zero-shard unscales the reduced shards; each rank sees only its shards,
// so the flag is all-reduced with max before any update reads it.
// S1-LABEL: func.func @step
// S1:         %[[W:.*]] = dist.reduce_scatter mean %reshaped axis 0 dim 0 : tensor<12xf16> -> tensor<4xf16>
// S1-NEXT:    %[[B:.*]] = dist.reduce_scatter mean %reduced axis 0 dim 0 : tensor<3xf16> -> tensor<1xf16>
// S1-NEXT:    %{{.*}}, %{{.*}}, %[[F:.*]] = train.unscale %[[W]], %[[B]] scale %loss_scale : tensor<4xf16>, tensor<1xf16>
// S1-NEXT:    %[[A:.*]] = dist.all_reduce max %[[F]] axis 0 : tensor<f32>
// S1-NEXT:    train.sum_squares
// S1:         train.sgd %{{.*}}, %{{.*}} skip_if %[[A]] with @opt : tensor<4xf32>, tensor<4xf32>
// S1:         train.update_loss_scale %loss_scale, %{{.*}}, %[[A]]

// S3-LABEL: func.func @step
// S3:         %[[W:.*]] = dist.reduce_scatter mean %reshaped_2 axis 0 dim 0 : tensor<12xf16> -> tensor<4xf16>
// S3:         %{{.*}}, %{{.*}}, %[[F:.*]] = train.unscale %[[W]], %{{.*}} scale %loss_scale : tensor<4xf16>, tensor<1xf16>
// S3-NEXT:    %[[A:.*]] = dist.all_reduce max %[[F]] axis 0 : tensor<f32>
// S3:         train.sgd %{{.*}}, %{{.*}} skip_if %[[A]] with @opt : tensor<4xf32>, tensor<4xf32>
// S3:         train.store %{{.*}} to @loss_scale : tensor<f32>

// With min-shard-elements=4, @b stays whole: one shard still needs the
// all-reduce.
// MIXED-LABEL: func.func @step
// MIXED:         %{{.*}}, %{{.*}}, %[[F:.*]] = train.unscale %{{.*}}, %{{.*}} scale %loss_scale : tensor<4xf16>, tensor<3xf16>
// MIXED-NEXT:    dist.all_reduce max %[[F]] axis 0 : tensor<f32>
