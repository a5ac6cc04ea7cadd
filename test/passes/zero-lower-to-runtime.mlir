// RUN: zero-opt %s -split-input-file --pass-pipeline="builtin.module(zero-lower-to-runtime)" | FileCheck %s

// zero-lower-to-runtime replaces the step and the persistent state with one
// `zrt.program`: persistent buffers at their per-rank sizes, the step's
// inputs and results as `input` and `output` buffers, and a step body of
// kernel launches, copies and fills on `@compute` over memrefs, transient
// values living in one arena.
//
// This file covers the buffers and the compute side: state, interface,
// launches and their params, views, constants, loads and stores.
// zero-lower-to-runtime-collectives.mlir covers collectives, buckets, streams
// and events; zero-lower-to-runtime-arena.mlir the arena offsets, the
// alignment and the attached report; zero-lower-to-runtime-invalid.mlir and
// zero-lower-to-runtime-options.mlir the diagnostics;
// zero-lower-to-runtime-schedule.mlir the learning-rate schedule params;
// zero-lower-to-runtime-pipeline.test the whole pipeline on the MLP, with
// check_zrt_program.py replaying the programs for races and clobbered
// buffers. Arena offsets here are what the planner gives; the arena file
// explains how.

// Every `train.param` becomes a persistent `zrt.buffer` with the zrt role of
// its train role, at the size one rank holds: a sharded tensor at its shard
// (10 elements flat over 4 ranks: 3; 6x2 by rows over 4: 2x2), a replicated
// one whole. The buffer keeps what the runtime needs to draw the logical
// tensor from a seed and cut its own shard: the logical type, the layout
// and the initializer. `zrt.init_name` names the tensor whose initial value
// the buffer takes: itself, except for a master copy, which starts as its
// parameter (and has no initializer of its own). The module keeps its
// placement; `dist.zero_stage` becomes `zrt.zero_stage`. Nothing else of
// the module is left.

module attributes {dist.placement = #dist.placement<cpu, [4]>, dist.zero_stage = 2 : i64} {
  train.param @w param : tensor<10xf32> sharded flat over 0 -> tensor<3xf32> init normal(0.0, 0.02)
  train.param @w.m slot of @w : tensor<10xf32> sharded flat over 0 -> tensor<3xf32> init zeros
  train.param @e param : tensor<6x2xf32> sharded dim0 over 0 -> tensor<2x2xf32> init ones
  train.param @h param : tensor<4xbf16> init zeros
  train.param @h.master master of @h : tensor<4xf32>
  train.param @h.acc grad_accum of @h : tensor<4xbf16> init zeros
  train.param @f frozen : tensor<4xf32> init normal(1.0, 0.5)
  train.optimizer @adam adam lr 1.0e-03

  func.func @state_buffers() attributes {train.step} {
    return
  }
}

// CHECK-LABEL: module attributes {dist.placement = #dist.placement<cpu, [4]>, dist.zero_stage = 2 : i64} {
// CHECK-NEXT:    zrt.program @state_buffers placement #dist.placement<cpu, [4]> arena 0 align 64
// CHECK-SAME:      zrt.zero_stage = 2 : i64
// CHECK-NEXT:      zrt.stream @compute
// CHECK-NEXT:      zrt.stream @comm
// CHECK-NEXT:      zrt.buffer @w param : memref<3xf32> {zrt.init = #train.init<normal(0.0, 0.02)>, zrt.init_name = "w", zrt.layout = "flat", zrt.logical_type = tensor<10xf32>}
// CHECK-NEXT:      zrt.buffer @w.m slot : memref<3xf32> {zrt.init = #train.init<zeros>, zrt.init_name = "w.m", zrt.layout = "flat", zrt.logical_type = tensor<10xf32>}
// CHECK-NEXT:      zrt.buffer @e param : memref<2x2xf32> {zrt.init = #train.init<ones>, zrt.init_name = "e", zrt.layout = "dim0", zrt.logical_type = tensor<6x2xf32>}
// CHECK-NEXT:      zrt.buffer @h param : memref<4xbf16> {zrt.init = #train.init<zeros>, zrt.init_name = "h", zrt.layout = "replicated", zrt.logical_type = tensor<4xbf16>}
// CHECK-NEXT:      zrt.buffer @h.master master : memref<4xf32> {zrt.init_name = "h", zrt.layout = "replicated", zrt.logical_type = tensor<4xf32>}
// CHECK-NEXT:      zrt.buffer @h.acc grad_accum : memref<4xbf16> {zrt.init = #train.init<zeros>, zrt.init_name = "h.acc", zrt.layout = "replicated", zrt.logical_type = tensor<4xbf16>}
// CHECK-NEXT:      zrt.buffer @f frozen : memref<4xf32> {zrt.init = #train.init<normal(1.0, 0.5)>, zrt.init_name = "f", zrt.layout = "replicated", zrt.logical_type = tensor<4xf32>}
// CHECK-NEXT:      zrt.step {
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:  }

