// RUN: zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer)" | FileCheck %s --check-prefix=MAT
// RUN: zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel)" | FileCheck %s --check-prefix=DP
// RUN: zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-lower-to-runtime)" | FileCheck %s --check-prefix=DP-LOWER
// RUN: zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=1},zero-verify)" | FileCheck %s --check-prefix=S1
// RUN: zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=3},zero-verify)" | FileCheck %s --check-prefix=S3
// RUN: zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=2 min-shard-elements=4},zero-verify)" | FileCheck %s --check-prefix=MIXED
// RUN: zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=2},zero-lower-to-runtime)" | FileCheck %s --check-prefix=S2-LOWER

// Gradient clipping by global norm through the passes. @w and @b clip (one
// global norm over both); @u's optimizer does not clip. On 3 ranks @b (3
// elements) has a 1-element shard and @w (12) a 4-element one.
//
// train-materialize-optimizer writes one clip before the last clipped
// update (the first point where both gradients exist; the update of @w
// moves after it) and feeds its results to the updates.
// MAT-LABEL: func.func @step
// MAT:         %[[RELU:.*]] = train.relu
// MAT:         %clipped, %clipped_0 = train.clip_by_global_norm %arg0, %[[RELU]] max_norm 1.000000e+00 : tensor<4x3xf32>, tensor<3xf32>
// MAT-NEXT:    train.sgd %w, %clipped with @opt
// MAT-NEXT:    train.store {{.*}} to @w
// MAT-NEXT:    train.sgd %b, %clipped_0 with @opt

// dist-data-parallel averages the clip's operands (the gradients behind
// it), not its results, so the norm is that of the averaged gradients.
// DP-LABEL: func.func @step
// DP:         %[[W:.*]] = dist.all_reduce mean %arg0 axis 0 : tensor<4x3xf32>
// DP:         %[[U:.*]] = dist.all_reduce mean %arg2 axis 0 : tensor<5xf32>
// DP:         train.sgd %u, %[[U]] with @free
// DP:         %[[B:.*]] = dist.all_reduce mean %relu axis 0 : tensor<3xf32>
// DP:         train.clip_by_global_norm %[[W]], %[[B]] max_norm 1.000000e+00 : tensor<4x3xf32>, tensor<3xf32>

// Stage 0 lowers the clip on whole gradients: no collective for the norm.
// DP-LOWER:     traffic = {all_reduce = {bytes = 80 : i64, count = 3 : i64
// DP-LOWER-NOT: zrt.all_reduce sum
// DP-LOWER:     zrt.launch "train.sum_squares" {{.*}} outs(%[[T:[a-z0-9_]+]] : memref<f32>)
// DP-LOWER-NOT: zrt.all_reduce sum
// DP-LOWER:     zrt.launch "train.scale_by_norm" {{.*}}, %[[T]] : memref<4x3xf32>, memref<3xf32>, memref<f32>) {{.*}} params {max_norm = 1.000000e+00 : f64}

// zero-shard reduce-scatters the clip's operands; the squares of the shards
// are summed on each rank and all-reduced (padding is zero), and the clip
// scales the shards the updates read.
// S1-LABEL: func.func @step
// S1:         %[[W:.*]] = dist.reduce_scatter mean %reshaped axis 0 dim 0 : tensor<12xf32> -> tensor<4xf32>
// S1:         %[[B:.*]] = dist.reduce_scatter mean %relu axis 0 dim 0 : tensor<3xf32> -> tensor<1xf32>
// S1-NEXT:    %[[P:.*]] = train.sum_squares %[[W]], %[[B]] : tensor<4xf32>, tensor<1xf32> -> tensor<f32>
// S1-NEXT:    %[[T:.*]] = dist.all_reduce sum %[[P]] axis 0 : tensor<f32>
// S1-NEXT:    %[[C:.*]], %[[D:.*]] = train.scale_by_norm %[[W]], %[[B]] total %[[T]] max_norm 1.000000e+00 : tensor<4xf32>, tensor<1xf32>
// S1:         train.sgd %{{.*}}, %[[C]] with @opt : tensor<4xf32>, tensor<4xf32>
// S1:         train.sgd %{{.*}}, %[[D]] with @opt : tensor<1xf32>, tensor<1xf32>
// S1-NOT:     clip_by_global_norm

