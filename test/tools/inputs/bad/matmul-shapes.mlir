func.func @f(%a: tensor<4x5xf32>, %b: tensor<6x7xf32>) -> tensor<4x7xf32> {
  %0 = train.matmul %a, %b : tensor<4x5xf32>, tensor<6x7xf32> -> tensor<4x7xf32>
  return %0 : tensor<4x7xf32>
}
