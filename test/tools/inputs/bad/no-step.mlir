zrt.program @p placement #dist.placement<cpu, [2]> arena 64 align 64 {
}
