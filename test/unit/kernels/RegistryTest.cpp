//===- RegistryTest.cpp - Names, dialect coverage and error reporting -----===//
//
// Binds every op of a parsed train module with the op's own attribute
// dictionary, so the kernels agree with the dialect on attribute names and
// kinds; and checks that every compute and update op the dialect registers
// has a kernel.
//
//===----------------------------------------------------------------------===//

#include "KernelTestSupport.h"

#include "zero/dialects/dist/DistDialect.h"
#include "zero/dialects/train/TrainDialect.h"
#include "zero/dialects/train/TrainOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Parser/Parser.h"

#include <set>

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

constexpr const char *kModule = R"mlir(
  train.optimizer @sgd sgd lr 1.0e-01 weight_decay 1.0e-02
  train.optimizer @mom momentum lr 1.0e-01 momentum 9.0e-01
  train.optimizer @adam adam lr 1.0e-03 betas(0.9, 0.95) eps 1.0e-08 weight_decay 0.1
  train.optimizer @adamw adamw lr 1.0e-03
  func.func @f(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %b: tensor<8xf32>,
               %w: tensor<8x6xf32>, %ids: tensor<4xi32>, %tab: tensor<10x8xf32>,
               %s: tensor<f32>, %xb: tensor<4x8xbf16>, %h: tensor<2x4x8xf32>,
               %lab: tensor<4xi64>, %step: tensor<i64>,
               %keep: tensor<2x8xi64>, %b6: tensor<6xf32>) {
    %0 = train.neg %x : tensor<4x8xf32>
    %1 = train.exp %x : tensor<4x8xf32>
    %2 = train.log %x : tensor<4x8xf32>
    %3 = train.sqrt %x : tensor<4x8xf32>
    %4 = train.rsqrt %x : tensor<4x8xf32>
    %5 = train.tanh %x : tensor<4x8xf32>
    %6 = train.relu %x : tensor<4x8xf32>
    %7 = train.gelu %xb : tensor<4x8xbf16>
    %8 = train.add %x, %y : tensor<4x8xf32>
    %9 = train.sub %x, %y : tensor<4x8xf32>
    %10 = train.mul %x, %y : tensor<4x8xf32>
    %11 = train.div %x, %y : tensor<4x8xf32>
    %12 = train.scale %x by 1.250000e-01 : tensor<4x8xf32>
    %13 = train.bias_add %x, %b : tensor<4x8xf32>, tensor<8xf32>
    %14 = train.causal_mask %h fill 0xFFF0000000000000 : tensor<2x4x8xf32>
    %15 = train.matmul %x, %w : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
    %16 = train.matmul %x, %y transpose_a : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
    %17 = train.matmul %h, %w : tensor<2x4x8xf32>, tensor<8x6xf32> -> tensor<2x4x6xf32>
    %18 = train.matmul %x, %y transpose_b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x4xf32>
    %19 = train.softmax %x : tensor<4x8xf32>
    %ln, %mean, %rstd = train.layer_norm %x, %b, %b eps 1.0e-05
        : tensor<4x8xf32>, tensor<8xf32> -> tensor<4xf32>
    %20 = train.embedding %tab, %ids : tensor<10x8xf32>, tensor<4xi32> -> tensor<4x8xf32>
    %21 = train.softmax_cross_entropy %x, %lab : tensor<4x8xf32>, tensor<4xi64> -> tensor<f32>
    %22 = train.reduce_sum %x dims [0] : tensor<4x8xf32> -> tensor<8xf32>
    %23 = train.reduce_mean %h dims [0, 2] : tensor<2x4x8xf32> -> tensor<4xf32>
    %24 = train.expand %b dims [0] : tensor<8xf32> -> tensor<4x8xf32>
    %25 = train.reshape %h : tensor<2x4x8xf32> -> tensor<8x8xf32>
    %26 = train.transpose %h permutation [1, 0, 2] : tensor<2x4x8xf32> -> tensor<4x2x8xf32>
    %27 = train.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>
    %28 = train.relu_grad %x, %y : tensor<4x8xf32>
    %29 = train.gelu_grad %x, %y : tensor<4x8xf32>
    %30 = train.tanh_grad %x, %y : tensor<4x8xf32>
    %31 = train.softmax_grad %x, %y : tensor<4x8xf32>
    %dx, %dg, %db = train.layer_norm_grad %y, %x, %b, %mean, %rstd
        : tensor<4x8xf32>, tensor<8xf32>, tensor<4xf32>
    %32 = train.embedding_grad %x, %ids : tensor<4x8xf32>, tensor<4xi32> -> tensor<10x8xf32>
    %33 = train.softmax_cross_entropy_grad %x, %lab, %s : tensor<4x8xf32>, tensor<4xi64>
    %count = train.count_labels %lab {ignore_index = -100 : i64} : tensor<4xi64> -> tensor<f32>
    %kept_loss = train.softmax_cross_entropy %x, %lab count %count {ignore_index = -100 : i64} : tensor<4x8xf32>, tensor<4xi64> -> tensor<f32>
    %kept_grad = train.softmax_cross_entropy_grad %x, %lab, %s count %count {ignore_index = -100 : i64} : tensor<4x8xf32>, tensor<4xi64>
    %34 = train.sigmoid %x : tensor<4x8xf32>
    %35 = train.silu %xb : tensor<4x8xbf16>
    %36 = train.sigmoid_grad %x, %y : tensor<4x8xf32>
    %37 = train.silu_grad %x, %y : tensor<4x8xf32>
    %38 = train.slice %h dim 2 offset 2 : tensor<2x4x8xf32> -> tensor<2x4x3xf32>
    %39 = train.pad %38 dim 2 offset 2 : tensor<2x4x3xf32> -> tensor<2x4x8xf32>
    %40 = train.concat %x, %y dim 0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
    %41 = train.slice %lab dim 0 offset 1 : tensor<4xi64> -> tensor<3xi64>
    %42 = train.key_mask %h, %keep fill 0xFFF0000000000000 : tensor<2x4x8xf32>, tensor<2x8xi64>
    %43 = train.softmax %42 safe : tensor<2x4x8xf32>
    %44 = train.dropout %h rate 1.000000e-01 stream 0 : tensor<2x4x8xf32>
    %att, %lse = train.attention %h, %h, %h scale 0.35 causal
        : tensor<2x4x8xf32> -> tensor<2x4xf32>
    %dq, %dk, %dv = train.attention_grad %h, %h, %h, %h, %att, %lse scale 0.35
        : tensor<2x4x8xf32> -> tensor<2x4xf32>
    %t = train.step_index : tensor<i64>
    %p1 = train.sgd %x, %y with @sgd : tensor<4x8xf32>, tensor<4x8xf32>
    %p2, %b2 = train.sgd_momentum %x, %y, %x with @mom
        : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
    %p3, %m3, %v3 = train.adam %x, %xb, %x, %y step %step with @adam
        : tensor<4x8xf32>, tensor<4x8xbf16>, tensor<4x8xf32>
    %p4, %m4, %v4 = train.adamw %xb, %xb, %x, %y step %t with @adamw
        : tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xf32>
    %sq = train.sum_squares %x, %xb, %b : tensor<4x8xf32>, tensor<4x8xbf16>, tensor<8xf32> -> tensor<f32>
    %c1, %c2 = train.scale_by_norm %x, %xb total %sq max_norm 1.0
        : tensor<4x8xf32>, tensor<4x8xbf16>
    %u1, %u2, %found = train.unscale %x, %xb scale %s
        : tensor<4x8xf32>, tensor<4x8xbf16>
    %ns, %ng = train.update_loss_scale %s, %s, %found growth_interval 100
        : tensor<f32>
    %p5, %m5, %v5 = train.adamw %x, %u1, %x, %y step %t skip_if %found
        with @adamw : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
    %lin = train.matmul_bias %h, %w, %b6 : tensor<2x4x8xf32>, tensor<8x6xf32>, tensor<6xf32> -> tensor<2x4x6xf32>
    %act, %pre = train.matmul_bias_gelu %h, %w, %b6 : tensor<2x4x8xf32>, tensor<8x6xf32>, tensor<6xf32> -> tensor<2x4x6xf32>
    %dpre = train.matmul_gelu_grad %x, %w, %15 : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
    %dw, %dbias = train.matmul_bias_grad %x, %15 transpose_a : tensor<4x8xf32>, tensor<4x6xf32> -> tensor<8x6xf32>, tensor<6xf32>
    %sum, %aln, %amean, %arstd = train.add_layer_norm %x, %y, %b, %b eps 1.0e-05
        : tensor<4x8xf32>, tensor<8xf32> -> tensor<4xf32>
    return
  }
)mlir";

