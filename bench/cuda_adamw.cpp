//===- cuda_adamw.cpp - Memory bandwidth of the fused AdamW kernel --------===//
//
// zero-bench-adamw: the optimizer step of a ZeRO shard is one fused AdamW
// kernel per parameter (runtime/cuda, "train.adamw"), which reads the
// parameters, gradients and both moments and writes the parameters and
// moments back, in place. It does a few flops per element, so its speed is
// the GPU's memory bandwidth; this measures how close it comes to the HBM
// peak (target: 85%, docs/benchmarks.md, "GPU benchmarks").
//
//   zero-bench-adamw --elements 268435456 --grad-dtype bf16 --iterations 50
//
// It binds the kernel exactly as the CUDA backend does (bindCudaKernel with
// the attributes zero-lower-to-runtime gives a train.optimizer), over one
// flat shard of f32 parameters and moments, and times back-to-back calls on
// one stream with CUDA events.
//
//===----------------------------------------------------------------------===//

#include "zero/runtime/CudaDevices.h"
#include "zero/runtime/CudaKernels.h"

#include "Gpt2AdamW.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"

#include "absl/strings/str_cat.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace zero;
using namespace zero::rt;
namespace cl = llvm::cl;

static cl::OptionCategory benchCategory("zero-bench-adamw options");
static cl::opt<int64_t>
    elementsFlag("elements",
                 cl::desc("Elements of the shard (default 256M: 3.5 GiB of "
                          "f32 state and bf16 gradients)"),
                 cl::init(int64_t(256) << 20), cl::cat(benchCategory));
static cl::opt<std::string>
    gradDtypeFlag("grad-dtype",
                  cl::desc("Element type of the gradients: bf16 (default, "
                           "as in a bf16 run), f16 or f32"),
                  cl::init("bf16"), cl::cat(benchCategory));
static cl::opt<int> iterationsFlag("iterations", cl::desc("Timed calls"),
                                   cl::init(50), cl::cat(benchCategory));
static cl::opt<int> warmupFlag("warmup",
                               cl::desc("Untimed calls before timing"),
                               cl::init(5), cl::cat(benchCategory));
static cl::opt<double> peakFlag(
    "peak-gbps",
    cl::desc("HBM peak of the GPU in GB/s (default from the device name: "
             "H100 SXM 3350, H200 4800; required for other GPUs)"),
    cl::init(0), cl::cat(benchCategory));
static cl::opt<int> deviceFlag("device", cl::desc("CUDA device"), cl::init(0),
                               cl::cat(benchCategory));

/// Prints the message and exits with status 1 (every error is the user's
/// or the machine's: there is nothing to unwind).
[[noreturn]] static void fail(const std::string &message) {
  std::fprintf(stderr, "zero-bench-adamw: %s\n", message.c_str());
  std::fflush(stderr);
  std::exit(1);
}

static void check(cudaError_t error, const char *what) {
  if (error != cudaSuccess)
    fail(absl::StrCat(what, ": ", cudaGetErrorString(error)));
}

