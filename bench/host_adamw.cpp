//===- host_adamw.cpp - The host update of offloaded optimizer state
//-------===//
//
// zero-bench-host-adamw: with `zero-offload` the AdamW update of a rank's
// shard runs on the host (runtime/cpu, "train.adamw", vectorized with
// Highway). It reads the parameters, gradients and both moments and writes
// the parameters and moments back, in place: 28 bytes per f32 element for a
// handful of flops, so its speed is the host's memory bandwidth. This
// measures it against a STREAM triad (a = b + s c) over as many bytes, in
// the same run, on 1 and on T threads (each thread updating its own range,
// as the elementwise kernel allows), and prints both as elements/s and
// GB/s (10^9 bytes).
//
//   zero-bench-host-adamw --elements 33554432 --thread-counts 1,2
//
// With --json FILE it also writes the figures for bench/host_adamw.py,
// which compares them with torch.optim.AdamW on the same threads.
//
//===----------------------------------------------------------------------===//

#include "zero/runtime/CpuKernels.h"

#include "Gpt2AdamW.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace zero::rt;
namespace cl = llvm::cl;

static cl::OptionCategory benchCategory("zero-bench-host-adamw options");
static cl::opt<int64_t>
    elementsFlag("elements",
                 cl::desc("Elements of the shard (default 32M: 512 MiB of "
                          "f32 parameters, gradients and moments)"),
                 cl::init(int64_t(32) << 20), cl::cat(benchCategory));
static cl::opt<std::string>
    threadsFlag("thread-counts",
                cl::desc("Thread counts to measure (default 1,2)"),
                cl::init("1,2"), cl::cat(benchCategory));
static cl::opt<int> iterationsFlag("iterations", cl::desc("Timed repetitions"),
                                   cl::init(20), cl::cat(benchCategory));
static cl::opt<std::string> jsonFlag("json",
                                     cl::desc("Also write the figures here"),
                                     cl::cat(benchCategory));

[[noreturn]] static void fail(const std::string &message) {
  std::fprintf(stderr, "zero-bench-host-adamw: %s\n", message.c_str());
  std::exit(1);
}

/// Zeroed, 64-byte aligned floats that every thread first touches in its
/// own range (so that on a NUMA host each range lives near its thread).
struct Floats {
  explicit Floats(int64_t count)
      : data(static_cast<float *>(
            std::aligned_alloc(64, (count * 4 + 63) / 64 * 64))) {
    if (!data)
      fail(absl::StrCat("cannot allocate ", count * 4, " bytes"));
  }
  ~Floats() { std::free(data); }
  float *data;
};

