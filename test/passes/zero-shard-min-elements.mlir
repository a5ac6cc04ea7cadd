// RUN: zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=1 min-shard-elements=4})" | FileCheck %s --check-prefixes=CHECK,STAGE1
// RUN: zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=2 min-shard-elements=4})" | FileCheck %s --check-prefixes=CHECK,STAGE2
// RUN: zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=3 min-shard-elements=4})" | FileCheck %s --check-prefixes=CHECK,STAGE3
// RUN: zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=2 min-shard-elements=3})" | FileCheck %s --check-prefix=EQUAL
// RUN: zero-opt %s --pass-pipeline="builtin.module(train-materialize-optimizer,dist-data-parallel,zero-shard{stage=3 min-shard-elements=31})" | FileCheck %s --check-prefix=NONE

// min-shard-elements=E: a tensor with fewer than E elements keeps plain data
// parallelism (DeepSpeed's persistence threshold). With E=4 the 3-element
// bias stays replicated with replicated Adam moments, its gradient keeps
// dist-data-parallel's all-reduce and its update writes the parameter in
// place, while the 30-element weight is sharded as usual. With E=3 the bias
// (exactly 3 elements) is sharded; with E=31 nothing is, and the step is
// plain data parallel apart from the dist.zero_stage mark.

module @min_elements attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @w param : tensor<10x3xf32> init normal(0.0, 0.1)
  train.param @b param : tensor<3xf32> init zeros
  train.optimizer @adam adam lr 1.0e-3
  func.func @step(%x: tensor<2x10xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<10x3xf32>
    %b = train.load @b : tensor<3xf32>
    %xw = train.matmul %x, %w : tensor<2x10xf32>, tensor<10x3xf32> -> tensor<2x3xf32>
    %y = train.bias_add %xw, %b : tensor<2x3xf32>, tensor<3xf32>
    %loss = train.reduce_sum %y dims [0, 1] : tensor<2x3xf32> -> tensor<f32>
    %dy = arith.constant dense<1.0> : tensor<2x3xf32>
    %dw = train.matmul %x, %dy transpose_a : tensor<2x10xf32>, tensor<2x3xf32> -> tensor<10x3xf32>
    %db = train.reduce_sum %dy dims [0] : tensor<2x3xf32> -> tensor<3xf32>
    train.apply_gradient %dw to @w with @adam : tensor<10x3xf32>
    train.apply_gradient %db to @b with @adam : tensor<3xf32>
    return %loss : tensor<f32>
  }
}

