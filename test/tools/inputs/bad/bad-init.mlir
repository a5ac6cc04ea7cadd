train.param @w param : tensor<4xf32> init gaussian(0.0, 1.0)
