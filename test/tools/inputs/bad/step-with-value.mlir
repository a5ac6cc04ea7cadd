func.func @f() attributes {train.step = 3} {
  return
}
