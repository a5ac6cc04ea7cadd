//===- Initializer.h - Seeded parameters and synthetic data -----*- C++ -*-===//
//
// Every value is a pure function of (seed, tensor or stream name, logical
// element index): a counter-based generator (Philox-4x32-10) keyed by the
// seed and the name and indexed by the element. A rank fills just its shard
// and gets exactly the elements a single process would, whatever the number
// of ranks, the ZeRO stage or the order the shards are filled in.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_INITIALIZER_H
#define ZERO_RUNTIME_INITIALIZER_H

#include "zero/runtime/DType.h"

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

#include <array>
#include <cstdint>

namespace zero::rt {

/// Mirrors #train.init (Train_InitAttr): the runtime fills it from the
/// attribute's kind and its two arguments.
struct InitSpec {
  enum class Kind { zeros, ones, constant, normal, uniform };
  Kind kind = Kind::zeros;
  /// constant: the value; normal: the mean; uniform: the low end.
  double a = 0;
  /// normal: the standard deviation; uniform: the high end (exclusive
  /// before rounding to the storage type).
  double b = 0;

  static InitSpec zeros() { return {Kind::zeros, 0, 0}; }
  static InitSpec ones() { return {Kind::ones, 0, 0}; }
  static InitSpec constant(double value) { return {Kind::constant, value, 0}; }
  static InitSpec normal(double mean, double std) {
    return {Kind::normal, mean, std};
  }
  static InitSpec uniform(double low, double high) {
    return {Kind::uniform, low, high};
  }
};

/// "zeros", "ones", "constant", "normal", "uniform", as #train.init spells
/// them.
absl::string_view initKindName(InitSpec::Kind kind);

/// Finite arguments, std >= 0, low <= high.
absl::Status validateInitSpec(const InitSpec &spec);

/// The value of logical element `index` of tensor `name`, before rounding to
/// the storage type.
double initializedValue(const InitSpec &spec, uint64_t seed,
                        absl::string_view name, int64_t index);

/// Writes logical elements [begin, begin + count) of tensor `name` into
/// `out` (element 0 of `out` is logical element `begin`), rounded to `dtype`
/// through f32 (integer types round to nearest). Elements at logical index
/// >= logicalElements (padding of the last shard) are written as 0.
void fillInitialized(const InitSpec &spec, uint64_t seed,
                     absl::string_view name, int64_t logicalElements,
                     int64_t begin, int64_t count, DType dtype, void *out);

/// The generator under both: Philox-4x32-10 (Salmon et al., SC'11), as in
/// Random123, cuRAND and JAX. Exposed so that it can be checked against the
/// published known-answer vectors and the draws reproduced elsewhere: element
/// i of tensor `name` uses key splitMix64(splitMix64(seed ^ 0x696e6974) ^
/// fnv1a64(name)) split low/high and counter {lo(i), hi(i), 0, 0}.
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 2> key,
                                      std::array<uint32_t, 4> counter);

/// Synthetic data for step `step` (1-based) of stream `stream` (e.g. "x",
/// "y"): elements [begin, begin + count) of the flattened global batch, the
/// same on every rank, so each rank takes its slice. Float types get uniform
/// values in [-1, 1); integer types get classes in [0, bound) (bound < 1
/// counts as 1). Distinct from fillInitialized's values for the same name.
void fillUniform(uint64_t seed, absl::string_view stream, int64_t step,
                 int64_t begin, int64_t count, DType dtype, void *out,
                 int64_t bound = 0);

} // namespace zero::rt

#endif // ZERO_RUNTIME_INITIALIZER_H
