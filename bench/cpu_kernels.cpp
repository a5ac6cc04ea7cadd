//===- cpu_kernels.cpp - Layer norm and cast kernels, scalar vs Highway ---===//
//
// zero-bench-cpu-kernels: the runtime's train.layer_norm,
// train.layer_norm_grad, train.cast and int4 dist.quantize/dequantize CPU
// kernels as bound by bindCpuKernel (Highway loops,
// runtime/cpu/NormalizationLoops.cpp, CastLoops.cpp, QuantizeLoops.cpp)
// against the scalar code they replaced, kept here verbatim (the row loops
// with sumFixed/dotFixed, the element-at-a-time DType.h conversions in
// 512-element blocks, the nibble-at-a-time int4 packing). Each case runs old
// and new alternately, 9 rounds of about 20 ms each, and prints the median
// nanoseconds per element and the ratio new / old.
//
//   zero-bench-cpu-kernels [--rows R]
//
//===----------------------------------------------------------------------===//

#include "zero/runtime/CpuKernels.h"

#include "runtime/cpu/KernelSupport.h"
#include "runtime/cpu/QuantizeLoops.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/MLIRContext.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace zero::rt;

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "zero-bench-cpu-kernels: %s\n", message.c_str());
  std::exit(1);
}

std::vector<float> randomFloats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(n);
  for (float &value : values)
    value = dist(rng);
  return values;
}

// ---- The scalar code the Highway loops replaced (commit 78e451e). ----

void oldLayerNorm(int64_t rows, int64_t cols, const float *in,
                  const float *gammaIn, const float *betaIn, float epsilon,
                  float *out, float *means, float *rstds,
                  std::vector<float> &scratch) {
  float *x = scratch.data(), *gamma = x + cols, *beta = gamma + cols;
  std::memcpy(gamma, gammaIn, cols * sizeof(float));
  std::memcpy(beta, betaIn, cols * sizeof(float));
  float inverseCols = 1.0f / static_cast<float>(cols);
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(x, in + r * cols, cols * sizeof(float));
    float mean = cpu::sumFixed(x, cols) * inverseCols;
    for (int64_t j = 0; j < cols; ++j)
      x[j] -= mean;
    float variance = cpu::dotFixed(x, x, cols) * inverseCols;
    float rstd = 1.0f / std::sqrt(variance + epsilon);
    for (int64_t j = 0; j < cols; ++j)
      x[j] = x[j] * rstd * gamma[j] + beta[j];
    std::memcpy(out + r * cols, x, cols * sizeof(float));
    means[r] = mean;
    rstds[r] = rstd;
  }
}

void oldLayerNormGrad(int64_t rows, int64_t cols, const float *dy,
                      const float *in, const float *gammaIn, const float *means,
                      const float *rstds, float *dx, float *dgammaOut,
                      float *dbetaOut, std::vector<float> &scratch) {
  float *xhat = scratch.data(), *g = xhat + cols, *gy = g + cols,
        *gamma = gy + cols, *dgamma = gamma + cols, *dbeta = dgamma + cols;
  std::memcpy(gamma, gammaIn, cols * sizeof(float));
  std::fill_n(dgamma, 2 * cols, 0.0f);
  float inverseCols = 1.0f / static_cast<float>(cols);
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(xhat, in + r * cols, cols * sizeof(float));
    std::memcpy(g, dy + r * cols, cols * sizeof(float));
    float mean = means[r], rstd = rstds[r];
    for (int64_t j = 0; j < cols; ++j) {
      xhat[j] = (xhat[j] - mean) * rstd;
      dgamma[j] += g[j] * xhat[j];
      dbeta[j] += g[j];
      gy[j] = g[j] * gamma[j];
    }
    float meanGy = cpu::sumFixed(gy, cols) * inverseCols;
    float meanGyXhat = cpu::dotFixed(gy, xhat, cols) * inverseCols;
    for (int64_t j = 0; j < cols; ++j)
      g[j] = rstd * (gy[j] - meanGy - xhat[j] * meanGyXhat);
    std::memcpy(dx + r * cols, g, cols * sizeof(float));
  }
  std::memcpy(dgammaOut, dgamma, cols * sizeof(float));
  std::memcpy(dbetaOut, dbeta, cols * sizeof(float));
}

/// The old train.cast between f32 and a 16-bit type: 512-element blocks
/// through f32 scratch, one scalar conversion per element.
void oldCast(DType from, DType to, int64_t count, const void *in, void *out) {
  float x[cpu::kBlock], y[cpu::kBlock];
  for (int64_t offset = 0; offset < count; offset += cpu::kBlock) {
    int64_t n = std::min(cpu::kBlock, count - offset);
    if (from == DType::f32)
      std::memcpy(x, static_cast<const float *>(in) + offset, n * 4);
    else
      for (int64_t i = 0; i < n; ++i) {
        uint16_t bits = static_cast<const uint16_t *>(in)[offset + i];
        x[i] = from == DType::bf16 ? bf16ToFloat(bits) : f16ToFloat(bits);
      }
    std::copy(x, x + n, y);
    if (to == DType::f32)
      std::memcpy(static_cast<float *>(out) + offset, y, n * 4);
    else
      for (int64_t i = 0; i < n; ++i)
        static_cast<uint16_t *>(out)[offset + i] =
            to == DType::bf16 ? floatToBf16(y[i]) : floatToF16(y[i]);
  }
}