/// Seconds per repetition of `work(begin, end)` over [0, count) split into
/// `threads` ranges (the best of the repetitions, after one untimed run).
static double timeSplit(int64_t count, int threads,
                        const std::function<void(int64_t, int64_t)> &work) {
  auto runOnce = [&] {
    std::vector<std::thread> pool;
    int64_t chunk = (count + threads - 1) / threads;
    for (int t = 0; t < threads; ++t) {
      int64_t begin = std::min(count, t * chunk);
      int64_t end = std::min(count, begin + chunk);
      pool.emplace_back([&, begin, end] { work(begin, end); });
    }
    for (std::thread &thread : pool)
      thread.join();
  };
  runOnce();
  double best = 1e30;
  for (int i = 0; i < iterationsFlag; ++i) {
    auto start = std::chrono::steady_clock::now();
    runOnce();
    std::chrono::duration<double> seconds =
        std::chrono::steady_clock::now() - start;
    best = std::min(best, seconds.count());
  }
  return best;
}

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(benchCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "zero-bench-host-adamw: the host AdamW update against STREAM triad\n");
  if (elementsFlag < 1)
    fail("--elements must be at least 1");
  if (iterationsFlag < 1)
    fail("--iterations must be at least 1");
  std::vector<int> threadCounts;
  for (absl::string_view text : absl::StrSplit(threadsFlag.getValue(), ',')) {
    int threads = 0;
    if (!absl::SimpleAtoi(text, &threads) || threads < 1)
      fail(absl::StrCat("--thread-counts takes counts >= 1 such as 1,2; got '",
                        threadsFlag.getValue(), "'"));
    threadCounts.push_back(threads);
  }
  setCpuKernelThreads(1);

  // The attributes zero-lower-to-runtime gives GPT-2's AdamW.
  mlir::MLIRContext context;
  mlir::Builder builder(&context);
  mlir::DictionaryAttr params = zero::bench::gpt2AdamWParams(builder);
  int64_t count = elementsFlag;
  Floats param(count), grad(count), m(count), v(count);
  Floats a(count * 7 / 6), b(count * 7 / 6), c(count * 7 / 6);
  int64_t step = 1;

  // One bound kernel per range size, as a rank binds one per shard.
  std::vector<std::pair<int64_t, KernelFn>> kernels;
  auto kernelFor = [&](int64_t elements) -> KernelFn & {
    for (auto &[size, kernel] : kernels)
      if (size == elements)
        return kernel;
    TensorSpec spec{DType::f32, {elements}};
    TensorSpec stepSpec{DType::i64, {}};
    absl::StatusOr<KernelFn> kernel =
        bindCpuKernel("train.adamw", params, {spec, spec, spec, spec, stepSpec},
                      {spec, spec, spec});
    if (!kernel.ok())
      fail(std::string(kernel.status().message()));
    kernels.emplace_back(elements, std::move(*kernel));
    return kernels.back().second;
  };
  for (int threads : threadCounts) {
    int64_t chunk = (count + threads - 1) / threads;
    kernelFor(chunk);
    if (count % chunk)
      kernelFor(count % chunk);
  }

  // The triad moves 3 arrays (12 B per element, STREAM's count); AdamW 28 B
  // per element. The triad runs over 7/6 as many elements, the same bytes.
  int64_t triadCount = count * 7 / 6;
  double scalar = 3.0;
  llvm::json::Array rows;
  std::printf("host AdamW (f32, in place, %s) over %lld elements "
              "(%.0f MiB moved per update)\n",
              cpuVectorTarget(), static_cast<long long>(count),
              count * 28.0 / (1 << 20));
  std::printf("%8s %16s %12s %16s %12s %10s\n", "threads", "AdamW elem/s",
              "AdamW GB/s", "triad elem/s", "triad GB/s", "of triad");
  for (int threads : threadCounts) {
    double adamw = timeSplit(count, threads, [&](int64_t begin, int64_t end) {
      const void *ins[] = {param.data + begin, grad.data + begin,
                           m.data + begin, v.data + begin, &step};
      void *outs[] = {param.data + begin, m.data + begin, v.data + begin};
      KernelContext context;
      if (absl::Status status = kernelFor(end - begin)(ins, outs, context);
          !status.ok())
        fail(std::string(status.message()));
    });
    double triad =
        timeSplit(triadCount, threads, [&](int64_t begin, int64_t end) {
          float *x = a.data, *y = b.data, *z = c.data;
          for (int64_t i = begin; i < end; ++i)
            x[i] = y[i] + static_cast<float>(scalar) * z[i];
        });
    double adamwGbps = count * 28.0 / adamw / 1e9;
    double triadGbps = triadCount * 12.0 / triad / 1e9;
    std::printf("%8d %16.3e %12.2f %16.3e %12.2f %9.0f%%\n", threads,
                count / adamw, adamwGbps, triadCount / triad, triadGbps,
                100.0 * adamwGbps / triadGbps);
    rows.push_back(llvm::json::Object{{"threads", threads},
                                      {"adamw_seconds", adamw},
                                      {"adamw_elements_per_s", count / adamw},
                                      {"adamw_gbps", adamwGbps},
                                      {"triad_gbps", triadGbps}});
  }
  if (!jsonFlag.empty()) {
    std::error_code error;
    llvm::raw_fd_ostream os(jsonFlag, error, llvm::sys::fs::OF_Text);
    if (error)
      fail(absl::StrCat("cannot write ", jsonFlag.getValue(), ": ",
                        error.message()));
    os << llvm::formatv("{0:2}", llvm::json::Value(llvm::json::Object{
                                     {"elements", count},
                                     {"target", cpuVectorTarget()},
                                     {"rows", std::move(rows)}}))
       << "\n";
  }
  return 0;
}
