//===- GradientCheckTest.cpp - train-autodiff against finite differences --===//
//
// Each case is a tiny training step: trainable parameters feed the op under
// test, and the loss is reduce_sum(op(params) * R) with R a fixed random
// frozen parameter, so the loss depends on every output element with a
// different weight (a plain sum would hide a permuted or transposed
// gradient). The step goes through train-autodiff and
// zero-pipeline{stage=0 ranks=1 lower-to-runtime=true} and runs on the
// runtime's executor. With SGD, lr = 1 and no weight decay, one step
// leaves param - grad in each parameter, so the analytic gradient is
// old - new; the numeric one is the central difference of the loss the step
// returns, each evaluation started from the restored parameters.
//
// Tolerance: |num - ana| <= 2e-3 + 2e-2 |ana|, with h = 1e-2 and values of
// order 1. The loss is a sum of a few dozen f32 terms of order 1, so its
// rounding error is about 30 * 6e-8 * 2 = 4e-6, and 2e-4 once divided by
// 2h: the absolute term leaves a factor 10. The truncation error of the
// central difference is h^2 |f'''| / 6, about 2e-5 |f'''|, which the relative
// term covers for the smooth ops here (inputs are kept away from the kinks
// and poles of relu, log, sqrt, rsqrt and div); it also covers the bf16
// rounding of the gradient in the cast case (2^-9, 2e-3). A wrong rule (a
// sign, a missing factor, a transposed or unsummed operand) is off by
// O(|ana|), far outside.
//
//===----------------------------------------------------------------------===//

#include "zero/dialects/dist/DistDialect.h"
#include "zero/dialects/train/TrainDialect.h"
#include "zero/dialects/train/TrainGradients.h"
#include "zero/dialects/train/TrainOps.h"
#include "zero/dialects/zrt/ZrtDialect.h"
#include "zero/dialects/zrt/ZrtOps.h"
#include "zero/passes/Passes.h"
#include "zero/runtime/Communicator.h"
#include "zero/runtime/CpuKernels.h"
#include "zero/runtime/Executor.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace zero;
using namespace zero::rt;

namespace {

//===----------------------------------------------------------------------===//
// One MPI communicator for the whole binary
//===----------------------------------------------------------------------===//

// MPI may be initialized and finalized once per process, so the single-rank
// communicator outlives every test.
Communicator *theComm = nullptr;

class MpiEnvironment : public ::testing::Environment {
public:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Communicator>> created =
        createMpiCommunicator(CommOptions{});
    ASSERT_TRUE(created.ok()) << created.status().message();
    comm = std::move(*created);
    ASSERT_EQ(comm->size(), 1);
    theComm = comm.get();
    // The tensors are tiny: threads would only add start-up latency.
    setCpuKernelThreads(1);
  }
  void TearDown() override {
    theComm = nullptr;
    comm.reset();
    finalizeMpi();
  }

private:
  std::unique_ptr<Communicator> comm;
};

//===----------------------------------------------------------------------===//
// Cases
//===----------------------------------------------------------------------===//

/// How a tensor's initial values are drawn.
enum class Dist {
  uniform,      // U(-1, 1)
  positive,     // U(0.5, 1.5): log, sqrt, rsqrt, divisors
  awayFromZero, // +-U(0.2, 1): relu's kink stays farther than h
  quantized,    // multiples of 2^-5 in [-1, 1]: exact in bf16, even +- h
  ids,          // integers in [0, bound)
};

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  Dist dist = Dist::uniform;
  std::string elementType = "f32";
  int64_t bound = 0; // For Dist::ids.
};

struct Case {
  std::string name;
  /// Trainable parameters, loaded under their own name.
  std::vector<Tensor> params;
  /// Frozen inputs of the op (ids, labels), loaded under their own name.
  std::vector<Tensor> fixed;
  /// Forward ops from the loaded values to `result`.
  std::string body;
  std::string result;
  /// Shape of the f32 `result`; empty for a scalar.
  std::vector<int64_t> resultShape;
  double h = 1e-2;
};

std::string tensorType(const std::vector<int64_t> &shape,
                       const std::string &elementType) {
  std::string text = "tensor<";
  for (int64_t extent : shape)
    text += std::to_string(extent) + "x";
  return text + elementType + ">";
}