// -----

// Step arguments become `input` buffers @input0, @input1, ... and results
// `output` buffers @output0, ... An input keeps its `dist.sbp` (how the
// global batch is cut over ranks) as `zrt.sbp`. An integer input that an
// op uses as indices says so, so that the runtime draws valid synthetic
// ids: the ids of an embedding index its table's rows (16), the labels of
// a cross-entropy its classes (3). The step's results are copied into the
// output buffers at the end of the step, in order.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @wte param : tensor<16x4xf32> init normal(0.0, 0.02)
  train.param @w param : tensor<4x3xf32> init zeros

  func.func @interface(%ids: tensor<8xi32> {dist.sbp = #dist.sbp<[S(0)]>}, %labels: tensor<8xi64> {dist.sbp = #dist.sbp<[S(0)]>}, %scale: tensor<f32>)
      -> (tensor<f32>, tensor<8x3xf32>) attributes {train.step} {
    %wte = train.load @wte : tensor<16x4xf32>
    %w = train.load @w : tensor<4x3xf32>
    %e = train.embedding %wte, %ids : tensor<16x4xf32>, tensor<8xi32> -> tensor<8x4xf32>
    %logits = train.matmul %e, %w : tensor<8x4xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
    %loss = train.softmax_cross_entropy %logits, %labels : tensor<8x3xf32>, tensor<8xi64> -> tensor<f32>
    %scaled = train.mul %loss, %scale : tensor<f32>
    return %scaled, %logits : tensor<f32>, tensor<8x3xf32>
  }
}

// CHECK-LABEL: zrt.program @interface
// CHECK:         zrt.buffer @input0 input : memref<8xi32> {zrt.index_bound = 16 : i64, zrt.index_of = "embedding", zrt.sbp = #dist.sbp<[S(0)]>}
// CHECK-NEXT:    zrt.buffer @input1 input : memref<8xi64> {zrt.index_bound = 3 : i64, zrt.index_of = "labels", zrt.sbp = #dist.sbp<[S(0)]>}
// CHECK-NEXT:    zrt.buffer @input2 input : memref<f32>{{$}}
// CHECK-NEXT:    zrt.buffer @output0 output : memref<f32>{{$}}
// CHECK-NEXT:    zrt.buffer @output1 output : memref<8x3xf32>{{$}}
// CHECK-NEXT:    zrt.step {
// CHECK-DAG:       %[[IDS:.+]] = zrt.buffer_ref @input0 : memref<8xi32>
// CHECK-DAG:       %[[LABELS:.+]] = zrt.buffer_ref @input1 : memref<8xi64>
// CHECK-DAG:       %[[SCALE:.+]] = zrt.buffer_ref @input2 : memref<f32>
// CHECK-DAG:       %[[WTE:.+]] = zrt.buffer_ref @wte : memref<16x4xf32>
// CHECK-DAG:       %[[W:.+]] = zrt.buffer_ref @w : memref<4x3xf32>
// CHECK:           %[[E:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<8x4xf32>
// CHECK-NEXT:      zrt.launch "train.embedding" on @compute ins(%[[WTE]], %[[IDS]] : memref<16x4xf32>, memref<8xi32>) outs(%[[E]] : memref<8x4xf32>)
// CHECK-NEXT:      %[[LOGITS:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<8x3xf32>
// CHECK-NEXT:      zrt.launch "train.matmul" on @compute ins(%[[E]], %[[W]] : memref<8x4xf32>, memref<4x3xf32>) outs(%[[LOGITS]] : memref<8x3xf32>)
// CHECK-NEXT:      %[[LOSS:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<f32>
// CHECK-NEXT:      zrt.launch "train.softmax_cross_entropy" on @compute ins(%[[LOGITS]], %[[LABELS]] : memref<8x3xf32>, memref<8xi64>) outs(%[[LOSS]] : memref<f32>)
// CHECK-NEXT:      %[[SCALED:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<f32>
// CHECK-NEXT:      zrt.launch "train.mul" on @compute ins(%[[LOSS]], %[[SCALE]] : memref<f32>, memref<f32>) outs(%[[SCALED]] : memref<f32>)
// CHECK-NEXT:      %[[OUT0:.+]] = zrt.buffer_ref @output0 : memref<f32>
// CHECK-NEXT:      zrt.copy on @compute %[[SCALED]] to %[[OUT0]] : memref<f32> to memref<f32>
// CHECK-NEXT:      %[[OUT1:.+]] = zrt.buffer_ref @output1 : memref<8x3xf32>
// CHECK-NEXT:      zrt.copy on @compute %[[LOGITS]] to %[[OUT1]] : memref<8x3xf32> to memref<8x3xf32>
// CHECK-NEXT:    }

// -----

// A compute op becomes a launch of the kernel named after it, reading its
// operands' buffers and writing a fresh arena buffer per result. The op's
// attributes are the launch's params (`transpose_a`, `dims`, `factor`); an
// op without attributes launches without params. `train.step_index` is a
// kernel with no inputs (the runtime supplies the step number).

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  func.func @launch_params(%x: tensor<8x4xf32>, %dy: tensor<8x3xf32>) -> (tensor<i64>, tensor<3xf32>) attributes {train.step} {
    %t = train.step_index : tensor<i64>
    %dw = train.matmul %x, %dy transpose_a : tensor<8x4xf32>, tensor<8x3xf32> -> tensor<4x3xf32>
    %db = train.reduce_sum %dw dims [0] : tensor<4x3xf32> -> tensor<3xf32>
    %half = train.scale %db by 5.000000e-01 : tensor<3xf32>
    %r = train.relu %half : tensor<3xf32>
    return %t, %r : tensor<i64>, tensor<3xf32>
  }
}

