// RUN: zero-opt %s | zero-opt | FileCheck %s

// Round-trip of the train dialect's persistent state (train.param), optimizer
// declarations, state access and update ops. Each case is a nested module with
// its own symbol table; all of them inherit the 4-rank placement of the
// enclosing module, which the verifier uses to derive the local shard types.

module attributes {dist.placement = #dist.placement<cpu, [4]>} {

  // Every role of a persistent tensor. Master copies, optimizer slots and
  // gradient accumulators name their parameter with `of` and share its
  // logical shape; masters and slots are f32 even when the parameter is bf16.
  // CHECK-LABEL: module @roles
  // CHECK-NEXT:    train.param @w param : tensor<10x6xbf16>
  // CHECK-NEXT:    train.param @emb frozen : tensor<7x3xbf16>
  // CHECK-NEXT:    train.param @w.master master of @w : tensor<10x6xf32>
  // CHECK-NEXT:    train.param @w.m slot of @w : tensor<10x6xf32>
  // CHECK-NEXT:    train.param @w.acc grad_accum of @w : tensor<10x6xbf16>
  // CHECK-NEXT:  }
  module @roles {
    train.param @w param : tensor<10x6xbf16>
    train.param @emb frozen : tensor<7x3xbf16>
    train.param @w.master master of @w : tensor<10x6xf32>
    train.param @w.m slot of @w : tensor<10x6xf32>
    train.param @w.acc grad_accum of @w : tensor<10x6xbf16>
  }

  // A parameter group: a trainable parameter names the optimizer that
  // updates it with `with`, after its initializer.
  // CHECK-LABEL: module @parameter_group
  // CHECK-NEXT:    train.param @w param : tensor<8x4xf32> init normal(0.0, 0.02)
  // CHECK-NEXT:    train.param @b param : tensor<4xf32> init zeros with @adamw.no_decay
  // CHECK-NEXT:    train.param @g param : tensor<4xf32> with @adamw.no_decay
  module @parameter_group {
    train.param @w param : tensor<8x4xf32> init normal(0.0, 0.02)
    train.param @b param : tensor<4xf32> init zeros with @adamw.no_decay
    train.param @g param : tensor<4xf32> with @adamw.no_decay
    train.optimizer @adamw adamw lr 3.0e-04 betas(0.9, 0.95) eps 1.0e-08 weight_decay 0.1
    train.optimizer @adamw.no_decay adamw lr 3.0e-04 betas(0.9, 0.95) eps 1.0e-08 weight_decay 0.0
  }

  // Every initializer; arguments print in MLIR's float syntax.
  // CHECK-LABEL: module @initializers
  // CHECK-NEXT:    train.param @zeros param : tensor<16xf32> init zeros
  // CHECK-NEXT:    train.param @ones param : tensor<16xf32> init ones
  // CHECK-NEXT:    train.param @constant param : tensor<16xf32> init constant(0.25)
  // CHECK-NEXT:    train.param @normal param : tensor<16x16xf32> init normal(0.0, 0.02)
  // CHECK-NEXT:    train.param @uniform frozen : tensor<16x16xf32> init uniform(-0.125, 0.125)
  // CHECK-NEXT:    train.param @negative_constant param : tensor<f32> init constant(-3.0)
  // CHECK-NEXT:    train.param @slot slot of @normal : tensor<16x16xf32> init zeros
  // CHECK-NEXT:    train.param @accum grad_accum of @normal : tensor<16x16xf32> init zeros
  // CHECK-NEXT:  }
  module @initializers {
    train.param @zeros param : tensor<16xf32> init zeros
    train.param @ones param : tensor<16xf32> init ones
    train.param @constant param : tensor<16xf32> init constant(0.25)
    train.param @normal param : tensor<16x16xf32> init normal(0.0, 0.02)
    train.param @uniform frozen : tensor<16x16xf32> init uniform(-0.125, 0.125)
    train.param @negative_constant param : tensor<f32> init constant(-3.0)
    train.param @slot slot of @normal : tensor<16x16xf32> init zeros
    train.param @accum grad_accum of @normal : tensor<16x16xf32> init zeros
  }

