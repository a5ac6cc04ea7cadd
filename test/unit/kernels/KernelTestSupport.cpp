//===- KernelTestSupport.cpp - Tensors and references for kernel tests ----===//

#include "KernelTestSupport.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>
#include <random>
#include <sstream>

namespace zero::rt::test {

mlir::MLIRContext &context() {
  static mlir::MLIRContext *instance = new mlir::MLIRContext();
  return *instance;
}

mlir::Attribute f64(double value) {
  return mlir::Builder(&context()).getF64FloatAttr(value);
}

mlir::Attribute i64(int64_t value) {
  return mlir::Builder(&context()).getI64IntegerAttr(value);
}

mlir::Attribute unit() { return mlir::UnitAttr::get(&context()); }

mlir::Attribute i64s(std::vector<int64_t> values) {
  return mlir::DenseI64ArrayAttr::get(&context(), values);
}

mlir::DictionaryAttr
dict(std::vector<std::pair<std::string, mlir::Attribute>> entries) {
  mlir::Builder builder(&context());
  std::vector<mlir::NamedAttribute> named;
  for (auto &[key, value] : entries)
    named.push_back(builder.getNamedAttr(key, value));
  return builder.getDictionaryAttr(named);
}

mlir::DictionaryAttr matmulFlags(bool transposeA, bool transposeB, bool exact) {
  std::vector<std::pair<std::string, mlir::Attribute>> flags;
  if (transposeA)
    flags.push_back({"transpose_a", unit()});
  if (transposeB)
    flags.push_back({"transpose_b", unit()});
  if (exact)
    flags.push_back({"exact", unit()});
  return dict(flags);
}

Tensor::Tensor(DType dtype, std::vector<int64_t> shape)
    : spec_{dtype, std::move(shape)} {
  bytes_.assign(static_cast<size_t>(spec_.numElements() * dtypeBytes(dtype)),
                0);
}

double Tensor::at(int64_t i) const {
  switch (spec_.dtype) {
  case DType::i32:
    return static_cast<const int32_t *>(data())[i];
  case DType::i64:
    return static_cast<double>(static_cast<const int64_t *>(data())[i]);
  case DType::i8:
    return static_cast<const int8_t *>(data())[i];
  default:
    return loadAsFloat(data(), spec_.dtype, i);
  }
}

void Tensor::set(int64_t i, double value) {
  switch (spec_.dtype) {
  case DType::i32:
    static_cast<int32_t *>(data())[i] = static_cast<int32_t>(value);
    return;
  case DType::i64:
    static_cast<int64_t *>(data())[i] = static_cast<int64_t>(value);
    return;
  case DType::i8:
    static_cast<int8_t *>(data())[i] = static_cast<int8_t>(value);
    return;
  default:
    storeFromFloat(data(), spec_.dtype, i, static_cast<float>(value));
  }
}

std::vector<double> Tensor::values() const {
  std::vector<double> result(static_cast<size_t>(size()));
  for (int64_t i = 0; i < size(); ++i)
    result[i] = at(i);
  return result;
}

void Tensor::poison() { std::fill(bytes_.begin(), bytes_.end(), 0xff); }

Tensor randomTensor(DType dtype, std::vector<int64_t> shape, uint32_t seed,
                    double lo, double hi) {
  Tensor tensor(dtype, std::move(shape));
  std::mt19937 engine(seed);
  std::uniform_real_distribution<double> uniform(lo, hi);
  for (int64_t i = 0; i < tensor.size(); ++i)
    tensor.set(i, uniform(engine));
  return tensor;
}

Tensor randomIds(DType dtype, std::vector<int64_t> shape, uint32_t seed,
                 int64_t limit) {
  Tensor tensor(dtype, std::move(shape));
  std::mt19937 engine(seed);
  std::uniform_int_distribution<int64_t> uniform(0, limit - 1);
  for (int64_t i = 0; i < tensor.size(); ++i)
    tensor.set(i, static_cast<double>(uniform(engine)));
  return tensor;
}

Tensor fromValues(DType dtype, std::vector<int64_t> shape,
                  const std::vector<double> &values) {
  Tensor tensor(dtype, std::move(shape));
  EXPECT_EQ(static_cast<int64_t>(values.size()), tensor.size());
  for (int64_t i = 0; i < tensor.size() && i < (int64_t)values.size(); ++i)
    tensor.set(i, values[i]);
  return tensor;
}

absl::StatusOr<KernelFn> bindKernel(absl::string_view name,
                                    mlir::DictionaryAttr params,
                                    const std::vector<const Tensor *> &ins,
                                    const std::vector<const Tensor *> &outs) {
  std::vector<TensorSpec> inSpecs, outSpecs;
  for (const Tensor *t : ins)
    inSpecs.push_back(t->spec());
  for (const Tensor *t : outs)
    outSpecs.push_back(t->spec());
  return bindCpuKernel(name, params, inSpecs, outSpecs);
}

absl::Status runKernel(absl::string_view name, mlir::DictionaryAttr params,
                       const std::vector<const Tensor *> &ins,
                       const std::vector<Tensor *> &outs,
                       const KernelContext &ctx) {
  std::vector<const Tensor *> constOuts(outs.begin(), outs.end());
  absl::StatusOr<KernelFn> kernel = bindKernel(name, params, ins, constOuts);
  if (!kernel.ok())
    return kernel.status();
  std::vector<const void *> inPtrs;
  std::vector<void *> outPtrs;
  for (const Tensor *t : ins)
    inPtrs.push_back(t->data());
  for (Tensor *t : outs)
    outPtrs.push_back(t->data());
  return (*kernel)(inPtrs, outPtrs, ctx);
}

::testing::AssertionResult allClose(const Tensor &got,
                                    const std::vector<double> &want,
                                    double atol, double rtol) {
  if (got.size() != static_cast<int64_t>(want.size()))
    return ::testing::AssertionFailure()
           << "size " << got.size() << " vs reference " << want.size();
  int failures = 0;
  double worst = 0.0;
  std::ostringstream message;
  for (int64_t i = 0; i < got.size(); ++i) {
    double value = got.at(i), expected = want[i];
    double error = std::fabs(value - expected);
    bool bothInf = std::isinf(value) && std::isinf(expected) &&
                   (value > 0) == (expected > 0);
    if (bothInf)
      continue;
    if (!(error <= atol + rtol * std::fabs(expected))) {
      if (failures < 5)
        message << "\n  [" << i << "] got " << value << ", want " << expected
                << " (error " << error << ")";
      ++failures;
    }
    if (error > worst || std::isnan(error))
      worst = error;
  }
  if (failures == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << failures << " of " << got.size() << " elements beyond atol " << atol
         << " + rtol " << rtol << " (worst error " << worst << ")"
         << message.str();
}

double relativeTolerance(DType dtype) {
  switch (dtype) {
  case DType::bf16:
    return 8e-3; // Half an ulp is 2^-9 ~ 2e-3; f32 arithmetic adds little.
  case DType::f16:
    return 2e-3; // Half an ulp is 2^-12 ~ 2.4e-4.
  default:
    return 2e-5;
  }
}

::testing::AssertionResult checkGradient(
    const Tensor &x, const std::function<double(const Tensor &)> &loss,
    const std::vector<double> &analytic, double h, double atol, double rtol) {
  if (static_cast<int64_t>(analytic.size()) != x.size())
    return ::testing::AssertionFailure() << "gradient size mismatch";
  int failures = 0;
  std::ostringstream message;
  Tensor probe = x;
  for (int64_t i = 0; i < x.size(); ++i) {
    double original = x.at(i);
    probe.set(i, original + h);
    double upX = probe.at(i), up = loss(probe);
    probe.set(i, original - h);
    double downX = probe.at(i), down = loss(probe);
    probe.set(i, original);
    // Divide by the step actually taken after rounding to the dtype.
    double numeric = (up - down) / (upX - downX);
    double error = std::fabs(numeric - analytic[i]);
    if (!(error <= atol + rtol * std::fabs(numeric))) {
      if (failures < 5)
        message << "\n  [" << i << "] analytic " << analytic[i]
                << ", finite difference " << numeric;
      ++failures;
    }
  }
  if (failures == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << failures << " of " << x.size() << " gradient elements disagree"
         << message.str();
}

double weightedSum(const Tensor &t, const std::vector<double> &weights) {
  double total = 0.0;
  for (int64_t i = 0; i < t.size(); ++i)
    total += weights[i] * t.at(i);
  return total;
}

std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

std::string dtypeLabel(DType dtype) { return std::string(dtypeName(dtype)); }

} // namespace zero::rt::test
