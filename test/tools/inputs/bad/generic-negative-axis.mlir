func.func @f(%x: tensor<4xf32>) {
  %0 = "dist.all_reduce"(%x) <{axis = -2 : i64, reduce = 0 : i32}> : (tensor<4xf32>) -> tensor<4xf32>
  return
}
