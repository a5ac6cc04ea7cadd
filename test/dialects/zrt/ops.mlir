// RUN: zero-opt %s | zero-opt | FileCheck %s

// Round-trip of lowered zrt programs. The first is one ZeRO-2 style step of a
// linear layer on 4 ranks and uses every zrt op; the others cover a 2-D
// placement with 16-bit buffers and the smallest valid program.

// A whole step: persistent buffers of every role, transient values in the
// arena, kernel launches, copies into and out of a gradient bucket, every
// collective, and events ordering the compute and communication streams.
// The step's zrt.yield terminator is implicit.
// CHECK-LABEL: zrt.program @linear_zero2 placement #dist.placement<cpu, [4]> arena 1024 align 64 {
// CHECK-NEXT:    zrt.stream @compute
// CHECK-NEXT:    zrt.stream @comm
// CHECK-NEXT:    zrt.event @grads_ready
// CHECK-NEXT:    zrt.event @grads_reduced
// CHECK-NEXT:    zrt.buffer @x input : memref<4x8xf32>
// CHECK-NEXT:    zrt.buffer @labels input : memref<4xi32>
// CHECK-NEXT:    zrt.buffer @loss output : memref<f32>
// CHECK-NEXT:    zrt.buffer @w param : memref<8x6xf32>
// CHECK-NEXT:    zrt.buffer @emb frozen : memref<10x8xbf16>
// CHECK-NEXT:    zrt.buffer @w.master master : memref<12xf32>
// CHECK-NEXT:    zrt.buffer @w.m slot : memref<12xf32>
// CHECK-NEXT:    zrt.buffer @w.v slot : memref<12xf32>
// CHECK-NEXT:    zrt.buffer @w.acc grad_accum : memref<8x6xf32>
// CHECK-NEXT:    zrt.step {
// Buffer references are named after their buffer, arena views %t.
// CHECK-NEXT:      %x = zrt.buffer_ref @x : memref<4x8xf32>
// CHECK-NEXT:      %w = zrt.buffer_ref @w : memref<8x6xf32>
// CHECK-NEXT:      %t = zrt.arena_view [0] : memref<4x6xf32>
// CHECK-NEXT:      zrt.launch "train.matmul" on @compute ins(%x, %w : memref<4x8xf32>, memref<8x6xf32>) outs(%t : memref<4x6xf32>)
// CHECK-NEXT:      %[[DW:.*]] = zrt.arena_view [128] : memref<8x6xf32>
// CHECK-NEXT:      zrt.launch "train.matmul" on @compute ins(%x, %t : memref<4x8xf32>, memref<4x6xf32>) outs(%[[DW]] : memref<8x6xf32>) params {transpose_a}
// CHECK-NEXT:      %w.acc = zrt.buffer_ref @w.acc : memref<8x6xf32>
// CHECK-NEXT:      zrt.launch "train.add" on @compute ins(%w.acc, %[[DW]] : memref<8x6xf32>, memref<8x6xf32>) outs(%w.acc : memref<8x6xf32>)
// CHECK-NEXT:      %[[BUCKET:.*]] = zrt.arena_view [384] : memref<48xf32>
// CHECK-NEXT:      zrt.copy on @compute %w.acc to %[[BUCKET]] : memref<8x6xf32> to memref<48xf32>
// CHECK-NEXT:      zrt.record @grads_ready on @compute
// CHECK-NEXT:      zrt.wait @grads_ready on @comm
// CHECK-NEXT:      %[[SHARD:.*]] = zrt.arena_view [640] : memref<12xf32>
// CHECK-NEXT:      zrt.reduce_scatter mean axis 0 on @comm %[[BUCKET]] to %[[SHARD]] : memref<48xf32> to memref<12xf32>
// CHECK-NEXT:      zrt.record @grads_reduced on @comm
// CHECK-NEXT:      zrt.wait @grads_reduced on @compute
// CHECK-NEXT:      %w.master = zrt.buffer_ref @w.master : memref<12xf32>
// CHECK-NEXT:      %w.m = zrt.buffer_ref @w.m : memref<12xf32>
// CHECK-NEXT:      %w.v = zrt.buffer_ref @w.v : memref<12xf32>
// CHECK-NEXT:      zrt.launch "train.adam" on @compute ins(%w.master, %[[SHARD]], %w.m, %w.v : memref<12xf32>, memref<12xf32>, memref<12xf32>, memref<12xf32>) outs(%w.master, %w.m, %w.v : memref<12xf32>, memref<12xf32>, memref<12xf32>) params {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, lr = 1.000000e-03 : f64}
// CHECK-NEXT:      zrt.launch "zero.fill" on @compute outs(%w.acc : memref<8x6xf32>) params {value = 0.000000e+00 : f64}
// CHECK-NEXT:      zrt.all_gather axis 0 on @comm %w.master to %[[BUCKET]] : memref<12xf32> to memref<48xf32>
// CHECK-NEXT:      zrt.copy on @comm %[[BUCKET]] to %w : memref<48xf32> to memref<8x6xf32>
// CHECK-NEXT:      %loss = zrt.buffer_ref @loss : memref<f32>
// CHECK-NEXT:      zrt.all_reduce mean axis 0 on @comm %loss to %loss : memref<f32> to memref<f32>
// CHECK-NEXT:      zrt.all_reduce sum axis 0 on @comm %[[DW]] to %w.acc : memref<8x6xf32> to memref<8x6xf32>
// CHECK-NEXT:      zrt.all_reduce max axis 0 on @comm %w.master to %w.master : memref<12xf32> to memref<12xf32>
// CHECK-NEXT:      %emb = zrt.buffer_ref @emb : memref<10x8xbf16>
// CHECK-NEXT:      zrt.broadcast root 0 axis 0 on @comm %emb to %emb : memref<10x8xbf16> to memref<10x8xbf16>
// CHECK-NEXT:      %[[A2A:.*]] = zrt.arena_view [704] : memref<8x6xf32>
// CHECK-NEXT:      zrt.all_to_all axis 0 on @comm %[[DW]] to %[[A2A]] : memref<8x6xf32> to memref<8x6xf32>
// CHECK-NEXT:      %labels = zrt.buffer_ref @labels : memref<4xi32>
// CHECK-NEXT:      zrt.launch "train.softmax_cross_entropy" on @compute ins(%t, %labels : memref<4x6xf32>, memref<4xi32>) outs(%loss : memref<f32>)
// CHECK-NEXT:    }
// CHECK-NEXT:  }
zrt.program @linear_zero2 placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.stream @compute
  zrt.stream @comm
  zrt.event @grads_ready
  zrt.event @grads_reduced
  zrt.buffer @x input : memref<4x8xf32>
  zrt.buffer @labels input : memref<4xi32>
  zrt.buffer @loss output : memref<f32>
  zrt.buffer @w param : memref<8x6xf32>
  zrt.buffer @emb frozen : memref<10x8xbf16>
  zrt.buffer @w.master master : memref<12xf32>
  zrt.buffer @w.m slot : memref<12xf32>
  zrt.buffer @w.v slot : memref<12xf32>
  zrt.buffer @w.acc grad_accum : memref<8x6xf32>
  zrt.step {
    // Forward: h = x w, into the arena.
    %x = zrt.buffer_ref @x : memref<4x8xf32>
    %w = zrt.buffer_ref @w : memref<8x6xf32>
    %h = zrt.arena_view [0] : memref<4x6xf32>
    zrt.launch "train.matmul" on @compute ins(%x, %w : memref<4x8xf32>, memref<8x6xf32>) outs(%h : memref<4x6xf32>)
    // Backward and accumulation.
    %dw = zrt.arena_view [128] : memref<8x6xf32>
    zrt.launch "train.matmul" on @compute ins(%x, %h : memref<4x8xf32>, memref<4x6xf32>) outs(%dw : memref<8x6xf32>) params {transpose_a}
    %acc = zrt.buffer_ref @w.acc : memref<8x6xf32>
    zrt.launch "train.add" on @compute ins(%acc, %dw : memref<8x6xf32>, memref<8x6xf32>) outs(%acc : memref<8x6xf32>)
    // Pack the gradient into a padded bucket and reduce-scatter it.
    %bucket = zrt.arena_view [384] : memref<48xf32>
    zrt.copy on @compute %acc to %bucket : memref<8x6xf32> to memref<48xf32>
    zrt.record @grads_ready on @compute
    zrt.wait @grads_ready on @comm
    %shard = zrt.arena_view [640] : memref<12xf32>
    zrt.reduce_scatter mean axis 0 on @comm %bucket to %shard : memref<48xf32> to memref<12xf32>
    zrt.record @grads_reduced on @comm
    zrt.wait @grads_reduced on @compute
    // Update this rank's shard, then gather the parameter back.
    %master = zrt.buffer_ref @w.master : memref<12xf32>
    %m = zrt.buffer_ref @w.m : memref<12xf32>
    %v = zrt.buffer_ref @w.v : memref<12xf32>
    zrt.launch "train.adam" on @compute ins(%master, %shard, %m, %v : memref<12xf32>, memref<12xf32>, memref<12xf32>, memref<12xf32>) outs(%master, %m, %v : memref<12xf32>, memref<12xf32>, memref<12xf32>) params {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, lr = 1.0e-3 : f64}
    zrt.launch "zero.fill" on @compute outs(%acc : memref<8x6xf32>) params {value = 0.0 : f64}
    zrt.all_gather axis 0 on @comm %master to %bucket : memref<12xf32> to memref<48xf32>
    zrt.copy on @comm %bucket to %w : memref<48xf32> to memref<8x6xf32>
    // The remaining collectives: all-reduce with every reduction, broadcast
    // and all-to-all.
    %loss = zrt.buffer_ref @loss : memref<f32>
    zrt.all_reduce mean axis 0 on @comm %loss to %loss : memref<f32> to memref<f32>
    zrt.all_reduce sum axis 0 on @comm %dw to %acc : memref<8x6xf32> to memref<8x6xf32>
    zrt.all_reduce max axis 0 on @comm %master to %master : memref<12xf32> to memref<12xf32>
    %emb = zrt.buffer_ref @emb : memref<10x8xbf16>
    zrt.broadcast root 0 axis 0 on @comm %emb to %emb : memref<10x8xbf16> to memref<10x8xbf16>
    %exchanged = zrt.arena_view [704] : memref<8x6xf32>
    zrt.all_to_all axis 0 on @comm %dw to %exchanged : memref<8x6xf32> to memref<8x6xf32>
    %labels = zrt.buffer_ref @labels : memref<4xi32>
    zrt.launch "train.softmax_cross_entropy" on @compute ins(%h, %labels : memref<4x6xf32>, memref<4xi32>) outs(%loss : memref<f32>)
  }
}