/// State ops: the runtime moves their data itself, no kernel involved; and
/// train.minimize, which only marks the loss until train-autodiff removes it.
const std::set<std::string> kNoKernel = {
    "train.param", "train.load", "train.store", "train.optimizer",
    "train.apply_gradient", "train.minimize",
    // Expanded into train.sum_squares and train.scale_by_norm before lowering.
    "train.clip_by_global_norm"};

TensorSpec specOf(mlir::Type type) {
  auto tensor = mlir::cast<mlir::RankedTensorType>(type);
  mlir::Type element = tensor.getElementType();
  DType dtype = DType::f32;
  if (element.isBF16())
    dtype = DType::bf16;
  else if (element.isF16())
    dtype = DType::f16;
  else if (element.isInteger(32))
    dtype = DType::i32;
  else if (element.isInteger(64))
    dtype = DType::i64;
  return {dtype, std::vector<int64_t>(tensor.getShape().begin(),
                                      tensor.getShape().end())};
}

/// The hyper-parameters the runtime hands an update op, from its optimizer.
mlir::DictionaryAttr updateParams(mlir::Operation *op) {
  auto symbol =
      op->getAttrDictionary().getAs<mlir::FlatSymbolRefAttr>("optimizer");
  auto optimizer =
      mlir::SymbolTable::lookupNearestSymbolFrom<zero::train::OptimizerOp>(
          op, symbol);
  std::vector<std::pair<std::string, mlir::Attribute>> entries = {
      {"lr", f64(optimizer.getLrValue())},
      {"beta1", f64(optimizer.getBeta1Value())},
      {"beta2", f64(optimizer.getBeta2Value())},
      {"eps", f64(optimizer.getEpsValue())},
      {"weight_decay", f64(optimizer.getWeightDecayValue())}};
  if (std::optional<double> momentum = optimizer.getMomentumValue())
    entries.push_back({"momentum", f64(*momentum)});
  return dict(entries);
}

