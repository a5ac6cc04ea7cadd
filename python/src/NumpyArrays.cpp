//===- NumpyArrays.cpp - numpy arrays to and from host tensors ------------===//
//
// Arrays cross through Python's buffer protocol and numpy's Python API,
// never numpy's C structs, so that the module works with numpy 1.x and 2.x
// whatever numpy headers pybind11 was built against.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "zero/runtime/TensorFile.h"

// py::cast of a shape (std::vector) needs the STL casters.
#include <pybind11/stl.h>

#include <cstring>
#include <string>
#include <vector>

namespace zero::python {

using frontend::DType;

namespace {

const char *numpyName(DType dtype) {
  switch (dtype) {
  case DType::f32:
    return "float32";
  case DType::i32:
    return "int32";
  case DType::i64:
    return "int64";
  case DType::i8:
    return "int8";
  case DType::f16:
    return "float16";
  case DType::bf16:
    // numpy has no bfloat16: the raw 16-bit patterns.
    return "uint16";
  }
  return "float32";
}

} // namespace

rt::HostTensor fromNumpy(const py::buffer &value, const std::string &what) {
  py::buffer_info info = value.request();
  rt::HostTensor tensor;
  // Struct-module codes; 'l' is 64-bit on the LP64 platforms we run on.
  const std::string &format = info.format;
  char code = format.empty() ? '?' : format.back();
  bool native = format.size() == 1 || format[0] == '<' || format[0] == '=' ||
                format[0] == '@';
  if (native && code == 'f' && info.itemsize == 4)
    tensor.dtype = DType::f32;
  else if (native && code == 'e' && info.itemsize == 2)
    tensor.dtype = DType::f16;
  else if (native && (code == 'i' || code == 'l') && info.itemsize == 4)
    tensor.dtype = DType::i32;
  else if (native && (code == 'l' || code == 'q') && info.itemsize == 8)
    tensor.dtype = DType::i64;
  else
    throw py::type_error(what + ": arrays of format '" + format + "' (" +
                         std::to_string(info.itemsize) +
                         "-byte items) are not accepted; use float32, "
                         "float16, int32 or int64");
  tensor.shape.assign(info.shape.begin(), info.shape.end());
  int64_t elements = tensor.numElements();
  // Strides in bytes; a C-contiguous array has each one the product of the
  // extents after it.
  int64_t expected = info.itemsize;
  bool contiguous = true;
  for (int64_t dim = info.ndim - 1; dim >= 0; --dim) {
    if (info.shape[dim] > 1 && info.strides[dim] != expected)
      contiguous = false;
    expected *= info.shape[dim];
  }
  tensor.data.resize(static_cast<size_t>(elements * info.itemsize));
  if (tensor.data.empty())
    return tensor;
  if (contiguous) {
    std::memcpy(tensor.data.data(), info.ptr, tensor.data.size());
    return tensor;
  }
  // A view (a slice, a transpose) is copied element by element in C order,
  // as numpy.ascontiguousarray would: the values are the array's, only its
  // layout was another (PyTorch takes non-contiguous tensors too).
  auto *out = tensor.data.data();
  const auto *base = static_cast<const uint8_t *>(info.ptr);
  std::vector<int64_t> index(info.ndim, 0);
  for (int64_t element = 0; element < elements; ++element) {
    int64_t offset = 0;
    for (int64_t dim = 0; dim < info.ndim; ++dim)
      offset += index[dim] * info.strides[dim];
    std::memcpy(out + element * info.itemsize, base + offset, info.itemsize);
    for (int64_t dim = info.ndim - 1; dim >= 0; --dim) {
      if (++index[dim] < info.shape[dim])
        break;
      index[dim] = 0;
    }
  }
  return tensor;
}

/// A tensor of a state dict: as fromNumpy, and uint16 arrays as bf16 bit
/// patterns (what toNumpy gives for bf16, numpy having no bfloat16).
rt::HostTensor stateFromNumpy(const py::handle &value,
                              const std::string &what) {
  if (!py::isinstance<py::buffer>(value))
    throw py::type_error(
        what + ": a numpy array, not " +
        std::string(py::str(value.get_type().attr("__name__"))));
  py::buffer buffer = py::reinterpret_borrow<py::buffer>(value);
  py::buffer_info info = buffer.request();
  if (info.itemsize != 2 || info.format.empty() || info.format.back() != 'H')
    return fromNumpy(buffer, what);
  py::object contiguous =
      py::module_::import("numpy").attr("ascontiguousarray")(value);
  py::buffer_info bits = contiguous.cast<py::buffer>().request();
  rt::HostTensor tensor;
  tensor.dtype = DType::bf16;
  tensor.shape.assign(bits.shape.begin(), bits.shape.end());
  tensor.data.resize(static_cast<size_t>(tensor.numElements() * 2));
  if (!tensor.data.empty())
    std::memcpy(tensor.data.data(), bits.ptr, tensor.data.size());
  return tensor;
}

py::object toNumpy(const rt::HostTensor &tensor) {
  py::module_ numpy = py::module_::import("numpy");
  // One copy, straight into the array numpy allocates.
  py::object array = numpy.attr("empty")(py::tuple(py::cast(tensor.shape)),
                                         numpy.attr(numpyName(tensor.dtype)));
  py::buffer_info info = py::reinterpret_borrow<py::buffer>(array).request(
      /*writable=*/true);
  if (!tensor.data.empty())
    std::memcpy(info.ptr, tensor.data.data(), tensor.data.size());
  return array;
}

} // namespace zero::python