std::string tensorType(const Tensor &tensor) {
  return tensorType(tensor.shape, tensor.elementType);
}

/// The step: loads, the case's body, and loss = reduce_sum(result * R).
std::string buildModule(const Case &c) {
  std::ostringstream os;
  os << "module @" << c.name << " {\n";
  for (const Tensor &param : c.params)
    os << "  train.param @" << param.name << " param : " << tensorType(param)
       << " init zeros\n";
  for (const Tensor &tensor : c.fixed)
    os << "  train.param @" << tensor.name << " frozen : " << tensorType(tensor)
       << " init zeros\n";
  std::string resultType = tensorType(c.resultShape, "f32");
  os << "  train.param @projection frozen : " << resultType << " init zeros\n";
  os << "  train.optimizer @sgd sgd lr 1.0\n";
  os << "  func.func @step() -> tensor<f32> attributes {train.step} {\n";
  for (const Tensor &tensor : c.params)
    os << "    %" << tensor.name << " = train.load @" << tensor.name << " : "
       << tensorType(tensor) << "\n";
  for (const Tensor &tensor : c.fixed)
    os << "    %" << tensor.name << " = train.load @" << tensor.name << " : "
       << tensorType(tensor) << "\n";
  os << "    %projection = train.load @projection : " << resultType << "\n";
  os << c.body;
  os << "    %weighted = train.mul %" << c.result
     << ", %projection : " << resultType << "\n";
  std::string loss = "weighted";
  if (!c.resultShape.empty()) {
    os << "    %loss = train.reduce_sum %weighted dims [";
    for (size_t dim = 0; dim < c.resultShape.size(); ++dim)
      os << (dim ? ", " : "") << dim;
    os << "] : " << resultType << " -> tensor<f32>\n";
    loss = "loss";
  }
  os << "    train.minimize %" << loss << " : tensor<f32>\n";
  os << "    return %" << loss << " : tensor<f32>\n";
  os << "  }\n}\n";
  return os.str();
}

std::vector<double> drawValues(const Tensor &tensor, std::mt19937_64 &rng) {
  int64_t count = 1;
  for (int64_t extent : tensor.shape)
    count *= extent;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<double> values(count);
  for (double &value : values) {
    double u = unit(rng);
    switch (tensor.dist) {
    case Dist::uniform:
      value = 2 * u - 1;
      break;
    case Dist::positive:
      value = 0.5 + u;
      break;
    case Dist::awayFromZero:
      value = (unit(rng) < 0.5 ? -1 : 1) * (0.2 + 0.8 * u);
      break;
    case Dist::quantized:
      value = std::round((2 * u - 1) * 32) / 32;
      break;
    case Dist::ids:
      value = std::floor(u * static_cast<double>(tensor.bound));
      break;
    }
  }
  return values;
}

//===----------------------------------------------------------------------===//
// Compiling and running a step
//===----------------------------------------------------------------------===//

/// The runtime has no kernels for arith ops, so once train-autodiff has
/// built the backward from the arith rules, the forward's arith ops become
/// the train ops that compute the same thing.
void replaceArithWithTrain(mlir::ModuleOp module) {
  llvm::SmallVector<mlir::Operation *> arithOps;
  module.walk([&](mlir::Operation *op) {
    if (mlir::isa<mlir::arith::AddFOp, mlir::arith::SubFOp, mlir::arith::MulFOp,
                  mlir::arith::DivFOp, mlir::arith::NegFOp>(op))
      arithOps.push_back(op);
  });
  for (mlir::Operation *op : arithOps) {
    mlir::OpBuilder b(op);
    mlir::Location loc = op->getLoc();
    mlir::Type type = op->getResult(0).getType();
    mlir::Value replacement;
    if (mlir::isa<mlir::arith::NegFOp>(op))
      replacement = b.create<train::NegOp>(loc, type, op->getOperand(0));
    else if (mlir::isa<mlir::arith::AddFOp>(op))
      replacement = b.create<train::AddOp>(loc, type, op->getOperand(0),
                                           op->getOperand(1));
    else if (mlir::isa<mlir::arith::SubFOp>(op))
      replacement = b.create<train::SubOp>(loc, type, op->getOperand(0),
                                           op->getOperand(1));
    else if (mlir::isa<mlir::arith::MulFOp>(op))
      replacement = b.create<train::MulOp>(loc, type, op->getOperand(0),
                                           op->getOperand(1));
    else
      replacement = b.create<train::DivOp>(loc, type, op->getOperand(0),
                                           op->getOperand(1));
    op->getResult(0).replaceAllUsesWith(replacement);
    op->erase();
  }
}

