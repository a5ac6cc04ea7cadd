func.func @f() {
  %0 = "dist.all_reduce"() : () -> tensor<4xf32>
  return
}
