train.param @w param : tensor<4xf32> init normal(0.0, -1.0)