class StepRunner {
public:
  /// Compiles `c`'s step and builds its executor; the error, if any, is in
  /// `error()`.
  explicit StepRunner(const Case &c) {
    mlir::DialectRegistry registry;
    registry.insert<dist::DistDialect, train::TrainDialect, zrt::ZrtDialect,
                    mlir::arith::ArithDialect, mlir::func::FuncDialect>();
    train::registerGradientInterfaceExternalModels(registry);
    context = std::make_unique<mlir::MLIRContext>(registry);
    mlir::ScopedDiagnosticHandler handler(
        context.get(), [&](mlir::Diagnostic &diagnostic) {
          llvm::raw_string_ostream os(diagnostics);
          os << diagnostic << "\n";
          return mlir::success();
        });
    std::string text = buildModule(c);
    module = mlir::parseSourceString<mlir::ModuleOp>(text, context.get());
    if (!module) {
      failure = "cannot parse:\n" + text + diagnostics;
      return;
    }
    mlir::PassManager autodiff(context.get());
    autodiff.addPass(createTrainAutodiff());
    if (mlir::failed(autodiff.run(*module))) {
      failure = "train-autodiff failed:\n" + text + diagnostics;
      return;
    }
    replaceArithWithTrain(*module);
    mlir::PassManager pm(context.get());
    ZeroPipelineOptions options;
    options.stage = 0;
    options.ranks = 1;
    options.lowerToRuntime = true;
    pm.addPass(createZeroPipeline(options));
    if (mlir::failed(pm.run(*module))) {
      failure = "cannot compile:\n" + text + diagnostics;
      return;
    }
    auto programs = module->getOps<zrt::ProgramOp>();
    if (programs.empty()) {
      failure = "the pipeline produced no zrt.program";
      return;
    }
    absl::StatusOr<std::unique_ptr<Executor>> created =
        Executor::create(*programs.begin(), *theComm);
    if (!created.ok()) {
      failure = std::string(created.status().message());
      return;
    }
    executor = std::move(*created);
  }

  const std::string &error() const { return failure; }

  /// Index of buffer `name`; fails the test when it is missing.
  int buffer(const std::string &name) {
    int index = executor->findBuffer(name);
    EXPECT_GE(index, 0) << "no buffer @" << name;
    return index;
  }

  void write(int index, const std::vector<double> &values) {
    const BufferDecl &decl = executor->buffers()[index];
    void *data = executor->bufferData(index);
    ASSERT_EQ(decl.spec.numElements(), static_cast<int64_t>(values.size()));
    for (size_t i = 0; i < values.size(); ++i) {
      if (isFloat(decl.spec.dtype)) {
        storeFromFloat(data, decl.spec.dtype, i, static_cast<float>(values[i]));
      } else if (decl.spec.dtype == DType::i32) {
        static_cast<int32_t *>(data)[i] = static_cast<int32_t>(values[i]);
      } else {
        ASSERT_EQ(decl.spec.dtype, DType::i64) << "@" << decl.name;
        static_cast<int64_t *>(data)[i] = static_cast<int64_t>(values[i]);
      }
    }
  }

  std::vector<double> read(int index) {
    const BufferDecl &decl = executor->buffers()[index];
    std::vector<double> values(decl.spec.numElements());
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = loadAsFloat(executor->bufferData(index), decl.spec.dtype, i);
    return values;
  }

  /// Runs one step and returns the loss it computed before its update.
  double step() {
    absl::Status status = executor->runStep(1);
    EXPECT_TRUE(status.ok()) << status.message();
    return read(buffer("output0"))[0];
  }

private:
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::unique_ptr<Executor> executor;
  std::string diagnostics;
  std::string failure;
};

