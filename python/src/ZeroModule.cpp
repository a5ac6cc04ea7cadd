//===- ZeroModule.cpp - zero._zero, the builder and trainer for Python ----===//
//
// The C++ graph builder (docs/frontend.md) as the extension module behind
// `import zero` (docs/python.md). The Python package (python/zero/) adds the
// nn.Graph-style class, the launcher and the numpy conveniences. This file
// defines the module and turns absl::Status into Python exceptions; the
// builder is bound in BindGraph.cpp, compile and Trainer in BindTraining.cpp.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include <stdexcept>

using namespace zero::frontend;

namespace zero::python {

std::string validUtf8(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    auto byte = static_cast<unsigned char>(text[i]);
    size_t length = byte < 0x80           ? 1
                    : (byte >> 5) == 0x6  ? 2
                    : (byte >> 4) == 0xe  ? 3
                    : (byte >> 3) == 0x1e ? 4
                                          : 0;
    bool valid = length > 0 && i + length <= text.size();
    for (size_t k = 1; valid && k < length; ++k)
      valid = (static_cast<unsigned char>(text[i + k]) >> 6) == 0x2;
    if (!valid) {
      out.push_back('?');
      ++i;
      continue;
    }
    out.append(text.data() + i, length);
    i += length;
  }
  return out;
}

[[noreturn]] void raise(const absl::Status &status) {
  std::string message = validUtf8(status.message());
  switch (status.code()) {
  case absl::StatusCode::kInvalidArgument:
  case absl::StatusCode::kOutOfRange:
    throw py::value_error(message);
  case absl::StatusCode::kNotFound:
    PyErr_SetString(PyExc_FileNotFoundError, message.c_str());
    throw py::error_already_set();
  default:
    throw std::runtime_error(message);
  }
}

void raiseBuildError(const std::vector<const Tensor *> &operands) {
  for (const Tensor *operand : operands)
    check(buildStatus(*operand));
  throw py::value_error("the op's operands belong to no graph");
}

void raiseNewFailure(const Graph &graph, int64_t failuresBefore) {
  if (graph.failures() > failuresBefore)
    check(graph.error(failuresBefore));
}

} // namespace zero::python

PYBIND11_MODULE(_zero, m) {
  m.doc() = "The ZeRO compiler's graph builder and trainer (docs/python.md)";
  m.attr("__version__") = ZERO_VERSION;
  zero::python::bindGraph(m);
  zero::python::bindTraining(m);
}
