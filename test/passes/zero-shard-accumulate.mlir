// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-materialize-optimizer{accumulate-steps=4},dist-data-parallel,zero-shard{stage=1 layout=flat})" | FileCheck %s --check-prefix=STAGE1
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-materialize-optimizer{accumulate-steps=4},dist-data-parallel,zero-shard{stage=2 layout=flat})" | FileCheck %s --check-prefix=STAGE2
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-materialize-optimizer{accumulate-steps=4},dist-data-parallel,zero-shard{stage=3 layout=dim0})" | FileCheck %s --check-prefix=STAGE3
// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(train-materialize-optimizer{accumulate-steps=4},dist-data-parallel,zero-shard{stage=2 layout=flat min-shard-elements=4})" | FileCheck %s --check-prefix=MIN

// Gradient accumulation over 4 micro-batches: @step adds each gradient into
// a persistent accumulator @p.grad and @step_apply averages the accumulators,
// updates and resets them.
//
// * stage 1 keeps the accumulators full-size: the micro-step communicates
//   nothing, and @step_apply reduce-scatters each averaged accumulator just
//   before the first update (where dist-data-parallel had all-reduced it);
// * stage 2 shards the accumulators: each micro-step reduce-scatters the
//   fresh gradient right away and adds it to this rank's accumulator shard;
//   @step_apply updates from the shard with no further reduction;
// * stage 3 does the same and also shards the parameters: the micro-step
//   gathers them, @step_apply writes the new shards with no gather;
// * a tensor below min-shard-elements keeps a full accumulator, which is
//   all-reduced once per optimizer step in @step_apply.

module @accumulate attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @w param : tensor<10x3xf32> init normal(0.0, 0.1)
  train.param @b param : tensor<3xf32> init zeros
  train.optimizer @sgd sgd lr 0.1
  func.func @step(%x: tensor<2x10xf32>) -> tensor<f32> attributes {train.step} {
    %w = train.load @w : tensor<10x3xf32>
    %b = train.load @b : tensor<3xf32>
    %xw = train.matmul %x, %w : tensor<2x10xf32>, tensor<10x3xf32> -> tensor<2x3xf32>
    %y = train.bias_add %xw, %b : tensor<2x3xf32>, tensor<3xf32>
    %loss = train.reduce_sum %y dims [0, 1] : tensor<2x3xf32> -> tensor<f32>
    %dy = arith.constant dense<1.0> : tensor<2x3xf32>
    %dw = train.matmul %x, %dy transpose_a : tensor<2x10xf32>, tensor<2x3xf32> -> tensor<10x3xf32>
    %db = train.reduce_sum %dy dims [0] : tensor<2x3xf32> -> tensor<3xf32>
    train.apply_gradient %dw to @w with @sgd : tensor<10x3xf32>
    train.apply_gradient %db to @b with @sgd : tensor<3xf32>
    return %loss : tensor<f32>
  }
}