/// The old int4 dist.quantize of one segment (commit 9ad336e): the Highway
/// block quantizer, then one nibble at a time into zeroed bytes.
void oldQuantizeInt4(int64_t count, int64_t block, const float *x,
                     int8_t *codes, uint8_t *bytes, float *scales) {
  std::memset(bytes, 0, (count + 1) / 2);
  for (int64_t begin = 0, index = 0; begin < count; begin += block, ++index) {
    int64_t n = std::min(block, count - begin);
    scales[index] = cpu::quantizeBlock(n, x + begin, codes, 7.0f);
    for (int64_t k = 0; k < n; ++k) {
      int64_t i = begin + k;
      auto nibble = static_cast<uint8_t>(codes[k] & 0x0f);
      bytes[i / 2] |= i % 2 ? static_cast<uint8_t>(nibble << 4) : nibble;
    }
  }
}

/// The old int4 dist.dequantize of one segment (commit 9ad336e).
void oldDequantizeInt4(int64_t count, int64_t block, const uint8_t *bytes,
                       const float *scales, int8_t *codes, float *x) {
  for (int64_t begin = 0, index = 0; begin < count; begin += block, ++index) {
    int64_t n = std::min(block, count - begin);
    for (int64_t k = 0; k < n; ++k) {
      int64_t i = begin + k;
      int nibble = (i % 2 ? bytes[i / 2] >> 4 : bytes[i / 2]) & 0x0f;
      codes[k] = static_cast<int8_t>(nibble >= 8 ? nibble - 16 : nibble);
    }
    cpu::dequantizeBlock(n, codes, scales[index], x + begin);
  }
}

// ---- Timing. ----

/// Median seconds per call of `old` and `now`, alternated over 9 rounds of
/// about 20 ms each.
std::pair<double, double> timeBoth(const std::function<void()> &old,
                                   const std::function<void()> &now) {
  auto calls = [](const std::function<void()> &fn) {
    fn(); // warm up
    int64_t n = 1;
    for (;;) {
      auto start = Clock::now();
      for (int64_t i = 0; i < n; ++i)
        fn();
      double seconds =
          std::chrono::duration<double>(Clock::now() - start).count();
      if (seconds > 0.02)
        return n;
      n *= 2;
    }
  };
  int64_t oldCalls = calls(old), newCalls = calls(now);
  std::vector<double> olds, news;
  for (int round = 0; round < 9; ++round)
    for (int which = 0; which < 2; ++which) {
      const std::function<void()> &fn = which == 0 ? old : now;
      int64_t n = which == 0 ? oldCalls : newCalls;
      auto start = Clock::now();
      for (int64_t i = 0; i < n; ++i)
        fn();
      double seconds =
          std::chrono::duration<double>(Clock::now() - start).count() / n;
      (which == 0 ? olds : news).push_back(seconds);
    }
  std::sort(olds.begin(), olds.end());
  std::sort(news.begin(), news.end());
  return {olds[olds.size() / 2], news[news.size() / 2]};
}

void report(const std::string &name, int64_t elements,
            std::pair<double, double> times) {
  std::printf("| %s | %lld | %.3f | %.3f | %.2fx |\n", name.c_str(),
              static_cast<long long>(elements),
              times.first * 1e9 / static_cast<double>(elements),
              times.second * 1e9 / static_cast<double>(elements),
              times.first / times.second);
}

KernelFn bind(const char *name, mlir::DictionaryAttr params,
              std::vector<TensorSpec> ins, std::vector<TensorSpec> outs) {
  absl::StatusOr<KernelFn> kernel = bindCpuKernel(name, params, ins, outs);
  if (!kernel.ok())
    fail(std::string(kernel.status().message()));
  return std::move(*kernel);
}

void call(KernelFn &kernel, std::vector<const void *> ins,
          std::vector<void *> outs) {
  if (absl::Status status = kernel(ins, outs, KernelContext()); !status.ok())
    fail(std::string(status.message()));
}

} // namespace

