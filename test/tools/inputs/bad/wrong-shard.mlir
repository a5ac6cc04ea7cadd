module attributes {dist.placement = #dist.placement<cpu, [4]>} {
  func.func @f(%g: tensor<10xf32>) -> tensor<4xf32> {
    %0 = dist.reduce_scatter sum %g axis 0 dim 0 : tensor<10xf32> -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