// S3-LABEL: func.func @step
// S3:         %[[W:.*]] = dist.reduce_scatter mean %reshaped axis 0 dim 0 : tensor<12xf32> -> tensor<4xf32>
// S3:         %[[B:.*]] = dist.reduce_scatter mean %relu axis 0 dim 0 : tensor<3xf32> -> tensor<1xf32>
// S3-NEXT:    %[[P:.*]] = train.sum_squares %[[W]], %[[B]]
// S3-NEXT:    %[[T:.*]] = dist.all_reduce sum %[[P]] axis 0 : tensor<f32>
// S3-NEXT:    %[[C:.*]], %[[D:.*]] = train.scale_by_norm %[[W]], %[[B]] total %[[T]]
// S3:         %[[WS:.*]] = train.load @w : tensor<4xf32>
// S3-NEXT:    train.sgd %[[WS]], %[[C]] with @opt : tensor<4xf32>, tensor<4xf32>

// Below min-shard-elements @b stays replicated: its squares are added after
// the all-reduce of the shards' partial sums, so they count once, not once
// per rank.
// MIXED-LABEL: func.func @step
// MIXED:         %[[W:.*]] = dist.reduce_scatter mean %reshaped axis 0 dim 0 : tensor<12xf32> -> tensor<4xf32>
// MIXED:         %[[B:.*]] = dist.all_reduce mean %relu axis 0 : tensor<3xf32>
// MIXED:         %[[P:.*]] = train.sum_squares %[[W]] : tensor<4xf32> -> tensor<f32>
// MIXED-NEXT:    %[[T:.*]] = dist.all_reduce sum %[[P]] axis 0 : tensor<f32>
// MIXED-NEXT:    %[[Q:.*]] = train.sum_squares %[[B]] : tensor<3xf32> -> tensor<f32>
// MIXED-NEXT:    %[[S:.*]] = train.add %[[T]], %[[Q]] : tensor<f32>
// MIXED-NEXT:    train.scale_by_norm %[[W]], %[[B]] total %[[S]] max_norm 1.000000e+00 : tensor<4xf32>, tensor<3xf32>

// The report counts the extra all-reduce: 4 bytes, 2 x 4 x (3 - 1) / 3 sent
// per rank (a ring all-reduce), and the runtime issues it.
// S2-LOWER:     all_reduce = {bytes = 4 : i64, count = 1 : i64, sent_bytes_per_rank = 5.333333333333333 : f64}
// S2-LOWER:     zrt.launch "train.sum_squares" {{.*}} outs(%[[P:[a-z0-9_]+]] : memref<f32>)
// S2-LOWER:     zrt.all_reduce sum axis 0 on @comm %[[P]] to %[[T:[a-z0-9_]+]] : memref<f32> to memref<f32>
// S2-LOWER:     zrt.launch "train.scale_by_norm" {{.*}}, %[[T]] : memref<4xf32>, memref<1xf32>, memref<f32>)
module attributes {dist.placement = #dist.placement<cpu, [3]>} {
  train.param @w param : tensor<4x3xf32> init normal(0.0, 0.02)
  train.param @b param : tensor<3xf32> init zeros
  train.param @u param : tensor<5xf32> init zeros
  train.optimizer @opt sgd lr 1.0e-01 clip_norm 1.0
  train.optimizer @free sgd lr 1.0e-01
  func.func @step(%dw: tensor<4x3xf32>, %x: tensor<3xf32>, %du: tensor<5xf32>) attributes {train.step} {
    train.apply_gradient %dw to @w with @opt : tensor<4x3xf32>
    train.apply_gradient %du to @u with @free : tensor<5xf32>
    %db = train.relu %x : tensor<3xf32>
    train.apply_gradient %db to @b with @opt : tensor<3xf32>
    return
  }
}