int main(int argc, char **argv) {
  int64_t rows = 1024;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--rows" && i + 1 < argc)
      rows = std::atoll(argv[++i]);
    else
      fail("usage: zero-bench-cpu-kernels [--rows R]");
  }
  if (rows < 1)
    fail("--rows must be at least 1");
  setCpuKernelThreads(1);
  mlir::MLIRContext context;
  mlir::Builder builder(&context);
  mlir::DictionaryAttr eps = builder.getDictionaryAttr(
      {builder.getNamedAttr("eps", builder.getF64FloatAttr(1e-5))});

  std::printf("CPU kernels, scalar (old) vs Highway (new, %s), one thread\n\n",
              cpuVectorTarget());
  std::printf(
      "| kernel | elements | old ns/elem | new ns/elem | old / new |\n");
  std::printf("|---|---|---|---|---|\n");
  for (int64_t cols : {64, 768}) {
    int64_t count = rows * cols;
    std::vector<float> x = randomFloats(count, 1, -2, 3),
                       dy = randomFloats(count, 2, -1, 1),
                       gamma = randomFloats(cols, 3, 0.5, 1.5),
                       beta = randomFloats(cols, 4, -1, 1);
    std::vector<float> y(count), mean(rows), rstd(rows), dx(count),
        dgamma(cols), dbeta(cols), scratch(6 * cols);
    TensorSpec matrix{DType::f32, {rows, cols}}, vector{DType::f32, {cols}},
        stats{DType::f32, {rows}};
    KernelFn forward = bind("train.layer_norm", eps, {matrix, vector, vector},
                            {matrix, stats, stats});
    KernelFn backward =
        bind("train.layer_norm_grad", {},
             {matrix, matrix, vector, stats, stats}, {matrix, vector, vector});
    std::string shape =
        std::to_string(rows) + "x" + std::to_string(cols) + " f32";
    report("layer_norm " + shape, count,
           timeBoth(
               [&] {
                 oldLayerNorm(rows, cols, x.data(), gamma.data(), beta.data(),
                              1e-5f, y.data(), mean.data(), rstd.data(),
                              scratch);
               },
               [&] {
                 call(forward, {x.data(), gamma.data(), beta.data()},
                      {y.data(), mean.data(), rstd.data()});
               }));
    report("layer_norm_grad " + shape, count,
           timeBoth(
               [&] {
                 oldLayerNormGrad(rows, cols, dy.data(), x.data(), gamma.data(),
                                  mean.data(), rstd.data(), dx.data(),
                                  dgamma.data(), dbeta.data(), scratch);
               },
               [&] {
                 call(backward,
                      {dy.data(), x.data(), gamma.data(), mean.data(),
                       rstd.data()},
                      {dx.data(), dgamma.data(), dbeta.data()});
               }));
  }

  const int64_t count = int64_t(1) << 20;
  std::vector<float> wide = randomFloats(count, 5, -100, 100), wideOut(count);
  std::vector<uint16_t> narrow(count);
  for (DType type : {DType::bf16, DType::f16}) {
    std::string name(dtypeName(type));
    TensorSpec f32{DType::f32, {count}}, half{type, {count}};
    KernelFn down = bind("train.cast", {}, {f32}, {half});
    KernelFn up = bind("train.cast", {}, {half}, {f32});
    report("cast f32 -> " + name, count,
           timeBoth(
               [&] {
                 oldCast(DType::f32, type, count, wide.data(), narrow.data());
               },
               [&] { call(down, {wide.data()}, {narrow.data()}); }));
    report("cast " + name + " -> f32", count,
           timeBoth(
               [&] {
                 oldCast(type, DType::f32, count, narrow.data(),
                         wideOut.data());
               },
               [&] { call(up, {narrow.data()}, {wideOut.data()}); }));
  }
  // qgZ's int4 codes in ZeRO++'s blocks of 2048.
  const int64_t block = 2048, blocks = count / block;
  mlir::DictionaryAttr int4 = builder.getDictionaryAttr(
      {builder.getNamedAttr("block", builder.getI64IntegerAttr(block)),
       builder.getNamedAttr("bits", builder.getI64IntegerAttr(4))});
  TensorSpec values{DType::f32, {count}}, packed{DType::i8, {count / 2}},
      scaleSpec{DType::f32, {blocks}};
  KernelFn quantize =
      bind("dist.quantize", int4, {values}, {packed, scaleSpec});
  KernelFn dequantize =
      bind("dist.dequantize", int4, {packed, scaleSpec}, {values});
  std::vector<uint8_t> bytes(count / 2);
  std::vector<int8_t> codes(block);
  std::vector<float> scales(blocks);
  std::string shape = " int4, blocks of " + std::to_string(block);
  report("quantize" + shape, count,
         timeBoth(
             [&] {
               oldQuantizeInt4(count, block, wide.data(), codes.data(),
                               bytes.data(), scales.data());
             },
             [&] {
               call(quantize, {wide.data()}, {bytes.data(), scales.data()});
             }));
  report(
      "dequantize" + shape, count,
      timeBoth(
          [&] {
            oldDequantizeInt4(count, block, bytes.data(), scales.data(),
                              codes.data(), wideOut.data());
          },
          [&] {
            call(dequantize, {bytes.data(), scales.data()}, {wideOut.data()});
          }));
  return 0;
}
