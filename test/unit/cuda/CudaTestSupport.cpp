//===- CudaTestSupport.cpp - CUDA kernels against CPU kernels -------------===//

#include "CudaTestSupport.h"

#include "zero/runtime/CudaDevices.h"

#include <cuda_runtime_api.h>

#include <cmath>
#include <memory>
#include <sstream>

namespace zero::rt::test {
namespace {

struct DeviceFree {
  void operator()(void *pointer) const { cudaFree(pointer); }
};
using DeviceBuffer = std::unique_ptr<void, DeviceFree>;

std::string cudaText(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + " (" +
         cudaGetErrorString(error) + ")";
}

size_t bytesOf(const Tensor &tensor) {
  return static_cast<size_t>(tensor.size() * dtypeBytes(tensor.dtype()));
}

std::string describe(const Tensor &tensor) {
  std::ostringstream text;
  text << "tensor<";
  for (int64_t extent : tensor.shape())
    text << extent << "x";
  text << dtypeLabel(tensor.dtype()) << ">";
  return text.str();
}

} // namespace

bool haveCudaGpu() {
  static const bool present = [] {
    absl::StatusOr<std::vector<zero::cuda::CudaDeviceInfo>> devices =
        zero::cuda::listCudaDevices();
    return devices.ok() && !devices->empty();
  }();
  return present;
}

double cudaTolerance(DType dtype) {
  switch (dtype) {
  case DType::bf16:
    return 1e-2;
  case DType::f16:
    return 2e-3;
  default:
    return 1e-5;
  }
}

const std::vector<DType> &floatTypes() {
  static const std::vector<DType> types = {DType::f32, DType::bf16, DType::f16};
  return types;
}

::testing::AssertionResult matchesCpu(const KernelCase &kernel) {
  std::vector<TensorSpec> inSpecs, outSpecs;
  for (const Tensor &in : kernel.ins)
    inSpecs.push_back(in.spec());
  for (const Tensor &out : kernel.outs)
    outSpecs.push_back(out.spec());

  // CPU: on host copies, with the same aliasing.
  std::vector<Tensor> cpuIns = kernel.ins, cpuOuts = kernel.outs;
  for (Tensor &out : cpuOuts)
    out.poison();
  std::vector<const void *> cpuInPtrs;
  std::vector<void *> cpuOutPtrs;
  for (Tensor &in : cpuIns)
    cpuInPtrs.push_back(in.data());
  for (Tensor &out : cpuOuts)
    cpuOutPtrs.push_back(out.data());
  for (auto [out, in] : kernel.aliases)
    cpuOutPtrs[out] = cpuIns[in].data();
  absl::StatusOr<KernelFn> cpu =
      bindCpuKernel(kernel.name, kernel.params, inSpecs, outSpecs);
  if (!cpu.ok())
    return ::testing::AssertionFailure() << "CPU bind: " << cpu.status();
  if (absl::Status status = (*cpu)(cpuInPtrs, cpuOutPtrs, kernel.ctx);
      !status.ok())
    return ::testing::AssertionFailure() << "CPU call: " << status;
  for (auto [out, in] : kernel.aliases)
    cpuOuts[out] = cpuIns[in];

  // CUDA: device copies of the inputs, results poisoned with 0xff bytes (NaN)
  // so that an element left unwritten fails.
  cudaStream_t stream = nullptr;
  if (cudaError_t error = cudaStreamCreate(&stream); error != cudaSuccess)
    return ::testing::AssertionFailure() << "stream: " << cudaText(error);
  std::unique_ptr<CUstream_st, void (*)(cudaStream_t)> streamOwner(
      stream, [](cudaStream_t s) { cudaStreamDestroy(s); });
  std::vector<DeviceBuffer> buffers;
  auto upload = [&](const Tensor &tensor, bool poison) -> void * {
    void *base = nullptr;
    if (cudaMalloc(&base, std::max<size_t>(bytesOf(tensor), 1) +
                              kernel.deviceOffset) != cudaSuccess)
      return nullptr;
    buffers.emplace_back(base);
    void *pointer = static_cast<char *>(base) + kernel.deviceOffset;
    if (poison)
      cudaMemset(pointer, 0xff, bytesOf(tensor));
    else
      cudaMemcpy(pointer, tensor.data(), bytesOf(tensor),
                 cudaMemcpyHostToDevice);
    return pointer;
  };
  std::vector<const void *> inPtrs;
  std::vector<void *> outPtrs;
  for (const Tensor &in : kernel.ins)
    inPtrs.push_back(upload(in, false));
  for (const Tensor &out : kernel.outs)
    outPtrs.push_back(upload(out, true));
  for (auto [out, in] : kernel.aliases)
    outPtrs[out] = const_cast<void *>(inPtrs[in]);
  for (const void *pointer : inPtrs)
    if (!pointer)
      return ::testing::AssertionFailure() << "cudaMalloc failed";
  absl::StatusOr<KernelFn> gpu =
      bindCudaKernel(kernel.name, kernel.params, inSpecs, outSpecs, stream);
  if (!gpu.ok())
    return ::testing::AssertionFailure() << "CUDA bind: " << gpu.status();
  if (absl::Status status = (*gpu)(inPtrs, outPtrs, kernel.ctx); !status.ok())
    return ::testing::AssertionFailure() << "CUDA call: " << status;
  if (cudaError_t error = cudaStreamSynchronize(stream); error != cudaSuccess)
    return ::testing::AssertionFailure() << "CUDA run: " << cudaText(error);

  for (size_t o = 0; o < kernel.outs.size(); ++o) {
    Tensor got = kernel.outs[o];
    cudaMemcpy(got.data(), outPtrs[o], bytesOf(got), cudaMemcpyDeviceToHost);
    const Tensor &want = cpuOuts[o];
    std::vector<double> g = got.values(), w = want.values();
    double squares = 0.0;
    int64_t finite = 0;
    for (double value : w)
      if (std::isfinite(value)) {
        squares += value * value;
        ++finite;
      }
    double scale = finite == 0 ? 0.0 : std::sqrt(squares / finite);
    bool exact = kernel.bitwise || !isFloat(got.dtype());
    double tol = cudaTolerance(got.dtype());
    for (size_t i = 0; i < w.size(); ++i) {
      bool ok = std::isnan(w[i]) ? std::isnan(g[i])
                : exact || std::isinf(w[i])
                    ? g[i] == w[i]
                    : std::fabs(g[i] - w[i]) <= tol * (std::fabs(w[i]) + scale);
      if (!ok)
        return ::testing::AssertionFailure()
               << kernel.name << " result " << o << " (" << describe(got)
               << ") element " << i << ": CUDA " << g[i] << ", CPU " << w[i]
               << ", tolerance " << tol << " x (|CPU| + " << scale << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

} // namespace zero::rt::test
