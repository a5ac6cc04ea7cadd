func.func @f(%g: tensor<10xf32>) -> tensor<10xf32> {
  %0 = dist.all_reduce avg %g axis 0 : tensor<10xf32>
  return %0 : tensor<10xf32>
}