// Collectives over either axis of a 2x2 placement on 16-bit buffers; the
// group of each axis has 2 ranks.
// CHECK-LABEL: zrt.program @hybrid placement #dist.placement<cpu, [2, 2]> arena 512 align 128 {
// CHECK-NEXT:    zrt.stream @comm
// CHECK-NEXT:    zrt.buffer @g grad_accum : memref<4x16xbf16>
// CHECK-NEXT:    zrt.buffer @h param : memref<4x16xf16>
// CHECK-NEXT:    zrt.step {
// CHECK-NEXT:      %g = zrt.buffer_ref @g : memref<4x16xbf16>
// CHECK-NEXT:      %h = zrt.buffer_ref @h : memref<4x16xf16>
// CHECK-NEXT:      %t = zrt.arena_view [0] : memref<2x16xbf16>
// CHECK-NEXT:      zrt.reduce_scatter sum axis 1 on @comm %g to %t : memref<4x16xbf16> to memref<2x16xbf16>
// CHECK-NEXT:      zrt.all_reduce sum axis 0 on @comm %t to %t : memref<2x16xbf16> to memref<2x16xbf16>
// CHECK-NEXT:      zrt.all_gather axis 1 on @comm %t to %g : memref<2x16xbf16> to memref<4x16xbf16>
// CHECK-NEXT:      zrt.broadcast root 1 axis 1 on @comm %h to %h : memref<4x16xf16> to memref<4x16xf16>
// CHECK-NEXT:      %[[X:.*]] = zrt.arena_view [128] : memref<4x16xf16>
// CHECK-NEXT:      zrt.all_to_all axis 0 on @comm %h to %[[X]] : memref<4x16xf16> to memref<4x16xf16>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
zrt.program @hybrid placement #dist.placement<cpu, [2, 2]> arena 512 align 128 {
  zrt.stream @comm
  zrt.buffer @g grad_accum : memref<4x16xbf16>
  zrt.buffer @h param : memref<4x16xf16>
  zrt.step {
    %g = zrt.buffer_ref @g : memref<4x16xbf16>
    %h = zrt.buffer_ref @h : memref<4x16xf16>
    %half = zrt.arena_view [0] : memref<2x16xbf16>
    zrt.reduce_scatter sum axis 1 on @comm %g to %half : memref<4x16xbf16> to memref<2x16xbf16>
    zrt.all_reduce sum axis 0 on @comm %half to %half : memref<2x16xbf16> to memref<2x16xbf16>
    zrt.all_gather axis 1 on @comm %half to %g : memref<2x16xbf16> to memref<4x16xbf16>
    zrt.broadcast root 1 axis 1 on @comm %h to %h : memref<4x16xf16> to memref<4x16xf16>
    %x = zrt.arena_view [128] : memref<4x16xf16>
    zrt.all_to_all axis 0 on @comm %h to %x : memref<4x16xf16> to memref<4x16xf16>
  }
}

