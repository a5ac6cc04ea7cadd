//===- RegistryCudaTest.cpp - The CUDA registry mirrors the CPU one -------===//
//
// These tests need no GPU: names are looked up, and requests are checked by
// the CPU binders, before anything touches CUDA.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"

#include "zero/dialects/dist/DistDialect.h"
#include "zero/dialects/train/TrainDialect.h"
#include "zero/dialects/zrt/ZrtDialect.h"

#include <algorithm>
#include <set>

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

bool cpuKnows(absl::string_view name) {
  return bindCpuKernel(name, {}, {}, {}).status().code() !=
         absl::StatusCode::kUnimplemented;
}

bool cudaKnows(absl::string_view name) {
  return bindCudaKernel(name, {}, {}, {}, nullptr).status().code() !=
         absl::StatusCode::kUnimplemented;
}

TEST(RegistryCuda, NamesAreSortedAndKnownToTheCpuRegistry) {
  std::vector<std::string> names = cudaKernelNames();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
  for (const std::string &name : names) {
    EXPECT_TRUE(cpuKnows(name)) << name << " has a CUDA kernel but no CPU one";
    EXPECT_TRUE(cudaKnows(name)) << name;
  }
}

TEST(RegistryCuda, EveryOpWithACpuKernelHasACudaKernel) {
  // The ops of the three dialects are every name a lowered program can bind;
  // the two registries must agree on each.
  mlir::MLIRContext ctx;
  ctx.loadDialect<zero::dist::DistDialect, zero::train::TrainDialect,
                  zero::zrt::ZrtDialect>();
  std::vector<std::string> names = cudaKernelNames();
  std::set<std::string> ops;
  for (mlir::RegisteredOperationName op : ctx.getRegisteredOperations()) {
    std::string name = op.getStringRef().str();
    ops.insert(name);
    bool cpu = cpuKnows(name);
    EXPECT_EQ(cpu, cudaKnows(name)) << name;
    EXPECT_EQ(cpu, std::binary_search(names.begin(), names.end(), name))
        << name;
  }
  // Kernels the runtime binds for its own instructions, not for an op.
  const std::set<std::string> runtimeOnly = {"zrt.fill"};
  for (const std::string &name : names)
    EXPECT_TRUE(ops.count(name) || runtimeOnly.count(name))
        << name << " is not an op of the dialects";
  for (const std::string &name : runtimeOnly) {
    EXPECT_TRUE(cpuKnows(name)) << name;
    EXPECT_TRUE(cudaKnows(name)) << name;
  }
}

TEST(RegistryCuda, UnknownNamesAreUnimplemented) {
  for (const char *name : {"train.frobnicate", "", "train", "zrt.fil"}) {
    absl::Status status = bindCudaKernel(name, {}, {}, {}, nullptr).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented) << name;
    EXPECT_EQ(status.message(),
              std::string("no CUDA kernel for '") + name + "'");
  }
}

TEST(RegistryCuda, BadRequestsGiveTheCpuErrors) {
  TensorSpec x{DType::f32, {4, 8}}, xb{DType::bf16, {4, 8}},
      ids{DType::i32, {4}}, w{DType::bf16, {9, 6}}, out{DType::bf16, {4, 6}};
  struct Request {
    const char *name;
    mlir::DictionaryAttr params;
    std::vector<TensorSpec> ins, outs;
  };
  std::vector<Request> requests = {
      {"train.add", {}, {x, xb}, {x}},
      {"train.add", {}, {x}, {x}},
      {"train.matmul", {}, {xb, w}, {out}}, // 8 vs 9: checked on f32 twins.
      {"train.matmul", {}, {xb, ids}, {out}},
      {"train.scale", {}, {x}, {x}},
      {"train.layer_norm", dict({{"eps", f64(0)}}), {x, x, x}, {x, x, x}},
      {"train.reduce_sum", dict({{"dims", i64s({2})}}), {x}, {x}}};
  for (const Request &request : requests) {
    absl::Status cpu =
        bindCpuKernel(request.name, request.params, request.ins, request.outs)
            .status();
    absl::Status gpu = bindCudaKernel(request.name, request.params, request.ins,
                                      request.outs, nullptr)
                           .status();
    EXPECT_EQ(cpu.code(), absl::StatusCode::kInvalidArgument) << cpu;
    EXPECT_EQ(gpu, cpu) << request.name;
  }
}

} // namespace
