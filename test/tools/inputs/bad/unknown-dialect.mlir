func.func @f() {
  %0 = "nosuch.op"() : () -> i32
  return
}
