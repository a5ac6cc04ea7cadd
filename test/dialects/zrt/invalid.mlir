// RUN: zero-opt %s -split-input-file -verify-diagnostics

// Every diagnostic of the zrt dialect's verifiers: program structure, memory,
// symbol uses of stream work, launches, copies and collectives.

//===----------------------------------------------------------------------===//
// zrt.program
//===----------------------------------------------------------------------===//

// An alignment that is not a power of two.
// expected-error @+1 {{needs a power-of-two alignment, got 48}}
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 48 {
  zrt.step {
  }
}

// -----

// A program without a step.
// expected-error @+1 {{needs exactly one plain zrt.step (micro and apply steps need `accumulate K`), found 0 step bodies}}
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.stream @compute
}

// -----

// A program with two steps.
// expected-error @+1 {{needs exactly one plain zrt.step (micro and apply steps need `accumulate K`), found 2 step bodies}}
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.step {
  }
  zrt.step {
  }
}

// -----

// Accumulation runs a micro-step K times and then an apply step: both, in
// that order.
// expected-error @+1 {{accumulates gradients over 4 micro-batches, so it needs a `zrt.step micro` followed by a `zrt.step apply`}}
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 accumulate 4 {
  zrt.step apply {
  }
  zrt.step micro {
  }
}

// -----

// One micro-batch per step is no accumulation.
// expected-error @+1 {{'accumulate_steps' failed to satisfy constraint}}
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 accumulate 1 {
  zrt.step {
  }
}

//===----------------------------------------------------------------------===//
// zrt.buffer_ref / zrt.arena_view
//===----------------------------------------------------------------------===//

// -----

// A buffer reference to a stream.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.stream @compute
  zrt.step {
    // expected-error @+1 {{refers to @compute, which is not a zrt.buffer}}
    %0 = zrt.buffer_ref @compute : memref<4xf32>
  }
}

// -----

// A buffer reference to a buffer that does not exist.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.step {
    // expected-error @+1 {{refers to @missing, which is not a zrt.buffer}}
    %0 = zrt.buffer_ref @missing : memref<4xf32>
  }
}

// -----

// A buffer reference with another type than the declaration.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.buffer @w param : memref<784x128xf32>
  zrt.step {
    // expected-error @+1 {{views @w as 'memref<25088xf32>', but it is declared 'memref<784x128xf32>'}}
    %0 = zrt.buffer_ref @w : memref<25088xf32>
  }
}

// -----

// An arena view outside any program.
func.func @f() {
  // expected-error @+1 {{must be inside a zrt.program}}
  %0 = zrt.arena_view [0] : memref<4xf32>
  return
}

// -----

// An arena view at a misaligned offset.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.step {
    // expected-error @+1 {{starts at offset 32, which is not a multiple of the program's alignment 64}}
    %0 = zrt.arena_view [32] : memref<4xf32>
  }
}

// -----

// An arena view that runs past the end of the arena.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.step {
    // expected-error @+1 {{covers 512 bytes from offset 768, past the end of the 1024-byte arena}}
    %0 = zrt.arena_view [768] : memref<4x32xf32>
  }
}

//===----------------------------------------------------------------------===//
// Streams and events
//===----------------------------------------------------------------------===//

// -----

// A launch on an undeclared stream.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.step {
    %0 = zrt.arena_view [0] : memref<4xf32>
    // expected-error @+1 {{refers to @compute, which is not a zrt.stream of this program}}
    zrt.launch "train.relu" on @compute ins(%0 : memref<4xf32>) outs(%0 : memref<4xf32>)
  }
}

// -----

// A copy on an event instead of a stream.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.event @done
  zrt.step {
    %0 = zrt.arena_view [0] : memref<4xf32>
    // expected-error @+1 {{refers to @done, which is not a zrt.stream of this program}}
    zrt.copy on @done %0 to %0 : memref<4xf32> to memref<4xf32>
  }
}

// -----

// A collective on a buffer instead of a stream.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.buffer @g grad_accum : memref<4xf32>
  zrt.step {
    %g = zrt.buffer_ref @g : memref<4xf32>
    // expected-error @+1 {{refers to @g, which is not a zrt.stream of this program}}
    zrt.all_reduce sum axis 0 on @g %g to %g : memref<4xf32> to memref<4xf32>
  }
}

