//===- FastDivmod.h - Division by a divisor known at launch -----*- C++ -*-===//
//
// A 64-bit `%` or `/` is a call of about a hundred instructions on NVIDIA
// GPUs, a 32-bit one about twenty; a multiply-high and a shift are two. The
// kernels that decode a linear index into coordinates (transposes, masks,
// the bias of a row) divide by extents fixed for the launch, so the host
// computes each divisor's magic number once (Granlund and Montgomery,
// "Division by Invariant Integers using Multiplication", 1994; the form
// CUTLASS's FastDivmod uses) and the device multiplies.
//
// Exact for every dividend and divisor in [1, 2^31): the kernels take this
// path only for tensors of fewer than 2^31 elements. Host and device compute
// the same, so the host unit test checks what the device runs.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_CUDA_FASTDIVMOD_H
#define ZERO_RUNTIME_CUDA_FASTDIVMOD_H

#include <cstdint>

#ifdef __CUDACC__
#define ZERO_FAST_DIVMOD_FN __host__ __device__ __forceinline__
#else
#define ZERO_FAST_DIVMOD_FN inline
#endif

namespace zero::cuda::dev {

/// The largest element count (exclusive) of the 32-bit index paths.
constexpr int64_t kFastIndexLimit = int64_t{1} << 31;

struct FastDivmod {
  uint32_t divisor = 1;
  uint32_t multiplier = 0;
  uint32_t shift = 0;

  FastDivmod() = default;

  /// `d` in [1, 2^31).
  explicit FastDivmod(uint32_t d) : divisor(d) {
    if (d == 1)
      return;
    // p = 31 + ceil(log2 d); multiplier = ceil(2^p / d), below 2^32.
    uint32_t log2 = 0;
    while ((uint64_t{1} << log2) < d)
      ++log2;
    uint32_t p = 31 + log2;
    multiplier =
        static_cast<uint32_t>(((uint64_t{1} << p) + d - 1) / uint64_t{d});
    shift = p - 32;
  }

  ZERO_FAST_DIVMOD_FN uint32_t divide(uint32_t n) const {
    return divisor == 1 ? n : mulHigh(n, multiplier) >> shift;
  }

  /// n / divisor, and n % divisor in `remainder`.
  ZERO_FAST_DIVMOD_FN uint32_t divmod(uint32_t n, uint32_t &remainder) const {
    uint32_t quotient = divide(n);
    remainder = n - quotient * divisor;
    return quotient;
  }

private:
  ZERO_FAST_DIVMOD_FN static uint32_t mulHigh(uint32_t a, uint32_t b) {
#ifdef __CUDA_ARCH__
    return __umulhi(a, b);
#else
    return static_cast<uint32_t>((uint64_t{a} * b) >> 32);
#endif
  }
};

} // namespace zero::cuda::dev

#undef ZERO_FAST_DIVMOD_FN

#endif // ZERO_RUNTIME_CUDA_FASTDIVMOD_H
