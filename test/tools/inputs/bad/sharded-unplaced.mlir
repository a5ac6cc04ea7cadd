train.param @w param : tensor<4xf32>
train.param @w.m slot of @w : tensor<4xf32> sharded flat over 0 -> tensor<1xf32>
