train.optimizer @o adam lr -1.0e-03