  // Flat layout: flattened and padded to a multiple of 4 ranks, each rank
  // holds ceil(numel / 4) elements. 8x16 = 128 splits evenly (32 each);
  // 7x3 = 21 takes 3 padding elements (6 each); a scalar pads to 4 (1 each).
  // CHECK-LABEL: module @flat_layout
  // CHECK-NEXT:    train.param @even param : tensor<8x16xf32> sharded flat over 0 -> tensor<32xf32> init normal(0.0, 1.0)
  // CHECK-NEXT:    train.param @padded param : tensor<7x3xbf16> sharded flat over 0 -> tensor<6xbf16> init ones
  // CHECK-NEXT:    train.param @scalar param : tensor<f32> sharded flat over 0 -> tensor<1xf32> init constant(1.0)
  // CHECK-NEXT:    train.param @padded.master master of @padded : tensor<7x3xf32> sharded flat over 0 -> tensor<6xf32>
  // CHECK-NEXT:    train.param @padded.m slot of @padded : tensor<7x3xf32> sharded flat over 0 -> tensor<6xf32> init zeros
  // CHECK-NEXT:    train.param @padded.acc grad_accum of @padded : tensor<7x3xbf16> sharded flat over 0 -> tensor<6xbf16> init zeros
  // CHECK-NEXT:  }
  module @flat_layout {
    train.param @even param : tensor<8x16xf32> sharded flat over 0 -> tensor<32xf32> init normal(0.0, 1.0)
    train.param @padded param : tensor<7x3xbf16> sharded flat over 0 -> tensor<6xbf16> init ones
    train.param @scalar param : tensor<f32> sharded flat over 0 -> tensor<1xf32> init constant(1.0)
    train.param @padded.master master of @padded : tensor<7x3xf32> sharded flat over 0 -> tensor<6xf32>
    train.param @padded.m slot of @padded : tensor<7x3xf32> sharded flat over 0 -> tensor<6xf32> init zeros
    train.param @padded.acc grad_accum of @padded : tensor<7x3xbf16> sharded flat over 0 -> tensor<6xbf16> init zeros
  }

  // Dim-0 layout: dimension 0 is split with padding, each rank holds
  // ceil(d0 / 4) rows and the other dimensions whole. 8 rows split evenly;
  // 10 rows take 2 padding rows (3 each); 1-D tensors split their elements.
  // CHECK-LABEL: module @dim0_layout
  // CHECK-NEXT:    train.param @even param : tensor<8x16xf32> sharded dim0 over 0 -> tensor<2x16xf32> init zeros
  // CHECK-NEXT:    train.param @padded param : tensor<10x6xf16> sharded dim0 over 0 -> tensor<3x6xf16> init uniform(-1.0, 1.0)
  // CHECK-NEXT:    train.param @vector param : tensor<10xf32> sharded dim0 over 0 -> tensor<3xf32> init zeros
  // CHECK-NEXT:    train.param @frozen frozen : tensor<5x2x3xf32> sharded dim0 over 0 -> tensor<2x2x3xf32> init ones
  // CHECK-NEXT:    train.param @padded.master master of @padded : tensor<10x6xf32> sharded dim0 over 0 -> tensor<3x6xf32>
  // CHECK-NEXT:    train.param @padded.v slot of @padded : tensor<10x6xf32> sharded dim0 over 0 -> tensor<3x6xf32> init zeros
  // CHECK-NEXT:  }
  module @dim0_layout {
    train.param @even param : tensor<8x16xf32> sharded dim0 over 0 -> tensor<2x16xf32> init zeros
    train.param @padded param : tensor<10x6xf16> sharded dim0 over 0 -> tensor<3x6xf16> init uniform(-1.0, 1.0)
    train.param @vector param : tensor<10xf32> sharded dim0 over 0 -> tensor<3xf32> init zeros
    train.param @frozen frozen : tensor<5x2x3xf32> sharded dim0 over 0 -> tensor<2x2x3xf32> init ones
    train.param @padded.master master of @padded : tensor<10x6xf32> sharded dim0 over 0 -> tensor<3x6xf32>
    train.param @padded.v slot of @padded : tensor<10x6xf32> sharded dim0 over 0 -> tensor<3x6xf32> init zeros
  }