TEST(RegistryTest, EveryTrainOpBindsWithItsOwnAttributes) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<zero::dist::DistDialect, zero::train::TrainDialect,
                  mlir::func::FuncDialect>();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(kModule, &ctx);
  ASSERT_TRUE(module);

  std::set<std::string> bound;
  module->walk([&](mlir::Operation *op) {
    std::string name = op->getName().getStringRef().str();
    if (op->getDialect()->getNamespace() != "train" || kNoKernel.count(name))
      return;
    std::vector<TensorSpec> ins, outs;
    for (mlir::Value operand : op->getOperands())
      ins.push_back(specOf(operand.getType()));
    for (mlir::Value result : op->getResults())
      outs.push_back(specOf(result.getType()));
    mlir::DictionaryAttr params =
        op->hasAttr("optimizer") ? updateParams(op) : op->getAttrDictionary();
    absl::StatusOr<KernelFn> kernel = bindCpuKernel(name, params, ins, outs);
    EXPECT_TRUE(kernel.ok()) << name << ": " << kernel.status();
    bound.insert(name);
  });

  for (mlir::RegisteredOperationName op : ctx.getRegisteredOperations()) {
    if (op.getDialectNamespace() != "train")
      continue;
    std::string name = op.getStringRef().str();
    if (!kNoKernel.count(name)) {
      EXPECT_TRUE(bound.count(name))
          << name << " is a train op without a kernel test here";
    }
  }
}