// STAGE1-LABEL: module @accumulate
// STAGE1-SAME:    dist.zero_stage = 1 : i64
// STAGE1-NEXT:    train.param @w param : tensor<10x3xf32> init normal(0.0, 0.1)
// STAGE1-NEXT:    train.param @w.grad grad_accum of @w : tensor<10x3xf32> init zeros
// STAGE1-NEXT:    train.param @b param : tensor<3xf32> init zeros
// STAGE1-NEXT:    train.param @b.grad grad_accum of @b : tensor<3xf32> init zeros
// STAGE1-LABEL:   func.func @step(
// STAGE1:         %[[DW:.+]] = train.matmul %{{.+}}, %{{.+}} transpose_a
// STAGE1-NEXT:    %[[DB:.+]] = train.reduce_sum
// STAGE1-NEXT:    %[[WACC:.+]] = train.load @w.grad : tensor<10x3xf32>
// STAGE1-NEXT:    %[[WSUM:.+]] = train.add %[[WACC]], %[[DW]] : tensor<10x3xf32>
// STAGE1-NEXT:    train.store %[[WSUM]] to @w.grad : tensor<10x3xf32>
// STAGE1-NEXT:    %[[BACC:.+]] = train.load @b.grad : tensor<3xf32>
// STAGE1-NEXT:    %[[BSUM:.+]] = train.add %[[BACC]], %[[DB]] : tensor<3xf32>
// STAGE1-NEXT:    train.store %[[BSUM]] to @b.grad : tensor<3xf32>
// STAGE1-NEXT:    dist.all_reduce mean %{{.+}} axis 0 : tensor<f32>
// STAGE1-NEXT:    return
// STAGE1-LABEL:   func.func @step_apply()
// STAGE1-NEXT:    %[[WACC:.+]] = train.load @w.grad : tensor<10x3xf32>
// STAGE1-NEXT:    %[[WAVG:.+]] = train.scale %[[WACC]] by 2.500000e-01 : tensor<10x3xf32>
// STAGE1-NEXT:    %[[WAVG_FLAT:.+]] = train.reshape %[[WAVG]] : tensor<10x3xf32> -> tensor<30xf32>
// STAGE1-NEXT:    %[[WGRAD:.+]] = dist.reduce_scatter mean %[[WAVG_FLAT]] axis 0 dim 0 : tensor<30xf32> -> tensor<8xf32>
// STAGE1-NEXT:    %[[W:.+]] = train.load @w : tensor<10x3xf32>
// STAGE1-NEXT:    %[[W_FLAT:.+]] = train.reshape %[[W]] : tensor<10x3xf32> -> tensor<30xf32>
// STAGE1-NEXT:    %[[W_SLICE:.+]] = dist.slice %[[W_FLAT]] axis 0 dim 0 : tensor<30xf32> -> tensor<8xf32>
// STAGE1-NEXT:    %[[W_NEW:.+]] = train.sgd %[[W_SLICE]], %[[WGRAD]] with @sgd : tensor<8xf32>, tensor<8xf32>
// STAGE1-NEXT:    %[[WZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<10x3xf32>
// STAGE1-NEXT:    train.store %[[WZERO]] to @w.grad : tensor<10x3xf32>
// STAGE1-NEXT:    %[[BACC:.+]] = train.load @b.grad : tensor<3xf32>
// STAGE1-NEXT:    %[[BAVG:.+]] = train.scale %[[BACC]] by 2.500000e-01 : tensor<3xf32>
// STAGE1-NEXT:    %[[BGRAD:.+]] = dist.reduce_scatter mean %[[BAVG]] axis 0 dim 0 : tensor<3xf32> -> tensor<1xf32>
// STAGE1-NEXT:    %[[B:.+]] = train.load @b : tensor<3xf32>
// STAGE1-NEXT:    %[[B_SLICE:.+]] = dist.slice %[[B]] axis 0 dim 0 : tensor<3xf32> -> tensor<1xf32>
// STAGE1-NEXT:    %[[B_NEW:.+]] = train.sgd %[[B_SLICE]], %[[BGRAD]] with @sgd : tensor<1xf32>, tensor<1xf32>
// STAGE1-NEXT:    %[[BZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<3xf32>
// STAGE1-NEXT:    train.store %[[BZERO]] to @b.grad : tensor<3xf32>
// STAGE1-NEXT:    %[[W_GATHERED:.+]] = dist.all_gather %[[W_NEW]] axis 0 dim 0 : tensor<8xf32> -> tensor<30xf32>
// STAGE1-NEXT:    %[[B_GATHERED:.+]] = dist.all_gather %[[B_NEW]] axis 0 dim 0 : tensor<1xf32> -> tensor<3xf32>
// STAGE1-NEXT:    %[[W_FULL:.+]] = train.reshape %[[W_GATHERED]] : tensor<30xf32> -> tensor<10x3xf32>
// STAGE1-NEXT:    train.store %[[W_FULL]] to @w : tensor<10x3xf32>
// STAGE1-NEXT:    train.store %[[B_GATHERED]] to @b : tensor<3xf32>
// STAGE1-NEXT:    return

