// ARGS: --no-such-pass
func.func @f() {
  return
}