  // Sharding over the second axis of a 2x3 placement: the nearest enclosing
  // dist.placement wins, so groups have 2 ranks over axis 0 and 3 over axis 1,
  // and 6 over both (`over 1, 0`, axis 1 major).
  // CHECK-LABEL: module @shard_axis attributes {dist.placement = #dist.placement<cpu, [2, 3]>}
  // CHECK-NEXT:    train.param @w param : tensor<7x5xf32> sharded dim0 over 1 -> tensor<3x5xf32> init zeros
  // CHECK-NEXT:    train.param @w.m slot of @w : tensor<7x5xf32> sharded flat over 1 -> tensor<12xf32> init zeros
  // CHECK-NEXT:    train.param @w.v slot of @w : tensor<7x5xf32> sharded flat over 0 -> tensor<18xf32> init zeros
  // CHECK-NEXT:    train.param @w.a slot of @w : tensor<7x5xf32> sharded flat over 1, 0 -> tensor<6xf32> init zeros
  // CHECK-NEXT:  }
  module @shard_axis attributes {dist.placement = #dist.placement<cpu, [2, 3]>} {
    train.param @w param : tensor<7x5xf32> sharded dim0 over 1 -> tensor<3x5xf32> init zeros
    train.param @w.m slot of @w : tensor<7x5xf32> sharded flat over 1 -> tensor<12xf32> init zeros
    train.param @w.v slot of @w : tensor<7x5xf32> sharded flat over 0 -> tensor<18xf32> init zeros
    train.param @w.a slot of @w : tensor<7x5xf32> sharded flat over 1, 0 -> tensor<6xf32> init zeros
  }

  // Every optimizer kind. sgd and momentum take no betas or eps; adam and
  // adamw default them (only the given ones print); every kind accepts
  // weight_decay.
  // CHECK-LABEL: module @optimizers
  // CHECK-NEXT:    train.optimizer @sgd sgd lr 1.000000e-01
  // CHECK-NEXT:    train.optimizer @sgd_l2 sgd lr 1.000000e-01 weight_decay 1.000000e-04
  // CHECK-NEXT:    train.optimizer @momentum momentum lr 5.000000e-02 momentum 9.000000e-01
  // CHECK-NEXT:    train.optimizer @nesterovless momentum lr 5.000000e-02 momentum 0.000000e+00 weight_decay 5.000000e-04
  // CHECK-NEXT:    train.optimizer @adam adam lr 1.000000e-03
  // CHECK-NEXT:    train.optimizer @adam_full adam lr 1.000000e-03 betas(9.000000e-01, 0.99899999999999999) eps 1.000000e-08 weight_decay 0.000000e+00
  // CHECK-NEXT:    train.optimizer @adamw adamw lr 3.000000e-04 betas(9.000000e-01, 0.94999999999999996) eps 1.000000e-08 weight_decay 1.000000e-01
  // CHECK-NEXT:    train.optimizer @adamw_eps adamw lr 3.000000e-04 eps 1.000000e-05
  // CHECK-NEXT:  }
  module @optimizers {
    train.optimizer @sgd sgd lr 0.1
    train.optimizer @sgd_l2 sgd lr 0.1 weight_decay 1.0e-4
    train.optimizer @momentum momentum lr 0.05 momentum 0.9
    train.optimizer @nesterovless momentum lr 0.05 momentum 0.0 weight_decay 5.0e-4
    train.optimizer @adam adam lr 1.0e-3
    train.optimizer @adam_full adam lr 1.0e-3 betas(0.9, 0.999) eps 1.0e-8 weight_decay 0.0
    train.optimizer @adamw adamw lr 3.0e-4 betas(0.9, 0.95) eps 1.0e-8 weight_decay 0.1
    train.optimizer @adamw_eps adamw lr 3.0e-4 eps 1.0e-5
  }