// STAGE2-LABEL: module @accumulate
// STAGE2-SAME:    dist.zero_stage = 2 : i64
// STAGE2-NEXT:    train.param @w param : tensor<10x3xf32> init normal(0.0, 0.1)
// STAGE2-NEXT:    train.param @w.grad grad_accum of @w : tensor<10x3xf32> sharded flat over 0 -> tensor<8xf32> init zeros
// STAGE2-NEXT:    train.param @b param : tensor<3xf32> init zeros
// STAGE2-NEXT:    train.param @b.grad grad_accum of @b : tensor<3xf32> sharded flat over 0 -> tensor<1xf32> init zeros
// STAGE2-LABEL:   func.func @step(
// STAGE2:         %[[DW:.+]] = train.matmul %{{.+}}, %{{.+}} transpose_a
// STAGE2-NEXT:    %[[DW_FLAT:.+]] = train.reshape %[[DW]] : tensor<10x3xf32> -> tensor<30xf32>
// STAGE2-NEXT:    %[[DW_SHARD:.+]] = dist.reduce_scatter mean %[[DW_FLAT]] axis 0 dim 0 : tensor<30xf32> -> tensor<8xf32>
// STAGE2-NEXT:    %[[DB:.+]] = train.reduce_sum
// STAGE2-NEXT:    %[[DB_SHARD:.+]] = dist.reduce_scatter mean %[[DB]] axis 0 dim 0 : tensor<3xf32> -> tensor<1xf32>
// STAGE2-NEXT:    %[[WACC:.+]] = train.load @w.grad : tensor<8xf32>
// STAGE2-NEXT:    %[[WSUM:.+]] = train.add %[[WACC]], %[[DW_SHARD]] : tensor<8xf32>
// STAGE2-NEXT:    train.store %[[WSUM]] to @w.grad : tensor<8xf32>
// STAGE2-NEXT:    %[[BACC:.+]] = train.load @b.grad : tensor<1xf32>
// STAGE2-NEXT:    %[[BSUM:.+]] = train.add %[[BACC]], %[[DB_SHARD]] : tensor<1xf32>
// STAGE2-NEXT:    train.store %[[BSUM]] to @b.grad : tensor<1xf32>
// STAGE2-NEXT:    dist.all_reduce mean %{{.+}} axis 0 : tensor<f32>
// STAGE2-NEXT:    return
// STAGE2-LABEL:   func.func @step_apply()
// STAGE2-NEXT:    %[[WACC:.+]] = train.load @w.grad : tensor<8xf32>
// STAGE2-NEXT:    %[[WGRAD:.+]] = train.scale %[[WACC]] by 2.500000e-01 : tensor<8xf32>
// STAGE2-NEXT:    %[[W:.+]] = train.load @w : tensor<10x3xf32>
// STAGE2-NEXT:    %[[W_FLAT:.+]] = train.reshape %[[W]] : tensor<10x3xf32> -> tensor<30xf32>
// STAGE2-NEXT:    %[[W_SLICE:.+]] = dist.slice %[[W_FLAT]] axis 0 dim 0 : tensor<30xf32> -> tensor<8xf32>
// STAGE2-NEXT:    %[[W_NEW:.+]] = train.sgd %[[W_SLICE]], %[[WGRAD]] with @sgd : tensor<8xf32>, tensor<8xf32>
// STAGE2-NEXT:    %[[WZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<8xf32>
// STAGE2-NEXT:    train.store %[[WZERO]] to @w.grad : tensor<8xf32>
// STAGE2-NEXT:    %[[BACC:.+]] = train.load @b.grad : tensor<1xf32>
// STAGE2-NEXT:    %[[BGRAD:.+]] = train.scale %[[BACC]] by 2.500000e-01 : tensor<1xf32>
// STAGE2-NEXT:    %[[B:.+]] = train.load @b : tensor<3xf32>
// STAGE2-NEXT:    %[[B_SLICE:.+]] = dist.slice %[[B]] axis 0 dim 0 : tensor<3xf32> -> tensor<1xf32>
// STAGE2-NEXT:    %[[B_NEW:.+]] = train.sgd %[[B_SLICE]], %[[BGRAD]] with @sgd : tensor<1xf32>, tensor<1xf32>
// STAGE2-NEXT:    %[[BZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<1xf32>
// STAGE2-NEXT:    train.store %[[BZERO]] to @b.grad : tensor<1xf32>
// STAGE2-NEXT:    %[[W_GATHERED:.+]] = dist.all_gather %[[W_NEW]] axis 0 dim 0 : tensor<8xf32> -> tensor<30xf32>
// STAGE2-NEXT:    %[[B_GATHERED:.+]] = dist.all_gather %[[B_NEW]] axis 0 dim 0 : tensor<1xf32> -> tensor<3xf32>
// STAGE2-NEXT:    %[[W_FULL:.+]] = train.reshape %[[W_GATHERED]] : tensor<30xf32> -> tensor<10x3xf32>
// STAGE2-NEXT:    train.store %[[W_FULL]] to @w : tensor<10x3xf32>
// STAGE2-NEXT:    train.store %[[B_GATHERED]] to @b : tensor<3xf32>
// STAGE2-NEXT:    return

