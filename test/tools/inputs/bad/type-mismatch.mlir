func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = train.relu %a : tensor<4xi32>
  return %0 : tensor<4xf32>
}
