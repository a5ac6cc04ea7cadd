//===- Initializer.cpp - Seeded parameters and synthetic data -------------===//

#include "zero/runtime/Initializer.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace zero::rt {
namespace {

uint64_t fnv1a64(absl::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (char c : text) {
    hash ^= static_cast<uint8_t>(c);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

uint64_t splitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

constexpr double kTwoPi = 6.283185307179586476925286766559;

// Initializers and data streams draw from separate key spaces, so a data
// stream named like a parameter does not reproduce the parameter's values.
constexpr uint64_t kInitDomain = 0x696e6974ull; // "init"
constexpr uint64_t kDataDomain = 0x64617461ull; // "data"

uint64_t makeKey(uint64_t seed, uint64_t domain, absl::string_view name) {
  return splitMix64(splitMix64(seed ^ domain) ^ fnv1a64(name));
}

std::array<uint32_t, 4> philox(uint64_t key, uint64_t counterLo,
                               uint64_t counterHi) {
  return philox4x32_10(
      {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)},
      {static_cast<uint32_t>(counterLo), static_cast<uint32_t>(counterLo >> 32),
       static_cast<uint32_t>(counterHi),
       static_cast<uint32_t>(counterHi >> 32)});
}

/// [0, 1) with 53 random bits.
double unitInterval(uint32_t hi, uint32_t lo) {
  uint64_t bits = (static_cast<uint64_t>(hi) << 32) | lo;
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

void storeValue(void *out, DType dtype, int64_t index, double value) {
  switch (dtype) {
  case DType::i32:
    static_cast<int32_t *>(out)[index] =
        static_cast<int32_t>(std::llround(value));
    return;
  case DType::i64:
    static_cast<int64_t *>(out)[index] = std::llround(value);
    return;
  default:
    storeFromFloat(out, dtype, index, static_cast<float>(value));
    return;
  }
}

double drawValue(const InitSpec &spec, uint64_t key, int64_t index) {
  switch (spec.kind) {
  case InitSpec::Kind::zeros:
    return 0.0;
  case InitSpec::Kind::ones:
    return 1.0;
  case InitSpec::Kind::constant:
    return spec.a;
  case InitSpec::Kind::uniform: {
    auto r = philox(key, static_cast<uint64_t>(index), 0);
    return spec.a + (spec.b - spec.a) * unitInterval(r[0], r[1]);
  }
  case InitSpec::Kind::normal: {
    // Box-Muller from two uniforms of the same counter; 1 - u keeps the
    // logarithm's argument in (0, 1].
    auto r = philox(key, static_cast<uint64_t>(index), 0);
    double u1 = 1.0 - unitInterval(r[0], r[1]);
    double u2 = unitInterval(r[2], r[3]);
    double radius = std::sqrt(-2.0 * std::log(u1));
    return spec.a + spec.b * radius * std::cos(kTwoPi * u2);
  }
  }
  return 0.0;
}

} // namespace

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 2> key,
                                      std::array<uint32_t, 4> counter) {
  auto [k0, k1] = key;
  auto [c0, c1, c2, c3] = counter;
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t{0xD2511F53u} * c0;
    uint64_t p1 = uint64_t{0xCD9E8D57u} * c2;
    uint32_t hi0 = static_cast<uint32_t>(p0 >> 32);
    uint32_t lo0 = static_cast<uint32_t>(p0);
    uint32_t hi1 = static_cast<uint32_t>(p1 >> 32);
    uint32_t lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    // Weyl increments of the key between rounds.
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {c0, c1, c2, c3};
}

absl::string_view initKindName(InitSpec::Kind kind) {
  switch (kind) {
  case InitSpec::Kind::zeros:
    return "zeros";
  case InitSpec::Kind::ones:
    return "ones";
  case InitSpec::Kind::constant:
    return "constant";
  case InitSpec::Kind::normal:
    return "normal";
  case InitSpec::Kind::uniform:
    return "uniform";
  }
  return "?";
}

absl::Status validateInitSpec(const InitSpec &spec) {
  if (!std::isfinite(spec.a) || !std::isfinite(spec.b))
    return absl::InvalidArgumentError(
        absl::StrCat(initKindName(spec.kind), " initializer has a non-finite "
                                              "argument"));
  if (spec.kind == InitSpec::Kind::normal && spec.b < 0)
    return absl::InvalidArgumentError(absl::StrCat(
        "normal initializer has a negative standard deviation ", spec.b));
  if (spec.kind == InitSpec::Kind::uniform && spec.a > spec.b)
    return absl::InvalidArgumentError(absl::StrCat(
        "uniform initializer has low ", spec.a, " > high ", spec.b));
  return absl::OkStatus();
}

double initializedValue(const InitSpec &spec, uint64_t seed,
                        absl::string_view name, int64_t index) {
  return drawValue(spec, makeKey(seed, kInitDomain, name), index);
}

void fillInitialized(const InitSpec &spec, uint64_t seed,
                     absl::string_view name, int64_t logicalElements,
                     int64_t begin, int64_t count, DType dtype, void *out) {
  uint64_t key = makeKey(seed, kInitDomain, name);
  for (int64_t i = 0; i < count; ++i) {
    int64_t index = begin + i;
    storeValue(out, dtype, i,
               index < logicalElements ? drawValue(spec, key, index) : 0.0);
  }
}

void fillUniform(uint64_t seed, absl::string_view stream, int64_t step,
                 int64_t begin, int64_t count, DType dtype, void *out,
                 int64_t bound) {
  uint64_t key = makeKey(seed, kDataDomain, stream);
  if (bound < 1)
    bound = 1;
  for (int64_t i = 0; i < count; ++i) {
    // The step is the counter's high half: every step is a fresh batch.
    auto r = philox(key, static_cast<uint64_t>(begin + i),
                    static_cast<uint64_t>(step));
    double u = unitInterval(r[0], r[1]);
    if (isFloat(dtype)) {
      // Rounding to the storage type could turn values just below 1 into 1;
      // clamping to the largest value below 1 keeps the range half-open.
      double below = dtype == DType::f32    ? 1.0 - 0x1.0p-24
                     : dtype == DType::bf16 ? 1.0 - 0x1.0p-8
                                            : 1.0 - 0x1.0p-11;
      storeFromFloat(out, dtype, i,
                     static_cast<float>(std::min(2.0 * u - 1.0, below)));
      continue;
    }
    int64_t cls = std::min<int64_t>(
        static_cast<int64_t>(u * static_cast<double>(bound)), bound - 1);
    if (dtype == DType::i32)
      static_cast<int32_t *>(out)[i] = static_cast<int32_t>(cls);
    else
      static_cast<int64_t *>(out)[i] = cls;
  }
}

} // namespace zero::rt