// STAGE3-LABEL: module @accumulate
// STAGE3-SAME:    dist.zero_stage = 3 : i64
// STAGE3-NEXT:    train.param @w param : tensor<10x3xf32> sharded dim0 over 0 -> tensor<3x3xf32> init normal(0.0, 0.1)
// STAGE3-NEXT:    train.param @w.grad grad_accum of @w : tensor<10x3xf32> sharded dim0 over 0 -> tensor<3x3xf32> init zeros
// STAGE3-NEXT:    train.param @b param : tensor<3xf32> sharded dim0 over 0 -> tensor<1xf32> init zeros
// STAGE3-NEXT:    train.param @b.grad grad_accum of @b : tensor<3xf32> sharded dim0 over 0 -> tensor<1xf32> init zeros
// STAGE3-LABEL:   func.func @step(
// STAGE3-NEXT:    %[[W:.+]] = train.load @w : tensor<3x3xf32>
// STAGE3-NEXT:    %[[B:.+]] = train.load @b : tensor<1xf32>
// STAGE3-NEXT:    %[[W_FULL:.+]] = dist.all_gather %[[W]] axis 0 dim 0 : tensor<3x3xf32> -> tensor<10x3xf32>
// STAGE3-NEXT:    %[[XW:.+]] = train.matmul %{{.+}}, %[[W_FULL]]
// STAGE3-NEXT:    %[[B_FULL:.+]] = dist.all_gather %[[B]] axis 0 dim 0 : tensor<1xf32> -> tensor<3xf32>
// STAGE3-NEXT:    train.bias_add %[[XW]], %[[B_FULL]]
// STAGE3:         %[[DW:.+]] = train.matmul %{{.+}}, %{{.+}} transpose_a
// STAGE3-NEXT:    %[[DW_SHARD:.+]] = dist.reduce_scatter mean %[[DW]] axis 0 dim 0 : tensor<10x3xf32> -> tensor<3x3xf32>
// STAGE3-NEXT:    %[[DB:.+]] = train.reduce_sum
// STAGE3-NEXT:    %[[DB_SHARD:.+]] = dist.reduce_scatter mean %[[DB]] axis 0 dim 0 : tensor<3xf32> -> tensor<1xf32>
// STAGE3-NEXT:    %[[WACC:.+]] = train.load @w.grad : tensor<3x3xf32>
// STAGE3-NEXT:    %[[WSUM:.+]] = train.add %[[WACC]], %[[DW_SHARD]] : tensor<3x3xf32>
// STAGE3-NEXT:    train.store %[[WSUM]] to @w.grad : tensor<3x3xf32>
// STAGE3-NEXT:    %[[BACC:.+]] = train.load @b.grad : tensor<1xf32>
// STAGE3-NEXT:    %[[BSUM:.+]] = train.add %[[BACC]], %[[DB_SHARD]] : tensor<1xf32>
// STAGE3-NEXT:    train.store %[[BSUM]] to @b.grad : tensor<1xf32>
// STAGE3-NEXT:    dist.all_reduce mean %{{.+}} axis 0 : tensor<f32>
// STAGE3-NEXT:    return
// STAGE3-LABEL:   func.func @step_apply()
// STAGE3-NEXT:    %[[WACC:.+]] = train.load @w.grad : tensor<3x3xf32>
// STAGE3-NEXT:    %[[WGRAD:.+]] = train.scale %[[WACC]] by 2.500000e-01 : tensor<3x3xf32>
// STAGE3-NEXT:    %[[W:.+]] = train.load @w : tensor<3x3xf32>
// STAGE3-NEXT:    %[[W_NEW:.+]] = train.sgd %[[W]], %[[WGRAD]] with @sgd : tensor<3x3xf32>, tensor<3x3xf32>
// STAGE3-NEXT:    train.store %[[W_NEW]] to @w : tensor<3x3xf32>
// STAGE3-NEXT:    %[[WZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<3x3xf32>
// STAGE3-NEXT:    train.store %[[WZERO]] to @w.grad : tensor<3x3xf32>
// STAGE3-NEXT:    %[[BACC:.+]] = train.load @b.grad : tensor<1xf32>
// STAGE3-NEXT:    %[[BGRAD:.+]] = train.scale %[[BACC]] by 2.500000e-01 : tensor<1xf32>
// STAGE3-NEXT:    %[[B:.+]] = train.load @b : tensor<1xf32>
// STAGE3-NEXT:    %[[B_NEW:.+]] = train.sgd %[[B]], %[[BGRAD]] with @sgd : tensor<1xf32>, tensor<1xf32>
// STAGE3-NEXT:    train.store %[[B_NEW]] to @b : tensor<1xf32>
// STAGE3-NEXT:    %[[BZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<1xf32>
// STAGE3-NEXT:    train.store %[[BZERO]] to @b.grad : tensor<1xf32>
// STAGE3-NEXT:    return

