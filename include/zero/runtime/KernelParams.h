//===- KernelParams.h - A launch's attributes as plain values ---*- C++ -*-===//
//
// The kernels read their attributes (eps, lr, the schedule, a slice's grid)
// at bind time. The executor converts a zrt.launch's `params` dictionary to
// these plain values once, on the host, and the backends read only them.
//
// Why not the MLIR dictionary itself: the CUDA backend is a module with its
// own copies of the static libraries it links (CudaBackendModule.h), and in
// the release bundle MLIR is one of them. Attribute kinds are told apart by
// TypeIDs that are per copy, so the module's MLIR cannot inspect an
// attribute the program's MLIR made (an `isa<IntegerAttr>` is false, and
// printing one falls into an unreachable). Nothing of MLIR crosses into the
// module; test/e2e/cuda-module-no-mlir.test holds it to that.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_KERNELPARAMS_H
#define ZERO_RUNTIME_KERNELPARAMS_H

#include "absl/strings/string_view.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mlir {
class DictionaryAttr;
} // namespace mlir

namespace zero::rt {

/// One attribute of a launch.
struct KernelParam {
  enum class Kind {
    /// A unit attribute: present or not.
    unit,
    boolean,
    integer,
    real,
    string,
    /// A dense i64 array, or an array of integers.
    integers,
    /// Anything else; the readers refuse it, quoting `text`.
    other
  };
  Kind kind = Kind::other;
  bool boolean = false;
  int64_t integer = 0;
  double real = 0.0;
  std::string string;
  std::vector<int64_t> integers;
  /// The attribute as MLIR prints it, for messages ("got 2.5 : f32").
  std::string text;
};

/// A launch's attributes by name, in the dictionary's order.
class KernelParams {
public:
  KernelParams() = default;
  /// Converts an op's dictionary (a null one has no entries). Implicit, so
  /// that host code and tests pass a dictionary where params are taken;
  /// defined in the CPU kernel library, outside what the CUDA module links.
  KernelParams(mlir::DictionaryAttr attrs);

  /// The attribute `key`, or null.
  const KernelParam *find(absl::string_view key) const {
    for (const auto &[name, value] : entries)
      if (name == key)
        return &value;
    return nullptr;
  }
  bool contains(absl::string_view key) const { return find(key) != nullptr; }
  bool empty() const { return entries.empty(); }
  void insert(std::string key, KernelParam value) {
    entries.emplace_back(std::move(key), std::move(value));
  }

private:
  std::vector<std::pair<std::string, KernelParam>> entries;
};

} // namespace zero::rt

#endif // ZERO_RUNTIME_KERNELPARAMS_H
