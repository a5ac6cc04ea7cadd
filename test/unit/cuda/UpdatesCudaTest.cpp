//===- UpdatesCudaTest.cpp - Optimizer, clipping and loss scaling ---------===//
//
// The update kernels with every parameter and gradient type, weight decay,
// a learning-rate schedule followed through KernelContext::step or, as in a
// step captured as a CUDA graph, through KernelContext::deviceStep, Adam's
// bias correction from the step tensor, the skip_if flag of a loss-scaled
// step, and in place; then clipping by global norm and dynamic loss scaling.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"

#include <cuda_runtime_api.h>

#include <cmath>

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

mlir::DictionaryAttr hyper(bool scheduled, bool momentum) {
  std::vector<std::pair<std::string, mlir::Attribute>> entries = {
      {"lr", f64(1e-2)},
      {"weight_decay", f64(0.1)},
      {"beta1", f64(0.9)},
      {"beta2", f64(0.95)},
      {"eps", f64(1e-8)}};
  if (momentum)
    entries.push_back({"momentum", f64(0.9)});
  if (scheduled) {
    entries.push_back(
        {"schedule", mlir::StringAttr::get(&context(), "cosine")});
    entries.push_back({"warmup", i64(3)});
    entries.push_back({"total", i64(20)});
    entries.push_back({"min_lr", f64(1e-4)});
  }
  return dict(entries);
}

const std::vector<int64_t> kShard = {1027};

/// Device buffers freed at scope exit.
struct DeviceMemory {
  std::vector<void *> buffers;
  ~DeviceMemory() {
    for (void *buffer : buffers)
      cudaFree(buffer);
  }
  void *allocate(size_t bytes) {
    void *buffer = nullptr;
    EXPECT_EQ(cudaMalloc(&buffer, bytes), cudaSuccess);
    buffers.push_back(buffer);
    return buffer;
  }
  void *upload(const Tensor &tensor) {
    size_t bytes =
        static_cast<size_t>(tensor.size() * dtypeBytes(tensor.dtype()));
    void *buffer = allocate(bytes);
    EXPECT_EQ(cudaMemcpy(buffer, tensor.data(), bytes, cudaMemcpyHostToDevice),
              cudaSuccess);
    return buffer;
  }
};

void setDeviceStep(int64_t *deviceStep, int64_t step) {
  ASSERT_EQ(cudaMemcpy(deviceStep, &step, sizeof(step), cudaMemcpyHostToDevice),
            cudaSuccess);
}

TEST(UpdatesCuda, SgdAndMomentum) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 1;
  for (DType paramType : floatTypes())
    for (DType gradType : floatTypes())
      for (bool scheduled : {false, true})
        for (int64_t step : {1, 2, 11, 25}) {
          Tensor p = randomTensor(paramType, kShard, seed++);
          Tensor g = randomTensor(gradType, kShard, seed++);
          Tensor b = randomTensor(DType::f32, kShard, seed++);
          KernelCase sgd{"train.sgd", hyper(scheduled, false), {p, g}, {p}};
          sgd.ctx.step = step;
          EXPECT_TRUE(matchesCpu(sgd));
          KernelCase momentum{
              "train.sgd_momentum", hyper(scheduled, true), {p, g, b}, {p, b}};
          momentum.ctx.step = step;
          EXPECT_TRUE(matchesCpu(momentum));
          momentum.aliases = {{0, 0}, {1, 2}};
          EXPECT_TRUE(matchesCpu(momentum));
        }
}

TEST(UpdatesCuda, AdamAndAdamW) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 100;
  for (const char *name : {"train.adam", "train.adamw"})
    for (DType paramType : floatTypes())
      for (DType gradType : floatTypes())
        for (bool scheduled : {false, true})
          for (int64_t step : {1, 4, 30}) {
            Tensor p = randomTensor(paramType, kShard, seed++);
            Tensor g = randomTensor(gradType, kShard, seed++);
            Tensor m = randomTensor(DType::f32, kShard, seed++, -0.1, 0.1);
            Tensor v = randomTensor(DType::f32, kShard, seed++, 0.0, 0.01);
            Tensor t = fromValues(DType::i64, {}, {static_cast<double>(step)});
            KernelCase adam{
                name, hyper(scheduled, false), {p, g, m, v, t}, {p, m, v}};
            adam.ctx.step = step;
            EXPECT_TRUE(matchesCpu(adam)) << name << " step " << step;
            adam.aliases = {{0, 0}, {1, 2}, {2, 3}};
            EXPECT_TRUE(matchesCpu(adam)) << name << " in place";
          }
}

