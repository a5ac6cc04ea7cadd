// RUN: zero-opt %s --mlir-print-op-generic | zero-opt | FileCheck %s
// RUN: zero-opt %s | zero-opt | FileCheck %s
// RUN: zero-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// Every zrt op survives the generic form: the program's placement, arena and
// alignment properties, buffer roles, the step's explicit zrt.yield
// terminator, launch operand segments with and without inputs, the launch
// parameter dictionary and the collectives' reduce kinds.

// CHECK-LABEL: zrt.program @step placement #dist.placement<cpu, [2, 2]> arena 512 align 32 attributes {origin = "generic.mlir"} {
// CHECK-NEXT:    zrt.stream @compute
// CHECK-NEXT:    zrt.stream @comm
// CHECK-NEXT:    zrt.event @ready
// CHECK-NEXT:    zrt.buffer @x input : memref<4x8xbf16>
// CHECK-NEXT:    zrt.buffer @w param : memref<8x8xbf16>
// CHECK-NEXT:    zrt.buffer @e frozen : memref<8xbf16>
// CHECK-NEXT:    zrt.buffer @w.master master : memref<32xf32>
// CHECK-NEXT:    zrt.buffer @w.m slot : memref<32xf32>
// CHECK-NEXT:    zrt.buffer @w.acc grad_accum : memref<64xf32>
// CHECK-NEXT:    zrt.buffer @loss output : memref<f32>
// CHECK-NEXT:    zrt.step {
// CHECK-NEXT:      %x = zrt.buffer_ref @x : memref<4x8xbf16>
// CHECK-NEXT:      %w = zrt.buffer_ref @w : memref<8x8xbf16>
// CHECK-NEXT:      %t = zrt.arena_view [0] : memref<4x8xbf16>
// CHECK-NEXT:      zrt.launch "train.matmul" on @compute ins(%x, %w : memref<4x8xbf16>, memref<8x8xbf16>) outs(%t : memref<4x8xbf16>) params {transpose_b}
// CHECK-NEXT:      zrt.launch "zero.fill" on @compute outs(%t : memref<4x8xbf16>)
// CHECK-NEXT:      %w.acc = zrt.buffer_ref @w.acc : memref<64xf32>
// CHECK-NEXT:      %[[G:.*]] = zrt.arena_view [64] : memref<8x8xf32>
// CHECK-NEXT:      zrt.copy on @compute %w.acc to %[[G]] : memref<64xf32> to memref<8x8xf32>
// CHECK-NEXT:      zrt.record @ready on @compute
// CHECK-NEXT:      zrt.wait @ready on @comm
// CHECK-NEXT:      %w.master = zrt.buffer_ref @w.master : memref<32xf32>
// CHECK-NEXT:      zrt.reduce_scatter mean axis 0 on @comm %w.acc to %w.master : memref<64xf32> to memref<32xf32>
// CHECK-NEXT:      zrt.all_gather axis 1 on @comm %w.master to %w.acc : memref<32xf32> to memref<64xf32>
// CHECK-NEXT:      %loss = zrt.buffer_ref @loss : memref<f32>
// CHECK-NEXT:      zrt.all_reduce max axis 1 on @comm %loss to %loss : memref<f32> to memref<f32>
// CHECK-NEXT:      %e = zrt.buffer_ref @e : memref<8xbf16>
// CHECK-NEXT:      zrt.broadcast root 1 axis 0 on @comm %e to %e : memref<8xbf16> to memref<8xbf16>
// CHECK-NEXT:      zrt.all_to_all axis 1 on @comm %[[G]] to %[[G]] : memref<8x8xf32> to memref<8x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// GENERIC:      "zrt.program"() <{alignment = 32 : i64, arena_bytes = 512 : i64, placement = #dist.placement<cpu, [2, 2]>, sym_name = "step"}> ({
// GENERIC:        "zrt.buffer"() <{role = 5 : i32, space = 0 : i32, sym_name = "x", type = memref<4x8xbf16>}> : () -> ()
// GENERIC:        "zrt.step"() <{kind = 0 : i32}> ({
// GENERIC:          "zrt.launch"(%{{.*}}, %{{.*}}, %{{.*}}) <{kernel = "train.matmul", operandSegmentSizes = array<i32: 2, 1>, params = {transpose_b}, stream = @compute}>
// GENERIC-NEXT:     "zrt.launch"(%{{.*}}) <{kernel = "zero.fill", operandSegmentSizes = array<i32: 0, 1>, stream = @compute}>
// GENERIC:          "zrt.reduce_scatter"(%{{.*}}, %{{.*}}) <{axis = 0 : i64, reduce = 1 : i32, stream = @comm}>
// GENERIC:          "zrt.broadcast"(%{{.*}}, %{{.*}}) <{axis = 0 : i64, root = 1 : i64, stream = @comm}>
// GENERIC:          "zrt.yield"() : () -> ()
// GENERIC-NEXT:   }) : () -> ()
// GENERIC-NEXT: }) {origin = "generic.mlir"} : () -> ()
zrt.program @step placement #dist.placement<cpu, [2, 2]> arena 512 align 32 attributes {origin = "generic.mlir"} {
  zrt.stream @compute
  zrt.stream @comm
  zrt.event @ready
  zrt.buffer @x input : memref<4x8xbf16>
  zrt.buffer @w param : memref<8x8xbf16>
  zrt.buffer @e frozen : memref<8xbf16>
  zrt.buffer @w.master master : memref<32xf32>
  zrt.buffer @w.m slot : memref<32xf32>
  zrt.buffer @w.acc grad_accum : memref<64xf32>
  zrt.buffer @loss output : memref<f32>
  zrt.step {
    %x = zrt.buffer_ref @x : memref<4x8xbf16>
    %w = zrt.buffer_ref @w : memref<8x8xbf16>
    %y = zrt.arena_view [0] : memref<4x8xbf16>
    zrt.launch "train.matmul" on @compute ins(%x, %w : memref<4x8xbf16>, memref<8x8xbf16>) outs(%y : memref<4x8xbf16>) params {transpose_b}
    zrt.launch "zero.fill" on @compute outs(%y : memref<4x8xbf16>)
    %acc = zrt.buffer_ref @w.acc : memref<64xf32>
    %g = zrt.arena_view [64] : memref<8x8xf32>
    zrt.copy on @compute %acc to %g : memref<64xf32> to memref<8x8xf32>
    zrt.record @ready on @compute
    zrt.wait @ready on @comm
    %master = zrt.buffer_ref @w.master : memref<32xf32>
    zrt.reduce_scatter mean axis 0 on @comm %acc to %master : memref<64xf32> to memref<32xf32>
    zrt.all_gather axis 1 on @comm %master to %acc : memref<32xf32> to memref<64xf32>
    %loss = zrt.buffer_ref @loss : memref<f32>
    zrt.all_reduce max axis 1 on @comm %loss to %loss : memref<f32> to memref<f32>
    %e = zrt.buffer_ref @e : memref<8xbf16>
    zrt.broadcast root 1 axis 0 on @comm %e to %e : memref<8xbf16> to memref<8xbf16>
    zrt.all_to_all axis 1 on @comm %g to %g : memref<8x8xf32> to memref<8x8xf32>
  }
}
