//===- ElementwiseCudaTest.cpp - Elementwise CUDA kernels against CPU -----===//
//
// Every elementwise kernel, each float type, odd sizes (not multiples of the
// block size), and in place where the aliasing rules allow it.
//
//===----------------------------------------------------------------------===//

#include "CudaTestSupport.h"

#include <cuda_runtime_api.h>

#include <cmath>
#include <memory>

using namespace zero::rt;
using namespace zero::rt::test;

namespace {

const std::vector<std::vector<int64_t>> kShapes = {{7}, {3, 129}, {1031}};

TEST(ElementwiseCuda, UnaryOps) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 1;
  for (const char *op : {"neg", "exp", "log", "sqrt", "rsqrt", "tanh", "relu",
                         "gelu", "sigmoid", "silu"}) {
    // log, sqrt and rsqrt on positive inputs only.
    bool positive = std::string(op).find("sqrt") != std::string::npos ||
                    std::string(op) == "log";
    for (DType dtype : floatTypes())
      for (const auto &shape : kShapes) {
        Tensor x = randomTensor(dtype, shape, seed++, positive ? 0.1 : -4.0,
                                positive ? 3.0 : 4.0);
        EXPECT_TRUE(matchesCpu({std::string("train.") + op, {}, {x}, {x}}))
            << dtypeLabel(dtype);
      }
  }
}

TEST(ElementwiseCuda, BinaryOpsAndActivationGradients) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 100;
  for (const char *op : {"add", "sub", "mul", "div", "relu_grad", "gelu_grad",
                         "tanh_grad", "sigmoid_grad", "silu_grad"})
    for (DType dtype : floatTypes())
      for (const auto &shape : kShapes) {
        Tensor a = randomTensor(dtype, shape, seed++, -3.0, 3.0);
        Tensor b = randomTensor(dtype, shape, seed++, 0.5, 2.0);
        EXPECT_TRUE(matchesCpu({std::string("train.") + op, {}, {a, b}, {a}}))
            << dtypeLabel(dtype);
      }
}

TEST(ElementwiseCuda, ExactGeluAndGradient) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 300;
  mlir::DictionaryAttr exact = dict({{"exact", unit()}});
  for (DType dtype : floatTypes())
    for (const auto &shape : kShapes) {
      Tensor x = randomTensor(dtype, shape, seed++, -4.0, 4.0);
      Tensor dy = randomTensor(dtype, shape, seed++, 0.5, 2.0);
      EXPECT_TRUE(matchesCpu({"train.gelu", exact, {x}, {x}}))
          << dtypeLabel(dtype);
      EXPECT_TRUE(matchesCpu({"train.gelu_grad", exact, {x, dy}, {x}}))
          << dtypeLabel(dtype);
    }
}

TEST(ElementwiseCuda, InPlace) {
  SKIP_WITHOUT_CUDA_GPU();
  for (DType dtype : floatTypes()) {
    Tensor a = randomTensor(dtype, {5, 77}, 7),
           b = randomTensor(dtype, {5, 77}, 8);
    EXPECT_TRUE(matchesCpu({"train.add", {}, {a, b}, {a}, {{0, 1}}}));
    EXPECT_TRUE(matchesCpu({"train.gelu", {}, {a}, {a}, {{0, 0}}}));
    EXPECT_TRUE(matchesCpu(
        {"train.scale", dict({{"factor", f64(0.3)}}), {a}, {a}, {{0, 0}}}));
  }
}

TEST(ElementwiseCuda, Scale) {
  SKIP_WITHOUT_CUDA_GPU();
  for (DType dtype : floatTypes())
    for (const auto &shape : kShapes)
      EXPECT_TRUE(matchesCpu({"train.scale",
                              dict({{"factor", f64(-0.125)}}),
                              {randomTensor(dtype, shape, 3)},
                              {Tensor(dtype, shape)}}));
}

TEST(ElementwiseCuda, CastBetweenEveryPair) {
  SKIP_WITHOUT_CUDA_GPU();
  for (DType from : floatTypes())
    for (DType to : floatTypes())
      EXPECT_TRUE(matchesCpu({"train.cast",
                              {},
                              {randomTensor(from, {3, 333}, 4, -100.0, 100.0)},
                              {Tensor(to, {3, 333})}}))
          << dtypeLabel(from) << " -> " << dtypeLabel(to);
}

