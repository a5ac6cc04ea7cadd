//===- Bindings.h - What the parts of zero._zero share ----------*- C++ -*-===//
//
// The extension module is three files: ZeroModule.cpp (the module and the
// Status -> exception conversion), BindGraph.cpp (the builder: Graph,
// Tensor, ops, layers) and BindTraining.cpp (compile, Trainer, the
// communicator). What they share is declared here.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_PYTHON_BINDINGS_H
#define ZERO_PYTHON_BINDINGS_H

#include "zero/frontend/Graph.h"
#include "zero/runtime/TensorFile.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include <pybind11/pybind11.h>

#include <string>
#include <vector>

namespace zero::python {

namespace py = pybind11;
namespace rt = zero::rt;

void bindGraph(py::module_ &m);
/// The optimizers, schedules and GraphConfig; bindGraph calls it.
void bindConfig(py::module_ &m);
/// The DType named `name` ("f32", ...), or ValueError.
frontend::DType parseDtype(const std::string &name);

/// numpy arrays to and from host tensors (NumpyArrays.cpp). fromNumpy takes
/// float32, float16, int32 and int64 arrays of any strides (a view is copied
/// in C order), refusing another format with TypeError naming `what`;
/// stateFromNumpy also takes uint16 arrays as bf16 bit patterns (a state
/// dict's bf16 tensors); toNumpy gives bf16 as uint16.
rt::HostTensor fromNumpy(const py::buffer &value, const std::string &what);
rt::HostTensor stateFromNumpy(const py::handle &value, const std::string &what);
py::object toNumpy(const rt::HostTensor &tensor);
void bindTraining(py::module_ &m);
/// The Llama family (zero.nn.Llama, ...); bindGraph calls it.
void bindLlama(py::module_ &m);
/// A layer's `checkpoint` argument: False or 'none', True or 'full',
/// 'selective' or 'selective_op'; returns whether to checkpoint, and what
/// a checkpointed block keeps.
std::pair<bool, frontend::RecomputePolicy>
parseCheckpoint(const py::object &checkpoint);

/// `text` with every byte that is not part of valid UTF-8 replaced by '?':
/// a message carrying bytes from a failing library must still reach Python
/// as a str, not as a UnicodeDecodeError in its place.
std::string validUtf8(absl::string_view text);

/// Raises the Python exception that says what `status` says: ValueError for
/// a bad argument, FileNotFoundError for a missing file, RuntimeError else.
[[noreturn]] void raise(const absl::Status &status);

template <typename T> T unwrap(absl::StatusOr<T> value) {
  if (!value.ok())
    raise(value.status());
  return std::move(*value);
}

inline void check(const absl::Status &status) {
  if (!status.ok())
    raise(status);
}

//===----------------------------------------------------------------------===//
// Build errors at the line that made them
//===----------------------------------------------------------------------===//

/// A builder op that fails records why in its operands' graph and returns
/// an invalid tensor; Python raises that error at the op, not at compile().
[[noreturn]] void
raiseBuildError(const std::vector<const frontend::Tensor *> &operands);

template <typename T>
void collectTensors(std::vector<const frontend::Tensor *> &, const T &) {}
inline void collectTensors(std::vector<const frontend::Tensor *> &out,
                           const frontend::Tensor &tensor) {
  out.push_back(&tensor);
}
inline void collectTensors(std::vector<const frontend::Tensor *> &out,
                           const std::vector<frontend::Tensor> &tensors) {
  for (const frontend::Tensor &tensor : tensors)
    out.push_back(&tensor);
}

/// Raises the graph's last error when a declaration failed since
/// `failuresBefore` (a layer's parameters, an input).
void raiseNewFailure(const frontend::Graph &graph, int64_t failuresBefore);

/// `result`, or the build error raised when it is invalid.
template <typename... Operands>
frontend::Tensor checkedResult(frontend::Tensor result,
                               const Operands &...operands) {
  if (!result.valid()) {
    std::vector<const frontend::Tensor *> tensors;
    (collectTensors(tensors, operands), ...);
    raiseBuildError(tensors);
  }
  return result;
}

/// `op` as a Python function that raises its build error where it is
/// called.
template <typename... Args> auto checked(frontend::Tensor (*op)(Args...)) {
  return [op](Args... args) { return checkedResult(op(args...), args...); };
}

} // namespace zero::python

#endif // ZERO_PYTHON_BINDINGS_H
