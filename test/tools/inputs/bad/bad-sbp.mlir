func.func @f(%g: tensor<10xf32>) -> tensor<3xf32> {
  %0 = dist.reshard %g from [S(x)] to [B] : tensor<10xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