  // Learning-rate schedules. `lr` is the peak rate; `warmup` ramps to it
  // from 0 (any kind), `linear` and `cosine` then decay to `min_lr` at step
  // `total`. Only what was written prints: warmup and min_lr default to 0,
  // and an optimizer without `schedule` prints exactly as above.
  // CHECK-LABEL: module @schedules
  // CHECK-NEXT:    train.optimizer @cosine adamw lr 3.000000e-04 betas(9.000000e-01, 0.94999999999999996) eps 1.000000e-08 weight_decay 1.000000e-01 schedule cosine warmup 100 total 10000 min_lr 3.000000e-05
  // CHECK-NEXT:    train.optimizer @linear sgd lr 1.000000e-01 schedule linear total 500
  // CHECK-NEXT:    train.optimizer @warmup_only momentum lr 5.000000e-02 momentum 9.000000e-01 schedule constant warmup 10
  // CHECK-NEXT:    train.optimizer @constant adam lr 1.000000e-03 schedule constant
  // CHECK-NEXT:  }
  module @schedules {
    train.optimizer @cosine adamw lr 3.0e-4 betas(0.9, 0.95) eps 1.0e-8 weight_decay 0.1 schedule cosine warmup 100 total 10000 min_lr 3.0e-5
    train.optimizer @linear sgd lr 0.1 schedule linear total 500
    train.optimizer @warmup_only momentum lr 0.05 momentum 0.9 schedule constant warmup 10
    train.optimizer @constant adam lr 1.0e-3 schedule constant
  }

  // train.load and train.store use the local type: the whole tensor when
  // replicated, this rank's shard when sharded. Loads name their result
  // after the state they read.
  // CHECK-LABEL: module @load_store
  // CHECK:       func.func @access(%[[NEW:.*]]: tensor<6xf32>)
  // CHECK-NEXT:    %fc1.w = train.load @fc1.w : tensor<7x3xf32>
  // CHECK-NEXT:    %fc1.w.m = train.load @fc1.w.m : tensor<6xf32>
  // CHECK-NEXT:    %fc1.b = train.load @fc1.b : tensor<3x3xbf16>
  // CHECK-NEXT:    train.store %[[NEW]] to @fc1.w.m : tensor<6xf32>
  // CHECK-NEXT:    train.store %fc1.b to @fc1.b : tensor<3x3xbf16>
  // CHECK-NEXT:    return %fc1.w : tensor<7x3xf32>
  module @load_store {
    train.param @fc1.w param : tensor<7x3xf32> init normal(0.0, 0.02)
    train.param @fc1.w.m slot of @fc1.w : tensor<7x3xf32> sharded flat over 0 -> tensor<6xf32> init zeros
    train.param @fc1.b param : tensor<9x3xbf16> sharded dim0 over 0 -> tensor<3x3xbf16> init zeros
    func.func @access(%new: tensor<6xf32>) -> tensor<7x3xf32> {
      %w = train.load @fc1.w : tensor<7x3xf32>
      %m = train.load @fc1.w.m : tensor<6xf32>
      %b = train.load @fc1.b : tensor<3x3xbf16>
      train.store %new to @fc1.w.m : tensor<6xf32>
      train.store %b to @fc1.b : tensor<3x3xbf16>
      return %w : tensor<7x3xf32>
    }
  }

  // The high-level update: the gradient has the parameter's logical shape,
  // even when the parameter is stored sharded, and may be 16-bit.
  // CHECK-LABEL: module @apply_gradient
  // CHECK:       func.func @step(%[[DW:.*]]: tensor<784x128xf32>, %[[DB:.*]]: tensor<10xbf16>) attributes {train.step}
  // CHECK-NEXT:    train.apply_gradient %[[DW]] to @w with @adam : tensor<784x128xf32>
  // CHECK-NEXT:    train.apply_gradient %[[DB]] to @b with @sgd : tensor<10xbf16>
  // CHECK-NEXT:    return
  module @apply_gradient {
    train.param @w param : tensor<784x128xf32> init normal(0.0, 0.036)
    train.param @b param : tensor<10xbf16> sharded flat over 0 -> tensor<3xbf16> init zeros
    train.optimizer @adam adam lr 1.0e-3
    train.optimizer @sgd sgd lr 0.1
    func.func @step(%dw: tensor<784x128xf32>, %db: tensor<10xbf16>) attributes {train.step} {
      train.apply_gradient %dw to @w with @adam : tensor<784x128xf32>
      train.apply_gradient %db to @b with @sgd : tensor<10xbf16>
      return
    }
  }

