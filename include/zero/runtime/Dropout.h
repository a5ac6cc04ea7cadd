//===- Dropout.h - The dropout mask, the same on every backend ------------===//
//
// train.dropout keeps element i of a step's tensor with probability 1 - rate.
// Whether it keeps it is a function of (seed, the op's stream, step,
// micro-step, the element's index in the global batch) alone: Philox4x32-10
// (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2,
// 3", SC'11), a counter-based generator, so the mask does not depend on how
// the batch is split over the ranks, on the ZeRO stage, on the order in
// which elements are visited, or on the backend. The gradient is the same op
// with the same key, hence the same mask. Written out here (a few lines,
// fixed by the paper and its known-answer vectors, checked in DropoutTest)
// so that the CPU and CUDA kernels share it bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_DROPOUT_H
#define ZERO_RUNTIME_DROPOUT_H

#include <cstdint>

#if defined(__CUDACC__)
#define ZERO_HOST_DEVICE __host__ __device__
#else
#define ZERO_HOST_DEVICE
#endif

namespace zero::rt {

struct Philox4x32 {
  uint32_t v[4];
};

/// Philox4x32-10 of `counter` under `key`.
ZERO_HOST_DEVICE inline Philox4x32 philox4x32(Philox4x32 counter, uint32_t key0,
                                              uint32_t key1) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  uint32_t *c = counter.v;
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = static_cast<uint64_t>(kMul0) * c[0];
    uint64_t p1 = static_cast<uint64_t>(kMul1) * c[2];
    uint32_t hi0 = static_cast<uint32_t>(p0 >> 32),
             lo0 = static_cast<uint32_t>(p0);
    uint32_t hi1 = static_cast<uint32_t>(p1 >> 32),
             lo1 = static_cast<uint32_t>(p1);
    Philox4x32 next = {{hi1 ^ c[1] ^ key0, lo1, hi0 ^ c[3] ^ key1, lo0}};
    counter = next;
    key0 += kWeyl0;
    key1 += kWeyl1;
  }
  return counter;
}

/// What identifies one dropout op's mask in one (micro-)step.
struct DropoutKey {
  uint64_t seed = 0;
  int64_t stream = 0;
  int64_t step = 0;
  int64_t microStep = 0;
};

/// Four uniform 32-bit draws for global elements 4 * block .. 4 * block + 3.
ZERO_HOST_DEVICE inline Philox4x32 dropoutBits(const DropoutKey &key,
                                               uint64_t block) {
  // Counter: the element block and the (micro-)step; key: the seed and the
  // op's stream, so that no two ops or steps share a counter and key.
  Philox4x32 counter = {{static_cast<uint32_t>(block),
                         static_cast<uint32_t>(block >> 32),
                         static_cast<uint32_t>(key.step),
                         static_cast<uint32_t>(key.microStep) ^
                             (static_cast<uint32_t>(key.step >> 32) << 16)}};
  uint32_t key0 = static_cast<uint32_t>(key.seed) ^
                  (static_cast<uint32_t>(key.stream) * 0x85EBCA6Bu);
  uint32_t key1 =
      static_cast<uint32_t>(key.seed >> 32) ^ static_cast<uint32_t>(key.stream);
  return philox4x32(counter, key0, key1);
}

/// Whether element `index` of the global batch is kept: its 32-bit draw,
/// as a fraction of 2^32, is at least `rate`. `threshold` is
/// dropoutThreshold(rate).
ZERO_HOST_DEVICE inline bool dropoutKeeps(const DropoutKey &key, uint64_t index,
                                          uint64_t threshold) {
  Philox4x32 bits = dropoutBits(key, index / 4);
  return bits.v[index % 4] >= threshold;
}

/// rate * 2^32, rounded down: draws below it drop their element.
inline uint64_t dropoutThreshold(double rate) {
  return static_cast<uint64_t>(rate * 4294967296.0);
}

} // namespace zero::rt

#endif // ZERO_RUNTIME_DROPOUT_H
