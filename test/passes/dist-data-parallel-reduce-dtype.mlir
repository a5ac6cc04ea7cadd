// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel{reduce-dtype=f32})" | FileCheck %s
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel{reduce-dtype=f32},zero-shard{stage=3 layout=dim0},zero-verify)" | FileCheck %s --check-prefix=STAGE3
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel)" | FileCheck %s --check-prefix=OWN
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-materialize-optimizer{accumulate-steps=4},dist-data-parallel{reduce-dtype=f32},zero-shard{stage=2 layout=flat},zero-verify)" | FileCheck %s --check-prefix=ACCUM

// reduce-dtype=f32 averages 16-bit gradients in f32, as FSDP's
// MixedPrecision(reduce_dtype=torch.float32): each bf16 gradient is widened
// by a train.cast right after it is produced, the average carries f32, and
// the update of the f32 master copy reads the f32 average, never rounded to
// bf16. An f32 gradient (@b) is averaged as it is. The module records the
// choice (dist.reduce_type). The default (OWN) averages each gradient in
// its own type.

// CHECK-LABEL: module @mixed attributes {dist.placement = #dist.placement<cpu, [4]>, dist.reduce_type = f32, dist.zero_stage = 0 : i64}
// CHECK:         %[[DW:.+]] = train.matmul %{{.+}}, %{{.+}} transpose_a : tensor<2x10xbf16>, tensor<2x3xbf16> -> tensor<10x3xbf16>
// CHECK-NEXT:    %[[WIDE:.+]] = train.cast %[[DW]] : tensor<10x3xbf16> -> tensor<10x3xf32>
// CHECK-NEXT:    %[[MEAN:.+]] = dist.all_reduce mean %[[WIDE]] axis 0 : tensor<10x3xf32>
// CHECK:         %[[DB_MEAN:.+]] = dist.all_reduce mean %{{.+}} axis 0 : tensor<3xf32>
// CHECK:         %[[MASTER:.+]] = train.load @w.master : tensor<10x3xf32>
// CHECK:         train.adam %[[MASTER]], %[[MEAN]], %{{.+}}, %{{.+}} step %{{.+}} with @adam : tensor<10x3xf32>, tensor<10x3xf32>, tensor<10x3xf32>
// CHECK:         train.adam %{{.+}}, %[[DB_MEAN]], %{{.+}}, %{{.+}} step %{{.+}} with @adam : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
// CHECK-NOT:     train.cast %{{.+}} : tensor<3xf32>

// At stage 3 the widened gradient is reduce-scattered in f32: the shard the
// update reads is f32.
// STAGE3-LABEL: module @mixed
// STAGE3:         %[[WIDE:.+]] = train.cast %{{.+}} : tensor<10x3xbf16> -> tensor<10x3xf32>
// STAGE3-NEXT:    %[[SHARD:.+]] = dist.reduce_scatter mean %[[WIDE]] axis 0 dim 0 : tensor<10x3xf32> -> tensor<3x3xf32>
// STAGE3:         train.adam %{{.+}}, %[[SHARD]], %{{.+}}, %{{.+}} step %{{.+}} with @adam : tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>

// OWN-LABEL: module @mixed attributes {dist.placement = #dist.placement<cpu, [4]>, dist.zero_stage = 0 : i64}
// OWN:         %[[DW:.+]] = train.matmul %{{.+}}, %{{.+}} transpose_a : tensor<2x10xbf16>, tensor<2x3xbf16> -> tensor<10x3xbf16>
// OWN-NEXT:    dist.all_reduce mean %[[DW]] axis 0 : tensor<10x3xbf16>

// With accumulation (ACCUM, stage 2), each micro-step reduce-scatters the
// gradient already widened for the f32 accumulator, instead of the bf16
// gradient.
// ACCUM-LABEL: module @mixed
// ACCUM:         %[[WIDE:.+]] = train.cast %{{.+}} : tensor<10x3xbf16> -> tensor<10x3xf32>
// ACCUM-NEXT:    %[[FLAT:.+]] = train.reshape %[[WIDE]] : tensor<10x3xf32> -> tensor<30xf32>
// ACCUM-NEXT:    %[[SHARD:.+]] = dist.reduce_scatter mean %[[FLAT]] axis 0 dim 0 : tensor<30xf32> -> tensor<8xf32>
// ACCUM:         %[[ACC:.+]] = train.load @w.grad : tensor<8xf32>
// ACCUM-NEXT:    train.add %[[ACC]], %[[SHARD]] : tensor<8xf32>

