zrt.program @p placement #dist.placement<cpu, [2]> arena 64 align 64 {
  zrt.step {
    %t = zrt.arena_view [0] : memref<64xf32>
  }
}