// MIN-LABEL: module @accumulate
// MIN-NEXT:    train.param @w param : tensor<10x3xf32> init normal(0.0, 0.1)
// MIN-NEXT:    train.param @w.grad grad_accum of @w : tensor<10x3xf32> sharded flat over 0 -> tensor<8xf32> init zeros
// MIN-NEXT:    train.param @b param : tensor<3xf32> init zeros
// MIN-NEXT:    train.param @b.grad grad_accum of @b : tensor<3xf32> init zeros
// MIN-LABEL:   func.func @step(
// MIN:         %[[DW:.+]] = train.matmul %{{.+}}, %{{.+}} transpose_a
// MIN-NEXT:    %[[DW_FLAT:.+]] = train.reshape %[[DW]]
// MIN-NEXT:    %[[DW_SHARD:.+]] = dist.reduce_scatter mean %[[DW_FLAT]] axis 0 dim 0 : tensor<30xf32> -> tensor<8xf32>
// MIN-NEXT:    %[[DB:.+]] = train.reduce_sum
// MIN-NEXT:    %[[WACC:.+]] = train.load @w.grad : tensor<8xf32>
// MIN-NEXT:    %[[WSUM:.+]] = train.add %[[WACC]], %[[DW_SHARD]] : tensor<8xf32>
// MIN-NEXT:    train.store %[[WSUM]] to @w.grad : tensor<8xf32>
// MIN-NEXT:    %[[BACC:.+]] = train.load @b.grad : tensor<3xf32>
// MIN-NEXT:    %[[BSUM:.+]] = train.add %[[BACC]], %[[DB]] : tensor<3xf32>
// MIN-NEXT:    train.store %[[BSUM]] to @b.grad : tensor<3xf32>
// MIN-LABEL:   func.func @step_apply()
// MIN:         train.sgd %{{.+}}, %{{.+}} with @sgd : tensor<8xf32>, tensor<8xf32>
// MIN:         %[[BACC:.+]] = train.load @b.grad : tensor<3xf32>
// MIN-NEXT:    %[[BAVG:.+]] = train.scale %[[BACC]] by 2.500000e-01 : tensor<3xf32>
// MIN-NEXT:    %[[BGRAD:.+]] = dist.all_reduce mean %[[BAVG]] axis 0 : tensor<3xf32>
// MIN-NEXT:    %[[B:.+]] = train.load @b : tensor<3xf32>
// MIN-NEXT:    %[[B_NEW:.+]] = train.sgd %[[B]], %[[BGRAD]] with @sgd : tensor<3xf32>, tensor<3xf32>
// MIN-NEXT:    train.store %[[B_NEW]] to @b : tensor<3xf32>
// MIN-NEXT:    %[[BZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<3xf32>
// MIN-NEXT:    train.store %[[BZERO]] to @b.grad : tensor<3xf32>
// MIN-NEXT:    %[[W_GATHERED:.+]] = dist.all_gather %{{.+}} axis 0 dim 0 : tensor<8xf32> -> tensor<30xf32>
// MIN-NEXT:    train.reshape %[[W_GATHERED]]
// MIN-NEXT:    train.store %{{.+}} to @w : tensor<10x3xf32>
// MIN-NEXT:    return