// -----

// Recording an undeclared event.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.stream @compute
  zrt.step {
    // expected-error @+1 {{refers to @done, which is not a zrt.event of this program}}
    zrt.record @done on @compute
  }
}

// -----

// Recording an event on an undeclared stream.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.event @done
  zrt.step {
    // expected-error @+1 {{refers to @compute, which is not a zrt.stream of this program}}
    zrt.record @done on @compute
  }
}

// -----

// Waiting on a stream instead of an event.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.stream @compute
  zrt.stream @comm
  zrt.step {
    // expected-error @+1 {{refers to @compute, which is not a zrt.event of this program}}
    zrt.wait @compute on @comm
  }
}

// -----

// Waiting for an event on an undeclared stream.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.event @done
  zrt.step {
    // expected-error @+1 {{refers to @comm, which is not a zrt.stream of this program}}
    zrt.wait @done on @comm
  }
}

//===----------------------------------------------------------------------===//
// zrt.launch / zrt.copy
//===----------------------------------------------------------------------===//

// -----

// A launch without a kernel name.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.stream @compute
  zrt.step {
    %0 = zrt.arena_view [0] : memref<4xf32>
    // expected-error @+1 {{needs a kernel name, such as "train.matmul"}}
    zrt.launch "" on @compute outs(%0 : memref<4xf32>)
  }
}

// -----

// A launch with no outputs (only expressible in generic form).
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.stream @compute
  zrt.step {
    %0 = zrt.arena_view [0] : memref<4xf32>
    // expected-error @+1 {{launches train.relu with no outputs; a kernel must write something}}
    "zrt.launch"(%0) <{kernel = "train.relu", operandSegmentSizes = array<i32: 1, 0>, stream = @compute}> : (memref<4xf32>) -> ()
  }
}

// -----

// A copy between buffers of different sizes.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.stream @compute
  zrt.step {
    %0 = zrt.arena_view [0] : memref<2x3xf32>
    %1 = zrt.arena_view [64] : memref<8xf32>
    // expected-error @+1 {{copies 'memref<2x3xf32>' into 'memref<8xf32>'; a copy needs the same element type and count}}
    zrt.copy on @compute %0 to %1 : memref<2x3xf32> to memref<8xf32>
  }
}

// -----

// A copy that would convert the element type.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.stream @compute
  zrt.step {
    %0 = zrt.arena_view [0] : memref<6xf32>
    %1 = zrt.arena_view [64] : memref<6xbf16>
    // expected-error @+1 {{copies 'memref<6xf32>' into 'memref<6xbf16>'; a copy needs the same element type and count}}
    zrt.copy on @compute %0 to %1 : memref<6xf32> to memref<6xbf16>
  }
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

// -----

// A collective over a placement axis the program does not have.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.stream @comm
  zrt.step {
    %0 = zrt.arena_view [0] : memref<8xf32>
    // expected-error @+1 {{runs over placement axis 1, but #dist.placement<cpu, [4]> has only 1 axis(es)}}
    zrt.all_reduce sum axis 1 on @comm %0 to %0 : memref<8xf32> to memref<8xf32>
  }
}

// -----

// A collective that would convert the element type.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.stream @comm
  zrt.step {
    %0 = zrt.arena_view [0] : memref<8xf32>
    %1 = zrt.arena_view [64] : memref<2xbf16>
    // expected-error @+1 {{moves 'f32' into 'bf16'; collectives do not convert}}
    zrt.reduce_scatter sum axis 0 on @comm %0 to %1 : memref<8xf32> to memref<2xbf16>
  }
}

// -----

// An all-reduce whose output has another shape.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.stream @comm
  zrt.step {
    %0 = zrt.arena_view [0] : memref<8xf32>
    %1 = zrt.arena_view [64] : memref<2x4xf32>
    // expected-error @+1 {{needs input and output of one type}}
    zrt.all_reduce sum axis 0 on @comm %0 to %1 : memref<8xf32> to memref<2x4xf32>
  }
}

// -----