uint64_t seedOf(const std::string &name) {
  uint64_t hash = 1469598103934665603ull; // FNV-1a: stable across platforms.
  for (char ch : name)
    hash = (hash ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  return hash;
}

// GoogleTest names a failing parameter by it rather than by its bytes.
void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

class GradientCheck : public ::testing::TestWithParam<Case> {};

TEST_P(GradientCheck, MatchesFiniteDifferences) {
  const Case &c = GetParam();
  ASSERT_NE(theComm, nullptr);
  StepRunner runner(c);
  ASSERT_TRUE(runner.error().empty()) << runner.error();

  std::mt19937_64 rng(seedOf(c.name));
  std::vector<int> params;
  std::vector<std::vector<double>> initial;
  for (const Tensor &param : c.params) {
    params.push_back(runner.buffer(param.name));
    runner.write(params.back(), drawValues(param, rng));
    // The buffer holds the f32 rounding of the draw: start from that.
    initial.push_back(runner.read(params.back()));
  }
  for (const Tensor &tensor : c.fixed)
    runner.write(runner.buffer(tensor.name), drawValues(tensor, rng));
  Tensor projection{"projection", c.resultShape};
  runner.write(runner.buffer("projection"), drawValues(projection, rng));
  auto restore = [&] {
    for (size_t p = 0; p < params.size(); ++p)
      runner.write(params[p], initial[p]);
  };

  runner.step();
  std::vector<std::vector<double>> analytic;
  double largest = 0;
  for (size_t p = 0; p < params.size(); ++p) {
    std::vector<double> updated = runner.read(params[p]);
    std::vector<double> grad(updated.size());
    for (size_t i = 0; i < grad.size(); ++i) {
      grad[i] = initial[p][i] - updated[i];
      largest = std::max(largest, std::fabs(grad[i]));
    }
    analytic.push_back(std::move(grad));
  }
  // An all-zero gradient would pass against a constant loss: make sure the
  // case exercises something.
  EXPECT_GT(largest, 1e-2) << c.name << ": the gradient is (nearly) zero";

  for (size_t p = 0; p < params.size(); ++p) {
    for (size_t i = 0; i < initial[p].size(); ++i) {
      // The perturbed value is rounded to f32: divide by the step actually
      // taken, not by 2h.
      std::vector<double> values = initial[p];
      double up = static_cast<float>(values[i] + c.h);
      double down = static_cast<float>(values[i] - c.h);
      restore();
      values[i] = up;
      runner.write(params[p], values);
      double lossUp = runner.step();
      restore();
      values[i] = down;
      runner.write(params[p], values);
      double lossDown = runner.step();
      double numeric = (lossUp - lossDown) / (up - down);
      double ana = analytic[p][i];
      EXPECT_LE(std::fabs(numeric - ana), 2e-3 + 2e-2 * std::fabs(ana))
          << c.name << ": d loss / d " << c.params[p].name << "[" << i
          << "]: numeric " << numeric << ", train-autodiff " << ana;
    }
  }
}

//===----------------------------------------------------------------------===//
// The cases
//===----------------------------------------------------------------------===//

Tensor param(const std::string &name, std::vector<int64_t> shape,
             Dist dist = Dist::uniform) {
  return Tensor{name, std::move(shape), dist};
}

/// `%y = train.<op> %x` on one parameter of shape 2x3.
Case unary(const std::string &op, Dist dist = Dist::uniform) {
  return Case{op,  {param("x", {2, 3}, dist)},
              {},  "    %y = train." + op + " %x : tensor<2x3xf32>\n",
              "y", {2, 3}};
}

/// `%z = <op> %a, %b` on two parameters of shape 2x3.
Case binary(const std::string &name, const std::string &op,
            Dist rhsDist = Dist::uniform) {
  return Case{name, {param("a", {2, 3}), param("b", {2, 3}, rhsDist)},
              {},   "    %z = " + op + " %a, %b : tensor<2x3xf32>\n",
              "z",  {2, 3}};
}

/// A matmul of parameters `a` and `b` with the given flags.
Case matmul(const std::string &name, std::vector<int64_t> a,
            std::vector<int64_t> b, const std::string &flags,
            std::vector<int64_t> result) {
  std::string body = "    %c = train.matmul %a, %b" + flags + " : " +
                     tensorType(a, "f32") + ", " + tensorType(b, "f32") +
                     " -> " + tensorType(result, "f32") + "\n";
  return Case{name, {param("a", a), param("b", b)}, {}, body, "c", result};
}

Case reduce(const std::string &name, const std::string &op,
            std::vector<int64_t> shape, const std::string &dims,
            std::vector<int64_t> result) {
  std::string body = "    %r = train." + op + " %x dims " + dims + " : " +
                     tensorType(shape, "f32") + " -> " +
                     tensorType(result, "f32") + "\n";
  return Case{name, {param("x", shape)}, {}, body, "r", result};
}

Case transpose(const std::string &name, std::vector<int64_t> shape,
               const std::string &permutation, std::vector<int64_t> result) {
  std::string body = "    %t = train.transpose %x permutation " + permutation +
                     " : " + tensorType(shape, "f32") + " -> " +
                     tensorType(result, "f32") + "\n";
  return Case{name, {param("x", shape)}, {}, body, "t", result};
}

std::vector<Case> allCases() {
  std::vector<Case> cases;
  // Elementwise unary.
  cases.push_back(unary("neg"));
  cases.push_back(unary("exp"));
  cases.push_back(unary("log", Dist::positive));
  cases.push_back(unary("sqrt", Dist::positive));
  cases.push_back(unary("rsqrt", Dist::positive));
  cases.push_back(unary("tanh"));
  cases.push_back(unary("relu", Dist::awayFromZero));
  cases.push_back(unary("gelu"));
  cases.push_back(unary("sigmoid"));
  cases.push_back(unary("silu"));
  cases.push_back(unary("softmax"));
  // Elementwise binary, train and arith.
  cases.push_back(binary("add", "train.add"));
  cases.push_back(binary("sub", "train.sub"));
  cases.push_back(binary("mul", "train.mul"));
  cases.push_back(binary("div", "train.div", Dist::positive));
  cases.push_back(binary("arith_addf", "arith.addf"));
  cases.push_back(binary("arith_subf", "arith.subf"));
  cases.push_back(binary("arith_mulf", "arith.mulf"));
  cases.push_back(binary("arith_divf", "arith.divf", Dist::positive));
  cases.push_back(Case{"arith_negf",
                       {param("x", {2, 3})},
                       {},
                       "    %y = arith.negf %x : tensor<2x3xf32>\n",
                       "y",
                       {2, 3}});
  // One value used twice: the gradients of the uses are summed.
  cases.push_back(Case{"mul_self",
                       {param("x", {2, 3})},
                       {},
                       "    %y = train.mul %x, %x : tensor<2x3xf32>\n",
                       "y",
                       {2, 3}});
  cases.push_back(Case{"fan_out",
                       {param("x", {2, 3}), param("w", {3, 3})},
                       {},
                       "    %t = train.tanh %x : tensor<2x3xf32>\n"
                       "    %m = train.matmul %t, %w : tensor<2x3xf32>, "
                       "tensor<3x3xf32> -> tensor<2x3xf32>\n"
                       "    %e = train.exp %t : tensor<2x3xf32>\n"
                       "    %y = train.add %m, %e : tensor<2x3xf32>\n",
                       "y",
                       {2, 3}});
  cases.push_back(Case{"scale",
                       {param("x", {2, 3})},
                       {},
                       "    %y = train.scale %x by -1.5 : tensor<2x3xf32>\n",
                       "y",
                       {2, 3}});
  // Bias broadcast over one and over two leading dimensions.
  cases.push_back(Case{"bias_add_2d",
                       {param("x", {3, 4}), param("bias", {4})},
                       {},
                       "    %y = train.bias_add %x, %bias : tensor<3x4xf32>, "
                       "tensor<4xf32>\n",
                       "y",
                       {3, 4}});
  cases.push_back(Case{"bias_add_3d",
                       {param("x", {2, 3, 4}), param("bias", {4})},
                       {},
                       "    %y = train.bias_add %x, %bias : tensor<2x3x4xf32>, "
                       "tensor<4xf32>\n",
                       "y",
                       {2, 3, 4}});
  // A finite fill, and -inf before a softmax as attention uses it.
  cases.push_back(Case{"causal_mask",
                       {param("x", {2, 3, 3})},
                       {},
                       "    %y = train.causal_mask %x fill -2.0 : "
                       "tensor<2x3x3xf32>\n",
                       "y",
                       {2, 3, 3}});
  cases.push_back(Case{"causal_mask_softmax",
                       {param("x", {2, 3, 4})},
                       {},
                       "    %m = train.causal_mask %x fill 0xFFF0000000000000 "
                       ": tensor<2x3x4xf32>\n"
                       "    %y = train.softmax %m : tensor<2x3x4xf32>\n",
                       "y",
                       {2, 3, 4}});
  // Dropout at step 1: a fixed mask, so a linear map whose gradient is the
  // same mask and scale.
  cases.push_back(Case{"dropout",
                       {param("x", {4, 6})},
                       {},
                       "    %y = train.dropout %x rate 3.000000e-01 stream 0 : "
                       "tensor<4x6xf32>\n",
                       "y",
                       {4, 6}});
  // A padding mask with a finite fill, and with -inf before a safe softmax:
  // keep ids in [0, 2) leave some keys, and perhaps whole rows, masked.
  cases.push_back(Case{"key_mask",
                       {param("x", {2, 3, 4})},
                       {Tensor{"keep", {2, 4}, Dist::ids, "i32", 2}},
                       "    %y = train.key_mask %x, %keep fill -2.0 : "
                       "tensor<2x3x4xf32>, tensor<2x4xi32>\n",
                       "y",
                       {2, 3, 4}});
  cases.push_back(Case{"key_mask_safe_softmax",
                       {param("x", {2, 3, 4})},
                       {Tensor{"keep", {2, 4}, Dist::ids, "i32", 2}},
                       "    %m = train.key_mask %x, %keep fill "
                       "0xFFF0000000000000 : tensor<2x3x4xf32>, "
                       "tensor<2x4xi32>\n"
                       "    %y = train.softmax %m safe : tensor<2x3x4xf32>\n",
                       "y",
                       {2, 3, 4}});
  // Matmul: every transpose flag, batched, and a 2-D weight shared by
  // batches.
  cases.push_back(matmul("matmul", {3, 4}, {4, 2}, "", {3, 2}));
  cases.push_back(
      matmul("matmul_transpose_a", {4, 3}, {4, 2}, " transpose_a", {3, 2}));
  cases.push_back(
      matmul("matmul_transpose_b", {3, 4}, {2, 4}, " transpose_b", {3, 2}));
  cases.push_back(matmul("matmul_transpose_ab", {4, 3}, {2, 4},
                         " transpose_a transpose_b", {3, 2}));
  cases.push_back(
      matmul("matmul_batched", {2, 3, 4}, {2, 4, 2}, "", {2, 3, 2}));
  cases.push_back(matmul("matmul_batched_transpose_a", {2, 4, 3}, {2, 4, 2},
                         " transpose_a", {2, 3, 2}));
  cases.push_back(matmul("matmul_batched_transpose_b", {2, 3, 4}, {2, 2, 4},
                         " transpose_b", {2, 3, 2}));
  cases.push_back(matmul("matmul_batched_transpose_ab", {2, 4, 3}, {2, 2, 4},
                         " transpose_a transpose_b", {2, 3, 2}));
  cases.push_back(matmul("matmul_shared", {2, 3, 4}, {4, 2}, "", {2, 3, 2}));
  cases.push_back(matmul("matmul_shared_transpose_a", {2, 4, 3}, {4, 2},
                         " transpose_a", {2, 3, 2}));
  cases.push_back(matmul("matmul_shared_transpose_b", {2, 3, 4}, {2, 4},
                         " transpose_b", {2, 3, 2}));
  cases.push_back(matmul("matmul_shared_transpose_ab", {2, 4, 3}, {2, 4},
                         " transpose_a transpose_b", {2, 3, 2}));
  cases.push_back(
      matmul("matmul_shared_4d", {2, 2, 3, 4}, {4, 2}, "", {2, 2, 3, 2}));
  // Fused attention, with and without the causal mask: query, key and value
  // all trainable, two slices (batch x heads) of 4 positions by 3.
  for (bool causal : {false, true})
    cases.push_back(Case{
        causal ? "attention_causal" : "attention",
        {param("q", {2, 4, 3}), param("k", {2, 4, 3}), param("v", {2, 4, 3})},
        {},
        std::string("    %y, %lse = train.attention %q, %k, %v scale "
                    "7.000000e-01") +
            (causal ? " causal" : "") +
            " : tensor<2x4x3xf32> -> tensor<2x4xf32>\n",
        "y",
        {2, 4, 3}});
  // Input, scale and shift of a layer norm all trainable.
  cases.push_back(Case{
      "layer_norm",
      {param("x", {2, 3, 4}), param("gamma", {4}), param("beta", {4})},
      {},
      "    %y, %mean, %rstd = train.layer_norm %x, %gamma, %beta eps 1.0e-05 "
      ": tensor<2x3x4xf32>, tensor<4xf32> -> tensor<2x3xf32>\n",
      "y",
      {2, 3, 4}});
  // Ids repeat (the table gradient accumulates) and miss rows (zero
  // gradient).
  cases.push_back(
      Case{"embedding",
           {param("table", {5, 3})},
           {Tensor{"ids", {2, 4}, Dist::ids, "i32", 5}},
           "    %y = train.embedding %table, %ids : "
           "tensor<5x3xf32>, tensor<2x4xi32> -> tensor<2x4x3xf32>\n",
           "y",
           {2, 4, 3}});
  cases.push_back(Case{"softmax_cross_entropy",
                       {param("logits", {3, 4})},
                       {Tensor{"labels", {3}, Dist::ids, "i32", 4}},
                       "    %y = train.softmax_cross_entropy %logits, %labels "
                       ": tensor<3x4xf32>, tensor<3xi32> -> tensor<f32>\n",
                       "y",
                       {}});
  cases.push_back(Case{"softmax_cross_entropy_3d",
                       {param("logits", {2, 2, 5})},
                       {Tensor{"labels", {2, 2}, Dist::ids, "i32", 5}},
                       "    %y = train.softmax_cross_entropy %logits, %labels "
                       ": tensor<2x2x5xf32>, tensor<2x2xi32> -> tensor<f32>\n",
                       "y",
                       {}});
  // Reductions over leading, middle, trailing and several dimensions.
  cases.push_back(
      reduce("reduce_sum_dim0", "reduce_sum", {2, 3, 4}, "[0]", {3, 4}));
  cases.push_back(
      reduce("reduce_sum_dim1", "reduce_sum", {2, 3, 4}, "[1]", {2, 4}));
  cases.push_back(
      reduce("reduce_sum_dim2", "reduce_sum", {2, 3, 4}, "[2]", {2, 3}));
  cases.push_back(
      reduce("reduce_sum_dims02", "reduce_sum", {2, 3, 4}, "[0, 2]", {3}));
  cases.push_back(
      reduce("reduce_mean_dim1", "reduce_mean", {2, 3, 4}, "[1]", {2, 4}));
  cases.push_back(
      reduce("reduce_mean_dims01", "reduce_mean", {2, 3, 4}, "[0, 1]", {4}));
  cases.push_back(
      reduce("reduce_mean_dim2", "reduce_mean", {2, 3, 4}, "[2]", {2, 3}));
  cases.push_back(Case{"expand_dim0",
                       {param("x", {3, 2})},
                       {},
                       "    %y = train.expand %x dims [0] : tensor<3x2xf32> -> "
                       "tensor<4x3x2xf32>\n",
                       "y",
                       {4, 3, 2}});
  cases.push_back(Case{"expand_dims13",
                       {param("x", {3, 2})},
                       {},
                       "    %y = train.expand %x dims [1, 3] : tensor<3x2xf32> "
                       "-> tensor<3x2x2x2xf32>\n",
                       "y",
                       {3, 2, 2, 2}});
  cases.push_back(Case{"reshape",
                       {param("x", {2, 6})},
                       {},
                       "    %y = train.reshape %x : tensor<2x6xf32> -> "
                       "tensor<3x2x2xf32>\n",
                       "y",
                       {3, 2, 2}});
  // Permutations that are their own inverse and ones that are not.
  cases.push_back(transpose("transpose_10", {3, 4}, "[1, 0]", {4, 3}));
  cases.push_back(
      transpose("transpose_021", {2, 3, 4}, "[0, 2, 1]", {2, 4, 3}));
  cases.push_back(
      transpose("transpose_201", {2, 3, 4}, "[2, 0, 1]", {4, 2, 3}));
  cases.push_back(
      transpose("transpose_120", {2, 3, 4}, "[1, 2, 0]", {3, 4, 2}));
  cases.push_back(
      transpose("transpose_1302", {2, 3, 4, 2}, "[1, 3, 0, 2]", {3, 2, 2, 4}));
  // Slices of a leading, middle and trailing dimension; two slices of one
  // tensor (their padded gradients are summed), and concats whose operand
  // gradients are slices, one of them the rotate-half of a rotary embedding.
  cases.push_back(Case{"slice_dim0",
                       {param("x", {4, 3})},
                       {},
                       "    %y = train.slice %x dim 0 offset 1 : "
                       "tensor<4x3xf32> -> tensor<2x3xf32>\n",
                       "y",
                       {2, 3}});
  cases.push_back(Case{"slice_dim1",
                       {param("x", {2, 5, 3})},
                       {},
                       "    %y = train.slice %x dim 1 offset 2 : "
                       "tensor<2x5x3xf32> -> tensor<2x3x3xf32>\n",
                       "y",
                       {2, 3, 3}});
  cases.push_back(Case{"slice_two_parts",
                       {param("x", {2, 6})},
                       {},
                       "    %a = train.slice %x dim 1 offset 0 : "
                       "tensor<2x6xf32> -> tensor<2x3xf32>\n"
                       "    %b = train.slice %x dim 1 offset 3 : "
                       "tensor<2x6xf32> -> tensor<2x3xf32>\n"
                       "    %y = train.mul %a, %b : tensor<2x3xf32>\n",
                       "y",
                       {2, 3}});
  cases.push_back(Case{"pad",
                       {param("x", {2, 2})},
                       {},
                       "    %y = train.pad %x dim 1 offset 1 : "
                       "tensor<2x2xf32> -> tensor<2x4xf32>\n",
                       "y",
                       {2, 4}});
  cases.push_back(Case{
      "concat_three",
      {param("a", {2, 1, 2}), param("b", {2, 3, 2}), param("c", {2, 2, 2})},
      {},
      "    %y = train.concat %a, %b, %c dim 1 : "
      "tensor<2x1x2xf32>, tensor<2x3x2xf32>, "
      "tensor<2x2x2xf32> -> tensor<2x6x2xf32>\n",
      "y",
      {2, 6, 2}});
  cases.push_back(Case{"rotate_half",
                       {param("x", {2, 3, 4})},
                       {},
                       "    %lo = train.slice %x dim 2 offset 0 : "
                       "tensor<2x3x4xf32> -> tensor<2x3x2xf32>\n"
                       "    %hi = train.slice %x dim 2 offset 2 : "
                       "tensor<2x3x4xf32> -> tensor<2x3x2xf32>\n"
                       "    %neg = train.neg %hi : tensor<2x3x2xf32>\n"
                       "    %r = train.concat %neg, %lo dim 2 : "
                       "tensor<2x3x2xf32>, tensor<2x3x2xf32> -> "
                       "tensor<2x3x4xf32>\n"
                       "    %y = train.mul %r, %x : tensor<2x3x4xf32>\n",
                       "y",
                       {2, 3, 4}});
  // Through bf16 and back: the values and h are multiples of 2^-5, exact in
  // bf16, so the forward rounds nothing.
  cases.push_back(Case{"cast_bf16",
                       {param("x", {2, 3}, Dist::quantized)},
                       {},
                       "    %h = train.cast %x : tensor<2x3xf32> -> "
                       "tensor<2x3xbf16>\n"
                       "    %y = train.cast %h : tensor<2x3xbf16> -> "
                       "tensor<2x3xf32>\n",
                       "y",
                       {2, 3},
                       1.0 / 16});
  cases.push_back(Case{"cast_f16",
                       {param("x", {2, 3}, Dist::quantized)},
                       {},
                       "    %h = train.cast %x : tensor<2x3xf32> -> "
                       "tensor<2x3xf16>\n"
                       "    %y = train.cast %h : tensor<2x3xf16> -> "
                       "tensor<2x3xf32>\n",
                       "y",
                       {2, 3},
                       1.0 / 16});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Autodiff, GradientCheck,
                         ::testing::ValuesIn(allCases()),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return info.param.name;
                         });

} // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new MpiEnvironment);
  return RUN_ALL_TESTS();
}
