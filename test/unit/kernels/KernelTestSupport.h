//===- KernelTestSupport.h - Tensors and references for tests --*- C++ -*-===//
//
// Tests run kernels through bindCpuKernel on host tensors of any dtype and
// compare with references computed in double from the values the tensors
// actually hold (so a bf16 input's rounding is part of the reference and
// only the kernel's own arithmetic and output rounding are tolerated).
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_TEST_UNIT_KERNELS_KERNELTESTSUPPORT_H
#define ZERO_TEST_UNIT_KERNELS_KERNELTESTSUPPORT_H

#include "zero/runtime/CpuKernels.h"

#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace zero::rt::test {

mlir::MLIRContext &context();

mlir::Attribute f64(double value);
mlir::Attribute i64(int64_t value);
mlir::Attribute unit();
mlir::Attribute i64s(std::vector<int64_t> values);
mlir::DictionaryAttr
dict(std::vector<std::pair<std::string, mlir::Attribute>> entries);
/// The transpose_a, transpose_b and (GELU's erf form) exact flags of a
/// matmul or a fused matmul.
mlir::DictionaryAttr matmulFlags(bool transposeA, bool transposeB,
                                 bool exact = false);

/// A host tensor: a spec and bytes.
class Tensor {
public:
  Tensor() = default;
  Tensor(DType dtype, std::vector<int64_t> shape);

  const TensorSpec &spec() const { return spec_; }
  DType dtype() const { return spec_.dtype; }
  const std::vector<int64_t> &shape() const { return spec_.shape; }
  int64_t size() const { return spec_.numElements(); }
  void *data() { return bytes_.data(); }
  const void *data() const { return bytes_.data(); }

  /// Element `i` as a double (floats through DType.h, ints exactly).
  double at(int64_t i) const;
  /// Stores `value`, rounding to the dtype.
  void set(int64_t i, double value);
  std::vector<double> values() const;
  bool sameBytes(const Tensor &other) const { return bytes_ == other.bytes_; }
  /// Fills every byte with 0xff: a NaN for floats, so that a kernel that
  /// leaves an element unwritten is caught.
  void poison();

private:
  TensorSpec spec_{DType::f32, {}};
  std::vector<uint8_t> bytes_;
};

/// Uniform values in [lo, hi), rounded to the dtype; the same seed gives the
/// same tensor.
Tensor randomTensor(DType dtype, std::vector<int64_t> shape, uint32_t seed,
                    double lo = -1.0, double hi = 1.0);
/// Uniform integers in [0, limit).
Tensor randomIds(DType dtype, std::vector<int64_t> shape, uint32_t seed,
                 int64_t limit);
Tensor fromValues(DType dtype, std::vector<int64_t> shape,
                  const std::vector<double> &values);

absl::StatusOr<KernelFn> bindKernel(absl::string_view name,
                                    mlir::DictionaryAttr params,
                                    const std::vector<const Tensor *> &ins,
                                    const std::vector<const Tensor *> &outs);

/// Binds and calls once; the status of whichever fails first.
absl::Status runKernel(absl::string_view name, mlir::DictionaryAttr params,
                       const std::vector<const Tensor *> &ins,
                       const std::vector<Tensor *> &outs,
                       const KernelContext &ctx = {});

/// |got - want| <= atol + rtol * |want| for every element (NaN fails).
::testing::AssertionResult allClose(const Tensor &got,
                                    const std::vector<double> &want,
                                    double atol, double rtol);

/// Output rounding plus f32 arithmetic: the tolerance a dtype's results get
/// against a double reference.
double relativeTolerance(DType dtype);

/// Compares `analytic` with central differences of `loss` in each element
/// of `x`: (loss(x + h e_i) - loss(x - h e_i)) / 2h.
::testing::AssertionResult checkGradient(
    const Tensor &x, const std::function<double(const Tensor &)> &loss,
    const std::vector<double> &analytic, double h, double atol, double rtol);

/// sum_i weights[i] * t[i] in double: a scalar loss whose gradient with
/// respect to t is `weights`.
double weightedSum(const Tensor &t, const std::vector<double> &weights);

/// Row-major strides of `shape`.
std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape);

std::string dtypeLabel(DType dtype);

} // namespace zero::rt::test

#endif // ZERO_TEST_UNIT_KERNELS_KERNELTESTSUPPORT_H