/// HBM peak of the named GPU in GB/s (10^9 bytes), or 0 where unknown. The
/// H100 PCIe (2000) and NVL (3900) parts are told apart by name and left to
/// --peak-gbps.
static double defaultPeakGbps(const std::string &name) {
  if (name.find("H200") != std::string::npos)
    return 4800;
  if (name.find("H100") != std::string::npos &&
      name.find("PCIe") == std::string::npos &&
      name.find("NVL") == std::string::npos)
    return 3350;
  return 0;
}

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(benchCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "zero-bench-adamw: memory bandwidth of the fused CUDA AdamW kernel\n");
  if (elementsFlag < 1)
    fail("--elements must be at least 1");
  if (iterationsFlag < 1)
    fail("--iterations must be at least 1");
  if (warmupFlag < 0)
    fail("--warmup must not be negative");
  absl::StatusOr<DType> gradType = parseDType(gradDtypeFlag);
  if (!gradType.ok() || !isFloat(*gradType))
    fail(absl::StrCat("--grad-dtype must be f32, bf16 or f16, got '",
                      gradDtypeFlag.getValue(), "'"));

  absl::StatusOr<std::vector<cuda::CudaDeviceInfo>> devices =
      cuda::listCudaDevices();
  if (!devices.ok())
    fail(std::string(devices.status().message()));
  if (devices->empty())
    fail("no CUDA device is visible");
  if (deviceFlag < 0 || deviceFlag >= static_cast<int>(devices->size()))
    fail(absl::StrCat("--device ", deviceFlag.getValue(), ": ", devices->size(),
                      " GPU(s) are visible"));
  const cuda::CudaDeviceInfo &device = (*devices)[deviceFlag];
  double peak =
      peakFlag > 0 ? peakFlag.getValue() : defaultPeakGbps(device.name);
  if (peak <= 0)
    fail(absl::StrCat("no known HBM peak for '", device.name,
                      "': give it with --peak-gbps"));
  check(cudaSetDevice(deviceFlag), "cudaSetDevice");

  // The attributes zero-lower-to-runtime gives AdamW (GPT-2's settings); a
  // constant rate, so no schedule attributes.
  mlir::MLIRContext context;
  mlir::Builder builder(&context);
  mlir::DictionaryAttr params = zero::bench::gpt2AdamWParams(builder);

  // Operands: param, grad, m, v, step (an i64 scalar); results: param, m, v,
  // aliased onto the operands (in place, as the lowered program runs it).
  int64_t count = elementsFlag;
  std::vector<int64_t> shape = {count};
  TensorSpec param{DType::f32, shape}, grad{*gradType, shape},
      moment{DType::f32, shape}, step{DType::i64, {}};
  std::vector<TensorSpec> inSpecs = {param, grad, moment, moment, step};
  std::vector<TensorSpec> outSpecs = {param, moment, moment};

  std::vector<void *> buffers;
  auto allocate = [&](int64_t bytes, const char *what) {
    void *memory = nullptr;
    check(cudaMalloc(&memory, static_cast<size_t>(bytes)),
          absl::StrCat("cudaMalloc of ", bytes, " bytes for ", what).c_str());
    // Zeros: a valid state (v = 0 gives an update of 0 / eps), and the
    // kernel's speed does not depend on the values.
    check(cudaMemset(memory, 0, static_cast<size_t>(bytes)), "cudaMemset");
    buffers.push_back(memory);
    return memory;
  };
  void *p = allocate(count * 4, "the parameters");
  void *g = allocate(count * dtypeBytes(*gradType), "the gradients");
  void *m = allocate(count * 4, "the first moment");
  void *v = allocate(count * 4, "the second moment");
  void *t = allocate(sizeof(int64_t), "the step");
  int64_t one = 1;
  check(cudaMemcpy(t, &one, sizeof(one), cudaMemcpyHostToDevice),
        "cudaMemcpy of the step");

  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
        "cudaStreamCreate");
  absl::StatusOr<KernelFn> kernel =
      bindCudaKernel("train.adamw", params, inSpecs, outSpecs, stream);
  if (!kernel.ok())
    fail(std::string(kernel.status().message()));
  std::vector<const void *> ins = {p, g, m, v, t};
  std::vector<void *> outs = {p, m, v};
  KernelContext ctx; // step 1 on the host; the bias corrections read `t`

  for (int i = 0; i < warmupFlag; ++i)
    if (absl::Status status = (*kernel)(ins, outs, ctx); !status.ok())
      fail(std::string(status.message()));
  check(cudaStreamSynchronize(stream), "the warm-up calls");

  cudaEvent_t start = nullptr, stop = nullptr;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  check(cudaEventRecord(start, stream), "cudaEventRecord");
  for (int i = 0; i < iterationsFlag; ++i)
    if (absl::Status status = (*kernel)(ins, outs, ctx); !status.ok())
      fail(std::string(status.message()));
  check(cudaEventRecord(stop, stream), "cudaEventRecord");
  check(cudaEventSynchronize(stop), "the timed calls");
  float milliseconds = 0;
  check(cudaEventElapsedTime(&milliseconds, start, stop),
        "cudaEventElapsedTime");

  // Per call: reads p, g, m, v and writes p, m, v (the 8-byte step is noise).
  double bytesPerCall = static_cast<double>(count) *
                        (4 + dtypeBytes(*gradType) + 4 + 4 + 4 + 4 + 4);
  double seconds = milliseconds / 1e3 / iterationsFlag;
  double gbps = bytesPerCall / seconds / 1e9;
  std::printf("device: %s (GPU %d)\n", device.name.c_str(), device.ordinal);
  std::printf("train.adamw: %lld elements, f32 param/m/v, %s grad, in place\n",
              static_cast<long long>(count),
              std::string(dtypeName(*gradType)).c_str());
  std::printf("bytes moved per call: %.0f (%.3f GB: reads p, g, m, v; writes "
              "p, m, v)\n",
              bytesPerCall, bytesPerCall / 1e9);
  std::printf("time per call: %.3f ms (mean of %d after %d warm-up)\n",
              seconds * 1e3, iterationsFlag.getValue(), warmupFlag.getValue());
  std::printf("achieved: %.1f GB/s, %.1f%% of the %.0f GB/s HBM peak\n", gbps,
              100.0 * gbps / peak, peak);

  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  // Drop the bound kernel (and whatever it holds) before the memory and the
  // stream it was bound to.
  *kernel = KernelFn();
  for (void *buffer : buffers)
    cudaFree(buffer);
  cudaStreamDestroy(stream);
  return 0;
}