// A reduce-scatter whose input is not padded to a multiple of the group.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.stream @comm
  zrt.step {
    %0 = zrt.arena_view [0] : memref<21xf32>
    %1 = zrt.arena_view [128] : memref<6xf32>
    // expected-error @+1 {{reduce-scatter over 4 ranks needs 4 times the rows of 'memref<6xf32>' (padding included), got 'memref<21xf32>'}}
    zrt.reduce_scatter sum axis 0 on @comm %0 to %1 : memref<21xf32> to memref<6xf32>
  }
}

// -----

// A reduce-scatter whose trailing dimensions differ.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.stream @comm
  zrt.step {
    %0 = zrt.arena_view [0] : memref<8x4xf32>
    %1 = zrt.arena_view [128] : memref<2x8xf32>
    // expected-error @+1 {{reduce-scatter over 4 ranks needs 4 times the rows of 'memref<2x8xf32>' (padding included), got 'memref<8x4xf32>'}}
    zrt.reduce_scatter mean axis 0 on @comm %0 to %1 : memref<8x4xf32> to memref<2x8xf32>
  }
}

// -----

// An all-gather whose output has the wrong number of rows.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.stream @comm
  zrt.step {
    %0 = zrt.arena_view [0] : memref<6xf32>
    %1 = zrt.arena_view [64] : memref<12xf32>
    // expected-error @+1 {{all-gather over 4 ranks needs 4 times the rows of 'memref<6xf32>' (padding included), got 'memref<12xf32>'}}
    zrt.all_gather axis 0 on @comm %0 to %1 : memref<6xf32> to memref<12xf32>
  }
}

// -----

// An all-gather of a scalar.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.stream @comm
  zrt.step {
    %0 = zrt.arena_view [0] : memref<f32>
    %1 = zrt.arena_view [64] : memref<4xf32>
    // expected-error @+1 {{all-gather over 4 ranks needs 4 times the rows of 'memref<f32>' (padding included), got 'memref<4xf32>'}}
    zrt.all_gather axis 0 on @comm %0 to %1 : memref<f32> to memref<4xf32>
  }
}

// -----

// A broadcast whose output has another type.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.stream @comm
  zrt.step {
    %0 = zrt.arena_view [0] : memref<8xf32>
    %1 = zrt.arena_view [64] : memref<4xf32>
    // expected-error @+1 {{needs input and output of one type}}
    zrt.broadcast root 0 axis 0 on @comm %0 to %1 : memref<8xf32> to memref<4xf32>
  }
}

// -----

// A broadcast from a root outside the group.
zrt.program @p placement #dist.placement<cpu, [2, 4]> arena 1024 align 64 {
  zrt.stream @comm
  zrt.step {
    %0 = zrt.arena_view [0] : memref<8xf32>
    // expected-error @+1 {{has root 2 in a group of 2 ranks}}
    zrt.broadcast root 2 axis 0 on @comm %0 to %0 : memref<8xf32> to memref<8xf32>
  }
}

// -----

// An all-to-all whose output has another type.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.stream @comm
  zrt.step {
    %0 = zrt.arena_view [0] : memref<8x2xf32>
    %1 = zrt.arena_view [64] : memref<16xf32>
    // expected-error @+1 {{needs input and output of one type}}
    zrt.all_to_all axis 0 on @comm %0 to %1 : memref<8x2xf32> to memref<16xf32>
  }
}

// -----

// An all-to-all whose rows do not split into one block per rank.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.stream @comm
  zrt.step {
    %0 = zrt.arena_view [0] : memref<6x2xf32>
    // expected-error @+1 {{exchanges row blocks of 'memref<6x2xf32>', whose rows do not divide by 4}}
    zrt.all_to_all axis 0 on @comm %0 to %0 : memref<6x2xf32> to memref<6x2xf32>
  }
}

// -----

// An all-to-all of a scalar.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  zrt.stream @comm
  zrt.step {
    %0 = zrt.arena_view [0] : memref<f32>
    // expected-error @+1 {{exchanges row blocks of 'memref<f32>', whose rows do not divide by 4}}
    zrt.all_to_all axis 0 on @comm %0 to %0 : memref<f32> to memref<f32>
  }
}

// -----

// An offset near the top of int64 must not wrap around the arena check.
zrt.program @p placement #dist.placement<cpu, [2]> arena 1024 align 64 {
  zrt.step {
    // expected-error @+1 {{covers 256 bytes from offset 9223372036854775744, past the end of the 1024-byte arena}}
    %t = zrt.arena_view [9223372036854775744] : memref<64xf32>
  }
}