TEST(UpdatesCuda, DeviceStepDrivesTheSchedule) {
  // The runtime's step in device memory: every update computes its scheduled
  // rate on the device from it, matching the CPU kernel at the same host
  // step.
  SKIP_WITHOUT_CUDA_GPU();
  DeviceMemory memory;
  auto *deviceStep = static_cast<int64_t *>(memory.allocate(sizeof(int64_t)));
  uint32_t seed = 500;
  for (bool scheduled : {false, true})
    for (int64_t step : {1, 2, 3, 4, 11, 19, 20, 25}) {
      setDeviceStep(deviceStep, step);
      KernelContext ctx;
      ctx.step = step;
      ctx.deviceStep = deviceStep;
      Tensor p = randomTensor(DType::bf16, kShard, seed++);
      Tensor g = randomTensor(DType::f32, kShard, seed++);
      Tensor m = randomTensor(DType::f32, kShard, seed++, -0.1, 0.1);
      Tensor v = randomTensor(DType::f32, kShard, seed++, 0.0, 0.01);
      Tensor t = fromValues(DType::i64, {}, {static_cast<double>(step)});
      KernelCase sgd{"train.sgd", hyper(scheduled, false), {p, g}, {p}};
      sgd.ctx = ctx;
      EXPECT_TRUE(matchesCpu(sgd)) << "step " << step;
      KernelCase momentum{
          "train.sgd_momentum", hyper(scheduled, true), {p, g, m}, {p, m}};
      momentum.ctx = ctx;
      EXPECT_TRUE(matchesCpu(momentum)) << "step " << step;
      for (const char *name : {"train.adam", "train.adamw"}) {
        KernelCase adam{
            name, hyper(scheduled, false), {p, g, m, v, t}, {p, m, v}};
        adam.ctx = ctx;
        EXPECT_TRUE(matchesCpu(adam)) << name << " step " << step;
      }
    }
}

TEST(UpdatesCuda, CapturedAdamWReplaysEachStep) {
  // An adamw with a cosine schedule captured once as a CUDA graph, with a
  // host step that would freeze a zero rate: each replay must follow the
  // device step (rate) and the step tensor (bias corrections), as the CPU
  // kernel does at that host step.
  SKIP_WITHOUT_CUDA_GPU();
  Tensor p = randomTensor(DType::f32, kShard, 1);
  Tensor g = randomTensor(DType::f32, kShard, 2);
  Tensor m = randomTensor(DType::f32, kShard, 3, -0.1, 0.1);
  Tensor v = randomTensor(DType::f32, kShard, 4, 0.0, 0.01);
  Tensor t = fromValues(DType::i64, {}, {1});
  std::vector<TensorSpec> inSpecs = {p.spec(), g.spec(), m.spec(), v.spec(),
                                     t.spec()};
  std::vector<TensorSpec> outSpecs = {p.spec(), m.spec(), v.spec()};
  mlir::DictionaryAttr params = hyper(true, false);

  DeviceMemory memory;
  std::vector<const void *> ins = {memory.upload(p), memory.upload(g),
                                   memory.upload(m), memory.upload(v),
                                   memory.upload(t)};
  std::vector<void *> outs = {memory.upload(p), memory.upload(m),
                              memory.upload(v)};
  auto *deviceStep = static_cast<int64_t *>(memory.allocate(sizeof(int64_t)));

  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  absl::StatusOr<KernelFn> gpu =
      bindCudaKernel("train.adamw", params, inSpecs, outSpecs, stream);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  KernelContext captured;
  captured.step = 0;
  captured.deviceStep = deviceStep;
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
            cudaSuccess);
  absl::Status call = (*gpu)(ins, outs, captured);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_TRUE(call.ok()) << call;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);

  absl::StatusOr<KernelFn> cpu =
      bindCpuKernel("train.adamw", params, inSpecs, outSpecs);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  for (int64_t step : {1, 2, 4, 11, 19, 25}) {
    setDeviceStep(deviceStep, step);
    setDeviceStep(static_cast<int64_t *>(const_cast<void *>(ins[4])), step);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);

    Tensor stepTensor = fromValues(DType::i64, {}, {static_cast<double>(step)});
    std::vector<Tensor> want = {p, m, v};
    std::vector<const void *> cpuIns = {p.data(), g.data(), m.data(), v.data(),
                                        stepTensor.data()};
    std::vector<void *> cpuOuts = {want[0].data(), want[1].data(),
                                   want[2].data()};
    KernelContext host;
    host.step = step;
    ASSERT_TRUE((*cpu)(cpuIns, cpuOuts, host).ok());
    for (size_t o = 0; o < outs.size(); ++o) {
      Tensor got = want[o];
      ASSERT_EQ(cudaMemcpy(got.data(), outs[o],
                           static_cast<size_t>(got.size()) * sizeof(float),
                           cudaMemcpyDeviceToHost),
                cudaSuccess);
      std::vector<double> gotValues = got.values(),
                          wantValues = want[o].values();
      double squares = 0.0;
      for (double value : wantValues)
        squares += value * value;
      double scale = std::sqrt(squares / wantValues.size());
      for (size_t i = 0; i < wantValues.size(); ++i)
        ASSERT_LE(std::fabs(gotValues[i] - wantValues[i]),
                  cudaTolerance(DType::f32) *
                      (std::fabs(wantValues[i]) + scale))
            << "step " << step << " result " << o << " element " << i;
    }
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST(UpdatesCuda, SkipIfFlagKeepsEverything) {
  SKIP_WITHOUT_CUDA_GPU();
  Tensor p = randomTensor(DType::bf16, kShard, 1);
  Tensor g = randomTensor(DType::bf16, kShard, 2);
  Tensor m = randomTensor(DType::f32, kShard, 3);
  Tensor v = randomTensor(DType::f32, kShard, 4, 0.0, 0.01);
  Tensor t = fromValues(DType::i64, {}, {5});
  for (double flag : {0.0, 1.0, std::nan("")}) {
    Tensor skip = fromValues(DType::f32, {}, {flag});
    EXPECT_TRUE(matchesCpu({"train.adamw",
                            hyper(false, false),
                            {p, g, m, v, t, skip},
                            {p, m, v}}));
    EXPECT_TRUE(matchesCpu({"train.sgd_momentum",
                            hyper(false, true),
                            {p, g, m, skip},
                            {p, m},
                            {{0, 0}}}));
    EXPECT_TRUE(
        matchesCpu({"train.sgd", hyper(true, false), {p, g, skip}, {p}}));
  }
}