module @mixed attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @w param : tensor<10x3xbf16> init normal(0.0, 0.1)
  train.param @b param : tensor<3xf32> init zeros
  train.optimizer @adam adam lr 1.0e-3
  func.func @step(%x: tensor<2x10xbf16>) -> tensor<bf16> attributes {train.step} {
    %w = train.load @w : tensor<10x3xbf16>
    %y = train.matmul %x, %w : tensor<2x10xbf16>, tensor<10x3xbf16> -> tensor<2x3xbf16>
    %loss = train.reduce_sum %y dims [0, 1] : tensor<2x3xbf16> -> tensor<bf16>
    %dy = arith.constant dense<1.0> : tensor<2x3xbf16>
    %dw = train.matmul %x, %dy transpose_a : tensor<2x10xbf16>, tensor<2x3xbf16> -> tensor<10x3xbf16>
    %db = arith.constant dense<1.0> : tensor<3xf32>
    train.apply_gradient %dw to @w with @adam : tensor<10x3xbf16>
    train.apply_gradient %db to @b with @adam : tensor<3xf32>
    return %loss : tensor<bf16>
  }
}

// -----

// A clipped gradient is averaged before the clip (so that the norm is the
// averaged gradients'); widened, the clip's result is f32 too, and the
// update reads it.

// CHECK-LABEL: module @clipped
// CHECK:         %[[WIDE:.+]] = train.cast %{{.+}} : tensor<10x3xbf16> -> tensor<10x3xf32>
// CHECK-NEXT:    %[[MEAN:.+]] = dist.all_reduce mean %[[WIDE]] axis 0 : tensor<10x3xf32>
// CHECK:         %[[CLIPPED:.+]] = train.clip_by_global_norm %[[MEAN]] max_norm 1.000000e+00 : tensor<10x3xf32>
// CHECK:         train.sgd %{{.+}}, %[[CLIPPED]] with @sgd : tensor<10x3xf32>, tensor<10x3xf32>

module @clipped attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<10x3xbf16> init normal(0.0, 0.1)
  train.optimizer @sgd sgd lr 0.1 clip_norm 1.0
  func.func @step(%x: tensor<2x10xbf16>, %dy: tensor<2x3xbf16>) attributes {train.step} {
    %dw = train.matmul %x, %dy transpose_a : tensor<2x10xbf16>, tensor<2x3xbf16> -> tensor<10x3xbf16>
    train.apply_gradient %dw to @w with @sgd : tensor<10x3xbf16>
    return
  }
}

// -----

// Under accumulation each gradient is widened and reduce-scattered where it
// is complete, as without accumulation, not where the micro-step adds it to
// its accumulator after the whole backward: there every unsharded 16-bit
// gradient would live to the backward's end (a 16 x 7168 model planned a
// 22.65 GB peak at accumulation 2 against 8.87 GB without).
// ACCUM-LABEL: module @two
// ACCUM:         %[[DW1:.+]] = train.matmul %{{.+}}, %{{.+}} transpose_a {{.*}}-> tensor<10x3xbf16>
// ACCUM-NEXT:    %[[WIDE1:.+]] = train.cast %[[DW1]] : tensor<10x3xbf16> -> tensor<10x3xf32>
// ACCUM-NEXT:    %[[FLAT1:.+]] = train.reshape %[[WIDE1]] : tensor<10x3xf32> -> tensor<30xf32>
// ACCUM-NEXT:    dist.reduce_scatter mean %[[FLAT1]] axis 0 dim 0 : tensor<30xf32> -> tensor<8xf32>
// ACCUM-NEXT:    %[[DW2:.+]] = train.matmul %{{.+}}, %{{.+}} transpose_a {{.*}}-> tensor<10x3xbf16>
// ACCUM-NEXT:    %[[WIDE2:.+]] = train.cast %[[DW2]] : tensor<10x3xbf16> -> tensor<10x3xf32>
module @two attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @w1 param : tensor<10x3xbf16> init normal(0.0, 0.1)
  train.param @w2 param : tensor<10x3xbf16> init normal(0.0, 0.1)
  train.optimizer @adam adam lr 1.0e-3
  func.func @step(%x: tensor<2x10xbf16>) -> tensor<bf16> attributes {train.step} {
    %w1 = train.load @w1 : tensor<10x3xbf16>
    %y = train.matmul %x, %w1 : tensor<2x10xbf16>, tensor<10x3xbf16> -> tensor<2x3xbf16>
    %loss = train.reduce_sum %y dims [0, 1] : tensor<2x3xbf16> -> tensor<bf16>
    %dy = arith.constant dense<1.0> : tensor<2x3xbf16>
    %dw1 = train.matmul %x, %dy transpose_a : tensor<2x10xbf16>, tensor<2x3xbf16> -> tensor<10x3xbf16>
    %dw2 = train.matmul %x, %dy transpose_a : tensor<2x10xbf16>, tensor<2x3xbf16> -> tensor<10x3xbf16>
    train.apply_gradient %dw1 to @w1 with @adam : tensor<10x3xbf16>
    train.apply_gradient %dw2 to @w2 with @adam : tensor<10x3xbf16>
    return %loss : tensor<bf16>
  }
}