// CHECK-LABEL: zrt.program @launch_params
// CHECK:         zrt.step {
// CHECK-NEXT:      %[[X:.+]] = zrt.buffer_ref @input0 : memref<8x4xf32>
// CHECK-NEXT:      %[[DY:.+]] = zrt.buffer_ref @input1 : memref<8x3xf32>
// CHECK-NEXT:      %[[T:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<i64>
// CHECK-NEXT:      zrt.launch "train.step_index" on @compute outs(%[[T]] : memref<i64>){{$}}
// CHECK-NEXT:      %[[DW:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<4x3xf32>
// CHECK-NEXT:      zrt.launch "train.matmul" on @compute ins(%[[X]], %[[DY]] : memref<8x4xf32>, memref<8x3xf32>) outs(%[[DW]] : memref<4x3xf32>) params {transpose_a}
// CHECK-NEXT:      %[[DB:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<3xf32>
// CHECK-NEXT:      zrt.launch "train.reduce_sum" on @compute ins(%[[DW]] : memref<4x3xf32>) outs(%[[DB]] : memref<3xf32>) params {dims = array<i64: 0>}
// CHECK-NEXT:      %[[HALF:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<3xf32>
// CHECK-NEXT:      zrt.launch "train.scale" on @compute ins(%[[DB]] : memref<3xf32>) outs(%[[HALF]] : memref<3xf32>) params {factor = 5.000000e-01 : f64}
// CHECK-NEXT:      %[[R:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<3xf32>
// CHECK-NEXT:      zrt.launch "train.relu" on @compute ins(%[[HALF]] : memref<3xf32>) outs(%[[R]] : memref<3xf32>){{$}}

