// Not parseable: the argument list of @step never closes.
module {
  func.func @step( {
  }
}
