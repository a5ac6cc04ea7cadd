train.param @w frozen : tensor<4xf32>
train.optimizer @o sgd lr 1.0e-01
func.func @f(%g: tensor<4xf32>) {
  train.apply_gradient %g to @w with @o : tensor<4xf32>
  return
}