// -----

// Mixed precision with accumulation: the accumulator is f32 (K additions in
// bf16 would lose the gradient's low bits), but at stage 2 the bf16
// gradient is still reduce-scattered in bf16, and only its shard widened
// and added to the f32 accumulator shard; the fp32 master shard takes the
// update.

module @accumulate_mixed attributes {dist.placement = #dist.placement<cpu, [4]>} {
  train.param @w param : tensor<10x3xbf16> init normal(0.0, 0.1)
  train.optimizer @adam adam lr 1.0e-3
  func.func @step(%x: tensor<2x10xbf16>) -> tensor<bf16> attributes {train.step} {
    %w = train.load @w : tensor<10x3xbf16>
    %y = train.matmul %x, %w : tensor<2x10xbf16>, tensor<10x3xbf16> -> tensor<2x3xbf16>
    %loss = train.reduce_sum %y dims [0, 1] : tensor<2x3xbf16> -> tensor<bf16>
    %dy = arith.constant dense<1.0> : tensor<2x3xbf16>
    %dw = train.matmul %x, %dy transpose_a : tensor<2x10xbf16>, tensor<2x3xbf16> -> tensor<10x3xbf16>
    train.apply_gradient %dw to @w with @adam : tensor<10x3xbf16>
    return %loss : tensor<bf16>
  }
}

// STAGE2-LABEL: module @accumulate_mixed
// STAGE2-NEXT:    train.param @w param : tensor<10x3xbf16> init normal(0.0, 0.1)
// STAGE2-NEXT:    train.param @w.grad grad_accum of @w : tensor<10x3xf32> sharded flat over 0 -> tensor<8xf32> init zeros
// STAGE2-NEXT:    train.param @w.master master of @w : tensor<10x3xf32> sharded flat over 0 -> tensor<8xf32>
// STAGE2-LABEL:   func.func @step(
// STAGE2:         %[[DW:.+]] = train.matmul %{{.+}}, %{{.+}} transpose_a
// STAGE2-NEXT:    %[[DW_FLAT:.+]] = train.reshape %[[DW]] : tensor<10x3xbf16> -> tensor<30xbf16>
// STAGE2-NEXT:    %[[DW_SHARD:.+]] = dist.reduce_scatter mean %[[DW_FLAT]] axis 0 dim 0 : tensor<30xbf16> -> tensor<8xbf16>
// STAGE2-NEXT:    %[[WIDE:.+]] = train.cast %[[DW_SHARD]] : tensor<8xbf16> -> tensor<8xf32>
// STAGE2-NEXT:    %[[ACC:.+]] = train.load @w.grad : tensor<8xf32>
// STAGE2-NEXT:    %[[SUM:.+]] = train.add %[[ACC]], %[[WIDE]] : tensor<8xf32>
// STAGE2-NEXT:    train.store %[[SUM]] to @w.grad : tensor<8xf32>
// STAGE2-LABEL:   func.func @step_apply()
// STAGE2:         %[[ACC:.+]] = train.load @w.grad : tensor<8xf32>
// STAGE2-NEXT:    %[[GRAD:.+]] = train.scale %[[ACC]] by 2.500000e-01 : tensor<8xf32>
// STAGE2-NEXT:    %[[MASTER:.+]] = train.load @w.master : tensor<8xf32>
// STAGE2-NEXT:    %[[M:.+]] = train.load @w.m : tensor<8xf32>
// STAGE2-NEXT:    %[[V:.+]] = train.load @w.v : tensor<8xf32>
// STAGE2-NEXT:    %[[NEW:[^ ,]+]], %{{[^ ,]+}}, %{{[^ ,]+}} = train.adam %[[MASTER]], %[[GRAD]], %[[M]], %[[V]] step %{{.+}} with @adam : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
// STAGE2:         %[[CAST:.+]] = train.cast %[[NEW]] : tensor<8xf32> -> tensor<8xbf16>
// STAGE2:         dist.all_gather %[[CAST]] axis 0 dim 0 : tensor<8xbf16> -> tensor<30xbf16>