// -----

// Update ops carry their optimizer's hyper-parameters, with the defaults
// applied: `adam lr 1.0e-03` runs with betas (0.9, 0.999), eps 1e-8 and no
// weight decay; momentum SGD adds `momentum`; what the optimizer sets
// explicitly is passed as is. Every update gets lr, beta1, beta2, eps and
// weight_decay, so a kernel never has to know the defaults.
//
// The loads feeding an update are the persistent buffers themselves (no
// copy: the state is stored only after its last read), and each store is
// a copy of the update's result into the state's buffer.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<4xf32> init zeros
  train.param @w.m slot of @w : tensor<4xf32> init zeros
  train.param @w.v slot of @w : tensor<4xf32> init zeros
  train.param @u param : tensor<4xf32> init zeros
  train.param @u.buf slot of @u : tensor<4xf32> init zeros
  train.param @s param : tensor<4xf32> init zeros
  train.param @a param : tensor<4xf32> init zeros
  train.param @a.m slot of @a : tensor<4xf32> init zeros
  train.param @a.v slot of @a : tensor<4xf32> init zeros
  train.optimizer @adam adam lr 1.0e-03
  train.optimizer @mom momentum lr 5.000000e-01 momentum 9.000000e-01
  train.optimizer @sgd sgd lr 2.500000e-01 weight_decay 1.000000e-02
  train.optimizer @adamw adamw lr 3.0e-04 betas(8.000000e-01, 9.500000e-01) eps 1.0e-06 weight_decay 1.000000e-01

  func.func @update_hyperparameters(%g: tensor<4xf32>) attributes {train.step} {
    %t = train.step_index : tensor<i64>
    %w = train.load @w : tensor<4xf32>
    %m = train.load @w.m : tensor<4xf32>
    %v = train.load @w.v : tensor<4xf32>
    %w1, %m1, %v1 = train.adam %w, %g, %m, %v step %t with @adam : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
    train.store %w1 to @w : tensor<4xf32>
    train.store %m1 to @w.m : tensor<4xf32>
    train.store %v1 to @w.v : tensor<4xf32>
    %u = train.load @u : tensor<4xf32>
    %b = train.load @u.buf : tensor<4xf32>
    %u1, %b1 = train.sgd_momentum %u, %g, %b with @mom : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
    train.store %u1 to @u : tensor<4xf32>
    train.store %b1 to @u.buf : tensor<4xf32>
    %s = train.load @s : tensor<4xf32>
    %s1 = train.sgd %s, %g with @sgd : tensor<4xf32>, tensor<4xf32>
    train.store %s1 to @s : tensor<4xf32>
    %a = train.load @a : tensor<4xf32>
    %am = train.load @a.m : tensor<4xf32>
    %av = train.load @a.v : tensor<4xf32>
    %a1, %am1, %av1 = train.adamw %a, %g, %am, %av step %t with @adamw : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
    train.store %a1 to @a : tensor<4xf32>
    train.store %am1 to @a.m : tensor<4xf32>
    train.store %av1 to @a.v : tensor<4xf32>
    return
  }
}