TEST(ClippingCuda, SumSquaresAndScaleByNorm) {
  SKIP_WITHOUT_CUDA_GPU();
  Tensor a = randomTensor(DType::f32, {4, 8}, 1);
  Tensor b = randomTensor(DType::bf16, {100003}, 2);
  Tensor c = randomTensor(DType::f16, {7}, 3);
  Tensor total(DType::f32, {});
  EXPECT_TRUE(matchesCpu({"train.sum_squares", {}, {a, b, c}, {total}}));
  EXPECT_TRUE(matchesCpu({"train.sum_squares", {}, {c}, {total}}));
  for (double sum : {0.0, 0.5, 1e4})
    for (double maxNorm : {1.0, 5.0}) {
      Tensor squares = fromValues(DType::f32, {}, {sum});
      EXPECT_TRUE(matchesCpu({"train.scale_by_norm",
                              dict({{"max_norm", f64(maxNorm)}}),
                              {a, b, c, squares},
                              {a, b, c}}));
      EXPECT_TRUE(matchesCpu({"train.scale_by_norm",
                              dict({{"max_norm", f64(maxNorm)}}),
                              {a, b, squares},
                              {a, b},
                              {{0, 0}, {1, 1}}}));
    }
}

TEST(LossScalingCuda, UnscaleAndUpdateLossScale) {
  SKIP_WITHOUT_CUDA_GPU();
  Tensor scale = fromValues(DType::f32, {}, {1024});
  Tensor flag(DType::f32, {});
  for (DType dtype : floatTypes()) {
    Tensor a = randomTensor(dtype, {3, 333}, 1, -1000.0, 1000.0);
    Tensor b = randomTensor(dtype, {5}, 2);
    EXPECT_TRUE(matchesCpu(
        {"train.unscale",
         {},
         {a, b, scale},
         {Tensor(DType::f32, {3, 333}), Tensor(DType::f32, {5}), flag}}));
    b.set(3, INFINITY);
    EXPECT_TRUE(matchesCpu(
        {"train.unscale",
         {},
         {a, b, scale},
         {Tensor(DType::f32, {3, 333}), Tensor(DType::f32, {5}), flag}}));
  }
  for (double found : {0.0, 1.0})
    for (double good : {0.0, 4.0})
      for (double current : {1.0, 65536.0}) {
        Tensor s = fromValues(DType::f32, {}, {current});
        Tensor g = fromValues(DType::f32, {}, {good});
        Tensor f = fromValues(DType::f32, {}, {found});
        EXPECT_TRUE(matchesCpu({"train.update_loss_scale",
                                dict({{"growth_interval", i64(5)}}),
                                {s, g, f},
                                {s, g}}));
      }
}

} // namespace
