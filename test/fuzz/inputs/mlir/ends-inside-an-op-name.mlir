module {
  func.func @f() {
    zrt.event