// Each update writes its results straight into the state it stores them to
// (the kernels update in place), so no copy follows it.
// CHECK-LABEL: zrt.program @update_hyperparameters
// CHECK:         %[[G:.+]] = zrt.buffer_ref @input0 : memref<4xf32>
// CHECK:         zrt.launch "train.step_index" on @compute outs(%[[T:.+]] : memref<i64>)
// CHECK-NEXT:    %[[W:.+]] = zrt.buffer_ref @w : memref<4xf32>
// CHECK-NEXT:    %[[M:.+]] = zrt.buffer_ref @w.m : memref<4xf32>
// CHECK-NEXT:    %[[V:.+]] = zrt.buffer_ref @w.v : memref<4xf32>
// CHECK-NEXT:    zrt.launch "train.adam" on @compute ins(%[[W]], %[[G]], %[[M]], %[[V]], %[[T]] : memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<4xf32>, memref<i64>) outs(%[[W]], %[[M]], %[[V]] : memref<4xf32>, memref<4xf32>, memref<4xf32>)
// CHECK-SAME:      params {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, lr = 1.000000e-03 : f64, weight_decay = 0.000000e+00 : f64}
// CHECK-NOT:     zrt.copy
// CHECK:         zrt.launch "train.sgd_momentum"
// CHECK-SAME:      params {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, lr = 5.000000e-01 : f64, momentum = 9.000000e-01 : f64, weight_decay = 0.000000e+00 : f64}
// CHECK:         zrt.launch "train.sgd"
// CHECK-SAME:      params {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, lr = 2.500000e-01 : f64, weight_decay = 1.000000e-02 : f64}
// CHECK:         zrt.launch "train.adamw"
// CHECK-SAME:      params {beta1 = 8.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, eps = 9.9999999999999995E-7 : f64, lr = 3.000000e-04 : f64, weight_decay = 1.000000e-01 : f64}
// CHECK-NOT:     zrt.launch
// CHECK:         }

// -----

// A reshape is a `zrt.view` of the same memory with the new shape: no
// kernel, no copy, whether it reshapes a persistent buffer or an arena
// value. A reshape of a reshape views the original buffer directly, and the
// intermediate view, which nothing reads, is dropped.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @w param : tensor<4x3xf32> init zeros

  func.func @reshape_is_a_view(%x: tensor<2x6xf32>) -> (tensor<12xf32>, tensor<3x4xf32>) attributes {train.step} {
    %w = train.load @w : tensor<4x3xf32>
    %flat = train.reshape %w : tensor<4x3xf32> -> tensor<12xf32>
    %y = train.relu %x : tensor<2x6xf32>
    %y1 = train.reshape %y : tensor<2x6xf32> -> tensor<12xf32>
    %y2 = train.reshape %y1 : tensor<12xf32> -> tensor<3x4xf32>
    return %flat, %y2 : tensor<12xf32>, tensor<3x4xf32>
  }
}

// CHECK-LABEL: zrt.program @reshape_is_a_view
// CHECK:         %[[X:.+]] = zrt.buffer_ref @input0 : memref<2x6xf32>
// CHECK-NEXT:    %[[W:.+]] = zrt.buffer_ref @w : memref<4x3xf32>
// CHECK-NEXT:    %[[FLAT:.+]] = zrt.view %[[W]][0] : memref<4x3xf32> to memref<12xf32>
// CHECK-NEXT:    %[[Y:.+]] = zrt.arena_view [0] : memref<2x6xf32>
// CHECK-NEXT:    zrt.launch "train.relu" on @compute ins(%[[X]] : memref<2x6xf32>) outs(%[[Y]] : memref<2x6xf32>)
// CHECK-NEXT:    %[[Y2:.+]] = zrt.view %[[Y]][0] : memref<2x6xf32> to memref<3x4xf32>
// CHECK-NEXT:    %[[OUT0:.+]] = zrt.buffer_ref @output0
// CHECK-NEXT:    zrt.copy on @compute %[[FLAT]] to %[[OUT0]] : memref<12xf32> to memref<12xf32>
// CHECK-NEXT:    %[[OUT1:.+]] = zrt.buffer_ref @output1
// CHECK-NEXT:    zrt.copy on @compute %[[Y2]] to %[[OUT1]] : memref<3x4xf32> to memref<3x4xf32>
// CHECK-NEXT:  }

// -----

// A splat constant is an arena buffer filled by the `zrt.fill` kernel, its
// value passed as an f64 param, whatever the element type.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  func.func @splat_constants() -> (tensor<f32>, tensor<2x3xbf16>, tensor<4xi32>) attributes {train.step} {
    %one = arith.constant dense<1.0> : tensor<f32>
    %half = arith.constant dense<-0.5> : tensor<2x3xbf16>
    %seven = arith.constant dense<7> : tensor<4xi32>
    return %one, %half, %seven : tensor<f32>, tensor<2x3xbf16>, tensor<4xi32>
  }
}