  // The 1-based optimizer step, named %step.
  // CHECK-LABEL: module @step_index
  // CHECK:         %step = train.step_index : tensor<i64>
  // CHECK-NEXT:    return %step : tensor<i64>
  module @step_index {
    func.func @step() -> tensor<i64> {
      %t = train.step_index : tensor<i64>
      return %t : tensor<i64>
    }
  }

  // train.sgd on a whole replicated tensor and on a flat shard; update
  // results are named %updated.
  // CHECK-LABEL: module @sgd
  // CHECK:       func.func @update(%[[G:.*]]: tensor<7x3xf32>, %[[GS:.*]]: tensor<6xbf16>)
  // CHECK-NEXT:    %w = train.load @w : tensor<7x3xf32>
  // CHECK-NEXT:    %updated = train.sgd %w, %[[G]] with @sgd : tensor<7x3xf32>, tensor<7x3xf32>
  // CHECK-NEXT:    train.store %updated to @w : tensor<7x3xf32>
  // CHECK-NEXT:    %w.master = train.load @w.master : tensor<6xf32>
  // CHECK-NEXT:    %[[U:.*]] = train.sgd %w.master, %[[GS]] with @sgd : tensor<6xf32>, tensor<6xbf16>
  // CHECK-NEXT:    train.store %[[U]] to @w.master : tensor<6xf32>
  module @sgd {
    train.param @w param : tensor<7x3xf32> init zeros
    train.param @w.master master of @w : tensor<7x3xf32> sharded flat over 0 -> tensor<6xf32>
    train.optimizer @sgd sgd lr 0.1 weight_decay 0.01
    func.func @update(%g: tensor<7x3xf32>, %gs: tensor<6xbf16>) {
      %w = train.load @w : tensor<7x3xf32>
      %w1 = train.sgd %w, %g with @sgd : tensor<7x3xf32>, tensor<7x3xf32>
      train.store %w1 to @w : tensor<7x3xf32>
      %ws = train.load @w.master : tensor<6xf32>
      %ws1 = train.sgd %ws, %gs with @sgd : tensor<6xf32>, tensor<6xbf16>
      train.store %ws1 to @w.master : tensor<6xf32>
      return
    }
  }

  // train.sgd_momentum returns the new parameter and momentum buffer.
  // CHECK-LABEL: module @sgd_momentum
  // CHECK:       func.func @update(%[[G:.*]]: tensor<128xf32>, %[[GH:.*]]: tensor<128xf16>)
  // CHECK-NEXT:    %w = train.load @w : tensor<128xf32>
  // CHECK-NEXT:    %w.buf = train.load @w.buf : tensor<128xf32>
  // CHECK-NEXT:    %updated, %updated_0 = train.sgd_momentum %w, %[[G]], %w.buf with @momentum : tensor<128xf32>, tensor<128xf32>, tensor<128xf32>
  // CHECK-NEXT:    %[[P:.*]], %[[B:.*]] = train.sgd_momentum %updated, %[[GH]], %updated_0 with @momentum : tensor<128xf32>, tensor<128xf16>, tensor<128xf32>
  // CHECK-NEXT:    train.store %[[P]] to @w : tensor<128xf32>
  // CHECK-NEXT:    train.store %[[B]] to @w.buf : tensor<128xf32>
  module @sgd_momentum {
    train.param @w param : tensor<128xf32> init zeros
    train.param @w.buf slot of @w : tensor<128xf32> init zeros
    train.optimizer @momentum momentum lr 0.01 momentum 0.9
    func.func @update(%g: tensor<128xf32>, %gh: tensor<128xf16>) {
      %w = train.load @w : tensor<128xf32>
      %buf = train.load @w.buf : tensor<128xf32>
      %w1, %buf1 = train.sgd_momentum %w, %g, %buf with @momentum : tensor<128xf32>, tensor<128xf32>, tensor<128xf32>
      %w2, %buf2 = train.sgd_momentum %w1, %gh, %buf1 with @momentum : tensor<128xf32>, tensor<128xf16>, tensor<128xf32>
      train.store %w2 to @w : tensor<128xf32>
      train.store %buf2 to @w.buf : tensor<128xf32>
      return
    }
  }