TEST(RegistryTest, RuntimeKernelsBind) {
  Tensor out(DType::i64, {});
  EXPECT_TRUE(bindKernel("train.step_index", {}, {}, {&out}).ok());
  EXPECT_TRUE(
      bindKernel("zrt.fill", dict({{"value", f64(0)}}), {}, {&out}).ok());
  Tensor in(DType::f32, {8}), shard(DType::f32, {2});
  EXPECT_TRUE(bindKernel("dist.slice",
                         dict({{"axis", i64(0)}, {"dim", i64(0)}}), {&in},
                         {&shard})
                  .ok());
}

TEST(RegistryTest, UnknownKernelIsUnimplemented) {
  Tensor x(DType::f32, {4});
  for (const char *name : {"train.frobnicate", "", "train", "zrt.fil",
                           "train.softmax_cross_entropy_gradx"}) {
    absl::Status status = bindKernel(name, {}, {&x}, {&x}).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented) << name;
    EXPECT_EQ(status.message(),
              std::string("no CPU kernel for '") + name + "'");
  }
}

TEST(RegistryTest, CallsWithTheWrongBufferCountAreErrors) {
  Tensor a = randomTensor(DType::f32, {4}, 1), b = a, c(DType::f32, {4});
  absl::StatusOr<KernelFn> kernel = bindKernel("train.add", {}, {&a, &b}, {&c});
  ASSERT_TRUE(kernel.ok());
  std::vector<const void *> one = {a.data()};
  EXPECT_EQ((*kernel)(one, {c.data()}, {}).code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<const void *> two = {a.data(), b.data()};
  EXPECT_EQ((*kernel)(two, {}, {}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE((*kernel)(two, {c.data()}, {}).ok());
}

TEST(RegistryTest, BadSpecsAreInvalidArguments) {
  Tensor a(DType::f32, {4, 8}), b(DType::f32, {4, 9}), c(DType::f32, {4, 8});
  absl::Status mismatch = bindKernel("train.add", {}, {&a, &b}, {&c}).status();
  EXPECT_EQ(mismatch.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(mismatch.message().find("train.add"), std::string::npos);
  EXPECT_NE(mismatch.message().find("tensor<4x9xf32>"), std::string::npos)
      << mismatch.message();
  // Arity, dtype, a missing attribute, an attribute of the wrong kind.
  EXPECT_EQ(bindKernel("train.add", {}, {&a}, {&c}).status().code(),
            absl::StatusCode::kInvalidArgument);
  Tensor ints(DType::i32, {4, 8});
  EXPECT_FALSE(bindKernel("train.exp", {}, {&ints}, {&ints}).ok());
  EXPECT_FALSE(bindKernel("train.scale", {}, {&a}, {&c}).ok());
  EXPECT_FALSE(
      bindKernel("train.scale", dict({{"factor", i64s({2})}}), {&a}, {&c})
          .ok());
  Tensor bf(DType::bf16, {4, 8});
  EXPECT_FALSE(bindKernel("train.tanh", {}, {&a}, {&bf}).ok());
  // Negative extents never reach a kernel.
  TensorSpec negative{DType::f32, {-1, 4}};
  EXPECT_EQ(
      bindCpuKernel("train.neg", {}, {negative}, {negative}).status().code(),
      absl::StatusCode::kInvalidArgument);
  // Attributes a kernel does not read are ignored.
  EXPECT_TRUE(
      bindKernel("train.neg", dict({{"some.note", unit()}}), {&a}, {&c}).ok());
}

} // namespace