// CHECK-LABEL: zrt.program @splat_constants
// CHECK:         %[[ONE:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<f32>
// CHECK-NEXT:    zrt.launch "zrt.fill" on @compute outs(%[[ONE]] : memref<f32>) params {value = 1.000000e+00 : f64}
// CHECK-NEXT:    %[[HALF:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<2x3xbf16>
// CHECK-NEXT:    zrt.launch "zrt.fill" on @compute outs(%[[HALF]] : memref<2x3xbf16>) params {value = -5.000000e-01 : f64}
// CHECK-NEXT:    %[[SEVEN:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<4xi32>
// CHECK-NEXT:    zrt.launch "zrt.fill" on @compute outs(%[[SEVEN]] : memref<4xi32>) params {value = 7.000000e+00 : f64}
// CHECK:         zrt.copy on @compute %[[ONE]] to
// CHECK:         zrt.copy on @compute %[[HALF]] to
// CHECK:         zrt.copy on @compute %[[SEVEN]] to

// -----

// A load is the state's persistent buffer, unless the step stores to that
// state while the loaded value is still to be read: then the load copies
// the buffer into the arena first, and the readers see the copy. Here @a
// is stored before its value (through a reshape view) is returned, so it
// is copied; @b is stored after the last read of its value, and @c is
// stored to @d, never to itself: neither is copied. Each store is a copy
// into the state's buffer.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @a param : tensor<2x2xf32> init zeros
  train.param @b param : tensor<2x2xf32> init zeros
  train.param @c param : tensor<2x2xf32> init zeros
  train.param @d param : tensor<2x2xf32> init zeros

  func.func @load_copied_before_store(%x: tensor<2x2xf32>) -> (tensor<4xf32>, tensor<2x2xf32>) attributes {train.step} {
    %a = train.load @a : tensor<2x2xf32>
    %b = train.load @b : tensor<2x2xf32>
    %c = train.load @c : tensor<2x2xf32>
    %flat = train.reshape %a : tensor<2x2xf32> -> tensor<4xf32>
    train.store %x to @a : tensor<2x2xf32>
    %y = train.add %b, %c : tensor<2x2xf32>
    train.store %x to @b : tensor<2x2xf32>
    train.store %c to @d : tensor<2x2xf32>
    return %flat, %y : tensor<4xf32>, tensor<2x2xf32>
  }
}

// CHECK-LABEL: zrt.program @load_copied_before_store
// CHECK:         %[[X:.+]] = zrt.buffer_ref @input0 : memref<2x2xf32>
// CHECK-NEXT:    %[[A:.+]] = zrt.buffer_ref @a : memref<2x2xf32>
// CHECK-NEXT:    %[[A_COPY:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<2x2xf32>
// CHECK-NEXT:    zrt.copy on @compute %[[A]] to %[[A_COPY]] : memref<2x2xf32> to memref<2x2xf32>
// CHECK-NEXT:    %[[B:.+]] = zrt.buffer_ref @b : memref<2x2xf32>
// CHECK-NEXT:    %[[C:.+]] = zrt.buffer_ref @c : memref<2x2xf32>
// CHECK-NEXT:    %[[FLAT:.+]] = zrt.view %[[A_COPY]][0] : memref<2x2xf32> to memref<4xf32>
// CHECK-NEXT:    zrt.copy on @compute %[[X]] to %[[A]] : memref<2x2xf32> to memref<2x2xf32>
// CHECK-NEXT:    %[[Y:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<2x2xf32>
// CHECK-NEXT:    zrt.launch "train.add" on @compute ins(%[[B]], %[[C]] : memref<2x2xf32>, memref<2x2xf32>) outs(%[[Y]] : memref<2x2xf32>)
// CHECK-NEXT:    zrt.copy on @compute %[[X]] to %[[B]] : memref<2x2xf32> to memref<2x2xf32>
// CHECK-NEXT:    %[[D:.+]] = zrt.buffer_ref @d : memref<2x2xf32>
// CHECK-NEXT:    zrt.copy on @compute %[[C]] to %[[D]] : memref<2x2xf32> to memref<2x2xf32>
// CHECK-NEXT:    %[[OUT0:.+]] = zrt.buffer_ref @output0 : memref<4xf32>
// CHECK-NEXT:    zrt.copy on @compute %[[FLAT]] to %[[OUT0]] : memref<4xf32> to memref<4xf32>
// CHECK-NEXT:    %[[OUT1:.+]] = zrt.buffer_ref @output1 : memref<2x2xf32>
// CHECK-NEXT:    zrt.copy on @compute %[[Y]] to %[[OUT1]] : memref<2x2xf32> to memref<2x2xf32>
// CHECK-NEXT:  }

