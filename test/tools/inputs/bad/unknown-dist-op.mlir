func.func @f() {
  %0 = dist.all_reduce_everything %x
  return
}