// -----

// Buffers hold numbers whose byte size is known: no index or complex elements.
zrt.program @p placement #dist.placement<cpu, [2]> arena 1024 align 64 {
  // expected-error @+1 {{type}}
  zrt.buffer @b param : memref<4xindex>
  zrt.step {
  }
}

// -----

// Inside a lowered program, the program's placement is the only one.
zrt.program @p placement #dist.placement<cpu, [4]> arena 1024 align 64 {
  // expected-error @+1 {{'dist.placement' cannot be set inside 'zrt.program', which has its own placement}}
  zrt.step attributes {dist.placement = #dist.placement<cpu, [2]>} {
  }
}

// -----

//===----------------------------------------------------------------------===//
// Memory spaces
//===----------------------------------------------------------------------===//

// A compute kernel cannot read host memory: the data must be copied over.
zrt.program @p placement #dist.placement<cpu, [2]> arena 1024 align 64 {
  zrt.stream @compute
  zrt.buffer @m slot in host : memref<4xf32>
  zrt.step {
    %m = zrt.buffer_ref @m : memref<4xf32>
    %t = zrt.arena_view [0] : memref<4xf32>
    // expected-error @+1 {{runs on @compute, a device stream, but touches a buffer in host memory; data crosses between the spaces only by a zrt.copy on a device stream}}
    zrt.launch "train.neg" on @compute ins(%m : memref<4xf32>) outs(%t : memref<4xf32>)
  }
}

// -----

// A host kernel cannot write device memory, even through a view.
zrt.program @p placement #dist.placement<cpu, [2]> arena 1024 host_arena 64 align 64 {
  zrt.stream @host in host
  zrt.step {
    %staged = zrt.arena_view [0] in host : memref<4xf32>
    %t = zrt.arena_view [0] : memref<8xf32>
    %half = zrt.view %t [4] : memref<8xf32> to memref<4xf32>
    // expected-error @+1 {{runs on @host, a host stream, but touches a buffer in device memory}}
    zrt.launch "train.neg" on @host ins(%staged : memref<4xf32>) outs(%half : memref<4xf32>)
  }
}

// -----

// A copy on a host stream is not a transfer: both sides must be host memory.
zrt.program @p placement #dist.placement<cpu, [2]> arena 1024 host_arena 64 align 64 {
  zrt.stream @host in host
  zrt.step {
    %staged = zrt.arena_view [0] in host : memref<4xf32>
    %t = zrt.arena_view [0] : memref<4xf32>
    // expected-error @+1 {{runs on @host, a host stream, but touches a buffer in device memory}}
    zrt.copy on @host %t to %staged : memref<4xf32> to memref<4xf32>
  }
}

// -----

// Collectives communicate device memory.
zrt.program @p placement #dist.placement<cpu, [2]> arena 1024 align 64 {
  zrt.stream @comm
  zrt.buffer @w param in host : memref<2xf32>
  zrt.step {
    %w = zrt.buffer_ref @w : memref<2xf32>
    %t = zrt.arena_view [0] : memref<4xf32>
    // expected-error @+1 {{communicates a buffer in host memory; collectives run on device memory, so copy it to the device first}}
    zrt.all_gather axis 0 on @comm %w to %t : memref<2xf32> to memref<4xf32>
  }
}

// -----

// ... on device streams.
zrt.program @p placement #dist.placement<cpu, [2]> arena 1024 align 64 {
  zrt.stream @host in host
  zrt.step {
    %t = zrt.arena_view [0] : memref<4xf32>
    // expected-error @+1 {{runs on @host, a host stream, but touches a buffer in device memory}}
    zrt.all_reduce sum axis 0 on @host %t to %t : memref<4xf32> to memref<4xf32>
  }
}

// -----

// A host arena view must fit the host arena, which is absent unless declared.
zrt.program @p placement #dist.placement<cpu, [2]> arena 1024 align 64 {
  zrt.step {
    // expected-error @+1 {{covers 16 bytes from offset 0, past the end of the 0-byte host arena}}
    %t = zrt.arena_view [0] in host : memref<4xf32>
  }
}
