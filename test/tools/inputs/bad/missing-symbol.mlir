train.optimizer @o adam lr 1.0e-03
func.func @f(%g: tensor<4xf32>) {
  train.apply_gradient %g to @nope with @o : tensor<4xf32>
  return
}