TEST(ElementwiseCuda, BiasAdd) {
  SKIP_WITHOUT_CUDA_GPU();
  for (DType dtype : floatTypes())
    for (DType biasType : floatTypes())
      for (const std::vector<int64_t> &shape :
           {std::vector<int64_t>{9}, {4, 3, 65}, {257, 3}}) {
        Tensor x = randomTensor(dtype, shape, 5);
        Tensor bias = randomTensor(biasType, {shape.back()}, 6);
        EXPECT_TRUE(matchesCpu({"train.bias_add", {}, {x, bias}, {x}}));
      }
}

// Unary and binary math and bias_add move 16 bytes per load where every
// buffer is 16-byte aligned, one element where one is not (a view one
// element past an aligned start here). Both paths are checked, on sizes
// with and without a tail past the last 16 bytes, bias rows of whole and
// partial 16 bytes, and more rows than one grid dimension holds (70000).
// Correctly rounded f32 operations (add, mul, div, the bias) give the CPU's
// bits on either path.
TEST(ElementwiseCuda, PackedAndOneElementPaths) {
  SKIP_WITHOUT_CUDA_GPU();
  uint32_t seed = 500;
  for (DType dtype : floatTypes())
    for (size_t offset : {size_t{0}, static_cast<size_t>(dtypeBytes(dtype))}) {
      std::string label =
          dtypeLabel(dtype) + " at offset " + std::to_string(offset);
      for (const std::vector<int64_t> &shape :
           {std::vector<int64_t>{8, 768}, {1031}, {3, 5}}) {
        Tensor x = randomTensor(dtype, shape, seed++, -4.0, 4.0);
        Tensor y = randomTensor(dtype, shape, seed++, 0.5, 2.0);
        KernelCase gelu{"train.gelu", {}, {x}, {x}};
        gelu.deviceOffset = offset;
        EXPECT_TRUE(matchesCpu(gelu)) << label;
        for (const char *op : {"train.add", "train.mul", "train.div"}) {
          KernelCase binary{op, {}, {x, y}, {x}};
          binary.deviceOffset = offset;
          binary.bitwise = true;
          EXPECT_TRUE(matchesCpu(binary)) << op << " " << label;
        }
      }
      for (const std::vector<int64_t> &shape :
           {std::vector<int64_t>{16, 768}, {70000, 8}, {4, 3, 12}}) {
        KernelCase bias{"train.bias_add",
                        {},
                        {randomTensor(dtype, shape, seed++),
                         randomTensor(dtype, {shape.back()}, seed++)},
                        {Tensor(dtype, shape)}};
        bias.deviceOffset = offset;
        bias.bitwise = true;
        EXPECT_TRUE(matchesCpu(bias)) << label;
      }
    }
}

// The mask is a function of the key and the global index alone: the CUDA
// kernel keeps exactly the CPU's elements, on either rank of two.
TEST(ElementwiseCuda, Dropout) {
  SKIP_WITHOUT_CUDA_GPU();
  for (DType dtype : floatTypes())
    for (int rank : {0, 1})
      for (const std::vector<int64_t> &shape :
           {std::vector<int64_t>{3, 7}, {2, 3, 1000}}) {
        Tensor x = randomTensor(dtype, shape, 17);
        KernelContext ctx;
        ctx.step = 12;
        ctx.rank = rank;
        ctx.batchRank = rank;
        ctx.seed = 5;
        ctx.microStep = 1;
        EXPECT_TRUE(matchesCpu({"train.dropout",
                                dict({{"rate", f64(0.3)}, {"stream", i64(2)}}),
                                {x},
                                {x},
                                {},
                                ctx}));
      }
}

