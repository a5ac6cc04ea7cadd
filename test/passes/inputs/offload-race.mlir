// The shape of the race the first GPU check found in gpt2-tiny's stage 3
// with offload=optimizer, cut down to two updates: the second update's
// transfers reuse the host staging of the first (%s2 over %s1 and %t1)
// without waiting for the first update on @host. zero-offload-streams.test
// checks that check_zrt_program.py refuses it, and accepts it once the
// marked record/wait pair is put back.
module {
  zrt.program @step placement #dist.placement<cpu, [1]> arena 64 host_arena 256 align 64 attributes {zrt.live_bytes = 8 : i64} {
    zrt.stream @compute
    zrt.stream @transfer
    zrt.stream @host in host
    zrt.step {
      %t = zrt.arena_view [0] : memref<i64>
      zrt.launch "train.step_index" on @compute outs(%t : memref<i64>)
      %a = zrt.buffer_ref @a : memref<16xf32>
      %b = zrt.buffer_ref @b : memref<32xf32>
      zrt.record @to_transfer0 on @compute
      zrt.wait @to_transfer0 on @transfer
      %s1 = zrt.arena_view [0] in host : memref<16xf32>
      zrt.copy on @transfer %a to %s1 : memref<16xf32> to memref<16xf32>
      %t1 = zrt.arena_view [64] in host : memref<i64>
      zrt.copy on @transfer %t to %t1 : memref<i64> to memref<i64>
      zrt.record @d2h_done1 on @transfer
      zrt.wait @d2h_done1 on @host
      zrt.launch "train.scale" on @host ins(%s1, %t1 : memref<16xf32>, memref<i64>) outs(%s1 : memref<16xf32>)
      // HOST-DONE: zrt.record @host_done2 on @host
      // HOST-DONE: zrt.wait @host_done2 on @transfer
      %s2 = zrt.arena_view [0] in host : memref<32xf32>
      zrt.copy on @transfer %b to %s2 : memref<32xf32> to memref<32xf32>
      zrt.record @d2h_done3 on @transfer
      zrt.wait @d2h_done3 on @host
      zrt.launch "train.scale" on @host ins(%s2 : memref<32xf32>) outs(%s2 : memref<32xf32>)
      zrt.record @host_done4 on @host
      zrt.wait @host_done4 on @compute
    }
  }
}