  // train.adam on the f32 state of one rank (ZeRO-1 style: master copy and
  // moments flat-sharded), once with an f32 and once with a bf16 gradient.
  // CHECK-LABEL: module @adam
  // CHECK:       func.func @update(%[[G:.*]]: tensor<6xf32>, %[[GB:.*]]: tensor<6xbf16>)
  // CHECK-NEXT:    %step = train.step_index : tensor<i64>
  // CHECK-NEXT:    %w.master = train.load @w.master : tensor<6xf32>
  // CHECK-NEXT:    %w.m = train.load @w.m : tensor<6xf32>
  // CHECK-NEXT:    %w.v = train.load @w.v : tensor<6xf32>
  // CHECK-NEXT:    %updated, %updated_0, %updated_1 = train.adam %w.master, %[[G]], %w.m, %w.v step %step with @adam : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>
  // CHECK-NEXT:    %[[P:.*]], %[[M:.*]], %[[V:.*]] = train.adam %updated, %[[GB]], %updated_0, %updated_1 step %step with @adam : tensor<6xf32>, tensor<6xbf16>, tensor<6xf32>
  // CHECK-NEXT:    train.store %[[P]] to @w.master : tensor<6xf32>
  // CHECK-NEXT:    train.store %[[M]] to @w.m : tensor<6xf32>
  // CHECK-NEXT:    train.store %[[V]] to @w.v : tensor<6xf32>
  module @adam {
    train.param @w param : tensor<7x3xbf16> init normal(0.0, 0.02)
    train.param @w.master master of @w : tensor<7x3xf32> sharded flat over 0 -> tensor<6xf32>
    train.param @w.m slot of @w : tensor<7x3xf32> sharded flat over 0 -> tensor<6xf32> init zeros
    train.param @w.v slot of @w : tensor<7x3xf32> sharded flat over 0 -> tensor<6xf32> init zeros
    train.optimizer @adam adam lr 1.0e-3 betas(0.9, 0.999) eps 1.0e-8 weight_decay 0.01
    func.func @update(%g: tensor<6xf32>, %gb: tensor<6xbf16>) {
      %t = train.step_index : tensor<i64>
      %w = train.load @w.master : tensor<6xf32>
      %m = train.load @w.m : tensor<6xf32>
      %v = train.load @w.v : tensor<6xf32>
      %w1, %m1, %v1 = train.adam %w, %g, %m, %v step %t with @adam : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>
      %w2, %m2, %v2 = train.adam %w1, %gb, %m1, %v1 step %t with @adam : tensor<6xf32>, tensor<6xbf16>, tensor<6xf32>
      train.store %w2 to @w.master : tensor<6xf32>
      train.store %m2 to @w.m : tensor<6xf32>
      train.store %v2 to @w.v : tensor<6xf32>
      return
    }
  }

