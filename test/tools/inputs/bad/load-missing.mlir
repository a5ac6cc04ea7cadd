func.func @f(%x: tensor<4xf32>) {
  %0 = "train.load"() <{state = @missing}> : () -> tensor<4xf32>
  return
}