TEST(ElementwiseCuda, KeyMask) {
  SKIP_WITHOUT_CUDA_GPU();
  for (DType dtype : floatTypes())
    for (DType keepType : {DType::i32, DType::i64})
      for (const std::vector<int64_t> &shape :
           {std::vector<int64_t>{3, 7}, {2, 3, 9, 9}, {5, 2, 33}}) {
        Tensor x = randomTensor(dtype, shape, 15);
        Tensor keep = randomIds(keepType, {shape.front(), shape.back()}, 16, 2);
        EXPECT_TRUE(matchesCpu({"train.key_mask",
                                dict({{"fill", f64(-INFINITY)}}),
                                {x, keep},
                                {x}}));
      }
}

TEST(ElementwiseCuda, CausalMask) {
  SKIP_WITHOUT_CUDA_GPU();
  for (DType dtype : floatTypes())
    for (double fill : {-static_cast<double>(INFINITY), -1e4})
      for (const std::vector<int64_t> &shape :
           {std::vector<int64_t>{5, 5}, {2, 3, 7, 7}, {3, 9, 4}}) {
        Tensor x = randomTensor(dtype, shape, 9);
        EXPECT_TRUE(matchesCpu(
            {"train.causal_mask", dict({{"fill", f64(fill)}}), {x}, {x}}));
        EXPECT_TRUE(matchesCpu({"train.causal_mask",
                                dict({{"fill", f64(fill)}}),
                                {x},
                                {x},
                                {{0, 0}}}));
      }
}

TEST(ElementwiseCuda, FillAndStepIndex) {
  SKIP_WITHOUT_CUDA_GPU();
  for (DType dtype :
       {DType::f32, DType::bf16, DType::f16, DType::i32, DType::i64})
    EXPECT_TRUE(matchesCpu(
        {"zrt.fill", dict({{"value", f64(3)}}), {}, {Tensor(dtype, {1001})}}));
  KernelCase step{"train.step_index", {}, {}, {Tensor(DType::i64, {})}};
  step.ctx.step = 1234567;
  EXPECT_TRUE(matchesCpu(step));
}

TEST(ElementwiseCuda, StepIndexFollowsTheDeviceStep) {
  // With KernelContext::deviceStep set, step_index copies it on the device:
  // a call captured as a CUDA graph writes the step of each replay, not the
  // host step of the capture.
  SKIP_WITHOUT_CUDA_GPU();
  void *stepBuffer = nullptr, *outBuffer = nullptr;
  ASSERT_EQ(cudaMalloc(&stepBuffer, sizeof(int64_t)), cudaSuccess);
  std::unique_ptr<void, cudaError_t (*)(void *)> stepOwner(stepBuffer,
                                                           cudaFree);
  ASSERT_EQ(cudaMalloc(&outBuffer, sizeof(int64_t)), cudaSuccess);
  std::unique_ptr<void, cudaError_t (*)(void *)> outOwner(outBuffer, cudaFree);
  auto *deviceStep = static_cast<int64_t *>(stepBuffer);
  void *out = outBuffer;
  auto setStep = [&](int64_t step) {
    ASSERT_EQ(
        cudaMemcpy(deviceStep, &step, sizeof(step), cudaMemcpyHostToDevice),
        cudaSuccess);
  };

  setStep(42);
  KernelCase step{"train.step_index", {}, {}, {Tensor(DType::i64, {})}};
  step.ctx.step = 42;
  step.ctx.deviceStep = deviceStep;
  EXPECT_TRUE(matchesCpu(step));

  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  std::vector<TensorSpec> outSpecs = {TensorSpec{DType::i64, {}}};
  absl::StatusOr<KernelFn> gpu =
      bindCudaKernel("train.step_index", {}, {}, outSpecs, stream);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  KernelContext captured;
  captured.step = -1;
  captured.deviceStep = deviceStep;
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
            cudaSuccess);
  std::vector<void *> outs = {out};
  absl::Status call = (*gpu)({}, outs, captured);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_TRUE(call.ok()) << call;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int64_t want : {int64_t{1}, int64_t{7}, int64_t{1} << 40}) {
    setStep(want);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    int64_t got = 0;
    ASSERT_EQ(cudaMemcpy(&got, out, sizeof(got), cudaMemcpyDeviceToHost),
              cudaSuccess);
    EXPECT_EQ(got, want);
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

} // namespace