// CHECK-LABEL: module @min_elements
// STAGE1-NEXT:   train.param @w param : tensor<10x3xf32> init normal(0.0, 0.1)
// STAGE2-NEXT:   train.param @w param : tensor<10x3xf32> init normal(0.0, 0.1)
// STAGE3-NEXT:   train.param @w param : tensor<10x3xf32> sharded flat over 0 -> tensor<8xf32> init normal(0.0, 0.1)
// CHECK-NEXT:    train.param @w.m slot of @w : tensor<10x3xf32> sharded flat over 0 -> tensor<8xf32> init zeros
// CHECK-NEXT:    train.param @w.v slot of @w : tensor<10x3xf32> sharded flat over 0 -> tensor<8xf32> init zeros
// CHECK-NEXT:    train.param @b param : tensor<3xf32> init zeros
// CHECK-NEXT:    train.param @b.m slot of @b : tensor<3xf32> init zeros
// CHECK-NEXT:    train.param @b.v slot of @b : tensor<3xf32> init zeros
// CHECK:         func.func @step
// CHECK:         %[[B:.+]] = train.load @b : tensor<3xf32>
// STAGE3:        train.bias_add %{{.+}}, %[[B]] : tensor<2x3xf32>, tensor<3xf32>
// CHECK:         %[[DW:.+]] = train.matmul %{{.+}}, %{{.+}} transpose_a
// STAGE2-NEXT:   %[[DW_FLAT:.+]] = train.reshape %[[DW]]
// STAGE2-NEXT:   %[[DW_SHARD:.+]] = dist.reduce_scatter mean %[[DW_FLAT]] axis 0 dim 0 : tensor<30xf32> -> tensor<8xf32>
// STAGE3-NEXT:   %[[DW_FLAT:.+]] = train.reshape %[[DW]]
// STAGE3-NEXT:   %[[DW_SHARD:.+]] = dist.reduce_scatter mean %[[DW_FLAT]] axis 0 dim 0 : tensor<30xf32> -> tensor<8xf32>
// CHECK-NEXT:    %[[DB:.+]] = train.reduce_sum
// CHECK-NEXT:    %[[DB_MEAN:.+]] = dist.all_reduce mean %[[DB]] axis 0 : tensor<3xf32>
// STAGE1-NEXT:   %[[DW_FLAT:.+]] = train.reshape %[[DW]]
// STAGE1-NEXT:   %[[DW_SHARD:.+]] = dist.reduce_scatter mean %[[DW_FLAT]] axis 0 dim 0 : tensor<30xf32> -> tensor<8xf32>
// CHECK:         train.adam %{{.+}}, %[[DW_SHARD]], %{{.+}}, %{{.+}} step %{{.+}} with @adam : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
// CHECK:         %[[B_OLD:.+]] = train.load @b : tensor<3xf32>
// CHECK-NEXT:    %[[BM:.+]] = train.load @b.m : tensor<3xf32>
// CHECK-NEXT:    %[[BV:.+]] = train.load @b.v : tensor<3xf32>
// CHECK-NEXT:    %[[B_NEW:[^ ,]+]], %[[BM_NEW:[^ ,]+]], %[[BV_NEW:[^ ,]+]] = train.adam %[[B_OLD]], %[[DB_MEAN]], %[[BM]], %[[BV]] step %{{.+}} with @adam : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
// CHECK-NEXT:    train.store %[[BM_NEW]] to @b.m : tensor<3xf32>
// CHECK-NEXT:    train.store %[[BV_NEW]] to @b.v : tensor<3xf32>
// CHECK-NEXT:    train.store %[[B_NEW]] to @b : tensor<3xf32>
// CHECK-NEXT:    dist.all_reduce mean %{{.+}} axis 0 : tensor<f32>
// STAGE1-NEXT:   dist.all_gather %{{.+}} axis 0 dim 0 : tensor<8xf32> -> tensor<30xf32>
// STAGE2-NEXT:   dist.all_gather %{{.+}} axis 0 dim 0 : tensor<8xf32> -> tensor<30xf32>
// CHECK-NOT:     dist.all_gather
// CHECK:         return

// EQUAL-LABEL: module @min_elements
// EQUAL:         train.param @b param : tensor<3xf32> init zeros
// EQUAL-NEXT:    train.param @b.m slot of @b : tensor<3xf32> sharded flat over 0 -> tensor<1xf32> init zeros
// EQUAL-NEXT:    train.param @b.v slot of @b : tensor<3xf32> sharded flat over 0 -> tensor<1xf32> init zeros
// EQUAL:         %[[DB:.+]] = train.reduce_sum %{{.+}} dims [0]
// EQUAL-NEXT:    dist.reduce_scatter mean %[[DB]] axis 0 dim 0 : tensor<3xf32> -> tensor<1xf32>
// EQUAL-NOT:     dist.all_reduce mean %{{.+}} : tensor<3xf32>
// EQUAL:         dist.all_gather %{{.+}} axis 0 dim 0 : tensor<1xf32> -> tensor<3xf32>

// NONE-LABEL: module @min_elements
// NONE-SAME:    dist.zero_stage = 3 : i64
// NONE-NEXT:    train.param @w param : tensor<10x3xf32> init normal(0.0, 0.1)
// NONE-NEXT:    train.param @w.m slot of @w : tensor<10x3xf32> init zeros
// NONE-NEXT:    train.param @w.v slot of @w : tensor<10x3xf32> init zeros
// NONE-NEXT:    train.param @b param : tensor<3xf32> init zeros
// NONE-NEXT:    train.param @b.m slot of @b : tensor<3xf32> init zeros
// NONE-NEXT:    train.param @b.v slot of @b : tensor<3xf32> init zeros
// NONE-NOT:     dist.reduce_scatter
// NONE-NOT:     dist.all_gather
// NONE:         %[[DW:.+]] = train.matmul %{{.+}}, %{{.+}} transpose_a
// NONE-NEXT:    dist.all_reduce mean %[[DW]] axis 0 : tensor<10x3xf32>
// NONE-NEXT:    %[[DB:.+]] = train.reduce_sum
// NONE-NEXT:    dist.all_reduce mean %[[DB]] axis 0 : tensor<3xf32>
// NONE-NOT:     dist.reduce_scatter
// NONE-NOT:     dist.all_gather
// NONE:         return