  // train.adamw with a bf16 gradient, f32 master copy and f32 moments
  // (dim-0 sharded, FSDP style), and on a 16-bit parameter directly.
  // CHECK-LABEL: module @adamw
  // CHECK:       func.func @update(%[[G:.*]]: tensor<3x6xbf16>, %[[P16:.*]]: tensor<3x6xf16>, %[[G16:.*]]: tensor<3x6xf16>)
  // CHECK-NEXT:    %step = train.step_index : tensor<i64>
  // CHECK-NEXT:    %w.master = train.load @w.master : tensor<3x6xf32>
  // CHECK-NEXT:    %w.m = train.load @w.m : tensor<3x6xf32>
  // CHECK-NEXT:    %w.v = train.load @w.v : tensor<3x6xf32>
  // CHECK-NEXT:    %updated, %updated_0, %updated_1 = train.adamw %w.master, %[[G]], %w.m, %w.v step %step with @adamw : tensor<3x6xf32>, tensor<3x6xbf16>, tensor<3x6xf32>
  // CHECK-NEXT:    %{{.*}}, %{{.*}}, %{{.*}} = train.adamw %[[P16]], %[[G16]], %updated_0, %updated_1 step %step with @adamw : tensor<3x6xf16>, tensor<3x6xf16>, tensor<3x6xf32>
  // CHECK-NEXT:    train.store %updated to @w.master : tensor<3x6xf32>
  module @adamw {
    train.param @w param : tensor<10x6xbf16> sharded dim0 over 0 -> tensor<3x6xbf16> init normal(0.0, 0.02)
    train.param @w.master master of @w : tensor<10x6xf32> sharded dim0 over 0 -> tensor<3x6xf32>
    train.param @w.m slot of @w : tensor<10x6xf32> sharded dim0 over 0 -> tensor<3x6xf32> init zeros
    train.param @w.v slot of @w : tensor<10x6xf32> sharded dim0 over 0 -> tensor<3x6xf32> init zeros
    train.optimizer @adamw adamw lr 3.0e-4 betas(0.9, 0.95) eps 1.0e-8 weight_decay 0.1
    func.func @update(%g: tensor<3x6xbf16>, %p16: tensor<3x6xf16>, %g16: tensor<3x6xf16>) {
      %t = train.step_index : tensor<i64>
      %w = train.load @w.master : tensor<3x6xf32>
      %m = train.load @w.m : tensor<3x6xf32>
      %v = train.load @w.v : tensor<3x6xf32>
      %w1, %m1, %v1 = train.adamw %w, %g, %m, %v step %t with @adamw : tensor<3x6xf32>, tensor<3x6xbf16>, tensor<3x6xf32>
      %h1, %hm, %hv = train.adamw %p16, %g16, %m1, %v1 step %t with @adamw : tensor<3x6xf16>, tensor<3x6xf16>, tensor<3x6xf32>
      train.store %w1 to @w.master : tensor<3x6xf32>
      return
    }
  }

  // Tensor parallelism: `split dim 1 over 0` holds a quarter of dimension
  // 1 on each of the 4 ranks of axis 0 (exactly, no padding); its slot is
  // split as it is, and the step reads and updates the rank's split.
  // CHECK-LABEL: module @split
  // CHECK:         train.param @w param : tensor<8x16xf32> split dim 1 over 0 init normal(0.0, 0.02)
  // CHECK-NEXT:    train.param @w.m slot of @w : tensor<8x16xf32> split dim 1 over 0 init zeros
  // CHECK:         train.load @w : tensor<8x4xf32>
  // CHECK:         train.apply_gradient %{{.*}} to @w with @sgd : tensor<8x4xf32>
  module @split {
    train.param @w param : tensor<8x16xf32> split dim 1 over 0 init normal(0.0, 0.02)
    train.param @w.m slot of @w : tensor<8x16xf32> split dim 1 over 0 init zeros
    train.optimizer @sgd sgd lr 1.0e-01
    func.func @step(%g: tensor<8x4xf32>) -> tensor<8x4xf32> attributes {train.step} {
      %w = train.load @w : tensor<8x4xf32>
      train.apply_gradient %g to @w with @sgd : tensor<8x4xf32>
      return %w : tensor<8x4xf32>
    }
  }

  // train.minimize names the scalar loss of a forward-only step.
  // CHECK-LABEL: module @minimize
  // CHECK: train.minimize %{{.*}} : tensor<f32>
  module @minimize {
    func.func @step(%loss: tensor<f32>) -> tensor<f32> attributes {train.step} {
      train.minimize %loss : tensor<f32>
      return %loss : tensor<f32>
    }
  }
}