// The smallest program: no declarations, an empty arena and an empty step.
// Extra attributes go after `attributes`.
// CHECK-LABEL: zrt.program @empty placement #dist.placement<cpu, [1]> arena 0 align 1 attributes {note = "no work"} {
// CHECK-NEXT:    zrt.step {
// CHECK-NEXT:    }
// CHECK-NEXT:  }
zrt.program @empty placement #dist.placement<cpu, [1]> arena 0 align 1 attributes {note = "no work"} {
  zrt.step {
  }
}

// Offloaded state: buffers, a host arena and a stream in host memory. Device
// is the default and is not printed; data crosses only by a copy on a device
// stream (here @transfer), and the host stream's kernel touches host memory
// only.
// CHECK-LABEL: zrt.program @offloaded placement #dist.placement<cpu, [2]> arena 256 host_arena 128 align 64 {
// CHECK-NEXT:    zrt.stream @compute
// CHECK-NEXT:    zrt.stream @transfer
// CHECK-NEXT:    zrt.stream @host in host
// CHECK-NEXT:    zrt.buffer @w param : memref<16xf32>
// CHECK-NEXT:    zrt.buffer @w.m slot in host : memref<16xf32>
// CHECK:         %[[G:.*]] = zrt.arena_view [0] : memref<16xf32>
// CHECK:         %[[STAGED:.*]] = zrt.arena_view [0] in host : memref<16xf32>
// CHECK-NEXT:    zrt.copy on @transfer %[[G]] to %[[STAGED]] : memref<16xf32> to memref<16xf32>
// CHECK:         zrt.launch "train.sgd_momentum" on @host
zrt.program @offloaded placement #dist.placement<cpu, [2]> arena 256 host_arena 128 align 64 {
  zrt.stream @compute
  zrt.stream @transfer
  zrt.stream @host in host
  zrt.buffer @w param : memref<16xf32>
  zrt.buffer @w.m slot in host : memref<16xf32>
  zrt.event @grad_ready
  zrt.event @staged
  zrt.step {
    %w = zrt.buffer_ref @w : memref<16xf32>
    %m = zrt.buffer_ref @w.m : memref<16xf32>
    %g = zrt.arena_view [0] : memref<16xf32>
    zrt.launch "train.neg" on @compute ins(%w : memref<16xf32>) outs(%g : memref<16xf32>)
    zrt.record @grad_ready on @compute
    zrt.wait @grad_ready on @transfer
    %staged = zrt.arena_view [0] in host : memref<16xf32>
    zrt.copy on @transfer %g to %staged : memref<16xf32> to memref<16xf32>
    zrt.record @staged on @transfer
    zrt.wait @staged on @host
    %update = zrt.arena_view [64] in host : memref<16xf32>
    zrt.launch "train.sgd_momentum" on @host ins(%staged, %m : memref<16xf32>, memref<16xf32>) outs(%update, %m : memref<16xf32>, memref<16xf32>)
  }
}
