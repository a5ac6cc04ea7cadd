// ARGS: --canonicalize=max-iterations=banana
func.func @f() {
  return
}