// -----

// Storing a state's own loaded value back is a no-op: no copy at all.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @p param : tensor<3xf32> init zeros

  func.func @store_back() attributes {train.step} {
    %p = train.load @p : tensor<3xf32>
    train.store %p to @p : tensor<3xf32>
    return
  }
}

// CHECK-LABEL: zrt.program @store_back
// CHECK:         zrt.step {
// CHECK-NEXT:    }

// -----

// Swapping two states takes one arena copy: @p's value is still to be
// stored into @q when @q's value is stored into @p, so @p is copied when
// loaded; @q is stored after its value's last read and is not copied.

module attributes {dist.placement = #dist.placement<cpu, [2]>} {
  train.param @p param : tensor<3xf32> init zeros
  train.param @q param : tensor<3xf32> init ones

  func.func @swap() attributes {train.step} {
    %p = train.load @p : tensor<3xf32>
    %q = train.load @q : tensor<3xf32>
    train.store %q to @p : tensor<3xf32>
    train.store %p to @q : tensor<3xf32>
    return
  }
}

// CHECK-LABEL: zrt.program @swap
// CHECK:         zrt.step {
// CHECK-NEXT:      %[[P:.+]] = zrt.buffer_ref @p : memref<3xf32>
// CHECK-NEXT:      %[[P_COPY:.+]] = zrt.arena_view [0] : memref<3xf32>
// CHECK-NEXT:      zrt.copy on @compute %[[P]] to %[[P_COPY]] : memref<3xf32> to memref<3xf32>
// CHECK-NEXT:      %[[Q:.+]] = zrt.buffer_ref @q : memref<3xf32>
// CHECK-NEXT:      zrt.copy on @compute %[[Q]] to %[[P]] : memref<3xf32> to memref<3xf32>
// CHECK-NEXT:      zrt.copy on @compute %[[P_COPY]] to %[[Q]] : memref<3xf32> to memref<3xf32>
// CHECK-NEXT:    }

// -----

// An update cannot write its parameter in place when the old value is still
// read after it: here the step returns the loaded parameter, so the new value
// goes through the arena and a copy.

module attributes {dist.placement = #dist.placement<cpu, [1]>} {
  train.param @w param : tensor<4xf32> init zeros
  train.optimizer @sgd sgd lr 1.0e-01

  func.func @update_not_in_place(%g: tensor<4xf32>) -> tensor<4xf32> attributes {train.step} {
    %w = train.load @w : tensor<4xf32>
    %w1 = train.sgd %w, %g with @sgd : tensor<4xf32>, tensor<4xf32>
    train.store %w1 to @w : tensor<4xf32>
    return %w : tensor<4xf32>
  }
}

// CHECK-LABEL: zrt.program @update_not_in_place
// CHECK:         %[[W:.+]] = zrt.buffer_ref @w : memref<4xf32>
// CHECK:         %[[OLD:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<4xf32>
// CHECK-NEXT:    zrt.copy on @compute %[[W]] to %[[OLD]]
// CHECK:         %[[NEW:.+]] = zrt.arena_view [{{[0-9]+}}] : memref<4xf32>
// CHECK-NEXT:    zrt.launch "train.sgd" on @compute ins(%[[OLD]], %{{.+}} : memref<4xf32>, memref<4xf32>) outs(%[[NEW]] : memref<4xf32>)
// CHECK-NEXT:    zrt.copy on @compute %[[NEW]] to %[[W]]
