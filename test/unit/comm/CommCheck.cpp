//===- CommCheck.cpp - Value checks of every collective -------------------===//
//
// Every rank can compute every rank's input (they are functions of rank and
// index), so each rank checks its own result against a serial expectation.
//
//===----------------------------------------------------------------------===//

#include "CommCheck.h"

#include "absl/strings/str_format.h"

#include <cmath>
#include <cstring>

namespace zero::rt::check {

double valueAt(const Buffer &buffer, int64_t index) {
  switch (buffer.dtype) {
  case DType::i32:
    return reinterpret_cast<const int32_t *>(buffer.data())[index];
  case DType::i64:
    return static_cast<double>(
        reinterpret_cast<const int64_t *>(buffer.data())[index]);
  default:
    return loadAsFloat(buffer.data(), buffer.dtype, index);
  }
}

void setValue(Buffer &buffer, int64_t index, double value) {
  switch (buffer.dtype) {
  case DType::i32:
    reinterpret_cast<int32_t *>(buffer.data())[index] =
        static_cast<int32_t>(value);
    return;
  case DType::i64:
    reinterpret_cast<int64_t *>(buffer.data())[index] =
        static_cast<int64_t>(value);
    return;
  default:
    storeFromFloat(buffer.data(), buffer.dtype, index,
                   static_cast<float>(value));
  }
}

double smallValue(int seed, int rank, int64_t index) {
  return static_cast<double>((index * 7 + rank * 13 + seed * 5) % 17) - 8;
}

float randomValue(int seed, int rank, int64_t index) {
  // splitmix64 of (seed, rank, index).
  uint64_t x = (static_cast<uint64_t>(seed) << 48) ^
               (static_cast<uint64_t>(rank) << 40) ^
               static_cast<uint64_t>(index);
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return static_cast<float>(static_cast<double>(x >> 11) / 4503599627370496.0 -
                            1.0);
}

namespace {

std::string describe(const Buffer &buffer, int64_t index) {
  // Enough digits to tell neighbouring floats apart, and the bits.
  std::string text = absl::StrFormat("%.9g", valueAt(buffer, index));
  if (isFloat(buffer.dtype)) {
    uint32_t bits = 0;
    std::memcpy(&bits, buffer.bytes.data() + dtypeBytes(buffer.dtype) * index,
                dtypeBytes(buffer.dtype));
    absl::StrAppend(&text, " (bits 0x", absl::Hex(bits), ")");
  }
  return text;
}

} // namespace

bool expectSame(Checker &checker, const Buffer &actual, const Buffer &expected,
                const std::string &what) {
  int64_t elementBytes = dtypeBytes(actual.dtype);
  int reported = 0;
  for (int64_t i = 0; i < expected.count; ++i) {
    if (std::memcmp(actual.bytes.data() + i * elementBytes,
                    expected.bytes.data() + i * elementBytes,
                    elementBytes) == 0)
      continue;
    if (reported++ < 3)
      checker.fail(absl::StrCat(what, ": element ", i, " is ",
                                describe(actual, i), ", expected ",
                                describe(expected, i)));
  }
  return checker.expect(reported == 0, what);
}

bool expectClose(Checker &checker, const Buffer &actual, const Buffer &expected,
                 double tolerance, const std::string &what) {
  int reported = 0;
  for (int64_t i = 0; i < expected.count; ++i) {
    double a = valueAt(actual, i), e = valueAt(expected, i);
    if (std::fabs(a - e) <= tolerance * std::max(1.0, std::fabs(e)))
      continue;
    if (reported++ < 3)
      checker.fail(
          absl::StrCat(what, ": element ", i, " is ", a, ", expected ", e));
  }
  return checker.expect(reported == 0, what);
}

namespace {

constexpr DType kTypes[] = {DType::f32, DType::bf16, DType::f16, DType::i32,
                            DType::i64};
constexpr ReduceKind kKinds[] = {ReduceKind::sum, ReduceKind::mean,
                                 ReduceKind::max};

const char *kindName(ReduceKind kind) {
  return kind == ReduceKind::sum    ? "sum"
         : kind == ReduceKind::mean ? "mean"
                                    : "max";
}

/// Input of `rank` at `index`; i64 goes past the i32 range.
double inputValue(DType dtype, int seed, int rank, int64_t index) {
  double small = smallValue(seed, rank, index);
  return dtype == DType::i64 ? small * 8589934592.0 + rank : small;
}

/// What a reduction of every rank's inputValue at `index` must give, computed
/// the way the communicator promises: in f32, rank order, rounded once.
double expectedReduction(DType dtype, ReduceKind kind, int seed, int ranks,
                         int64_t index) {
  if (!isFloat(dtype)) {
    int64_t acc = static_cast<int64_t>(inputValue(dtype, seed, 0, index));
    for (int r = 1; r < ranks; ++r) {
      int64_t v = static_cast<int64_t>(inputValue(dtype, seed, r, index));
      acc = kind == ReduceKind::max ? std::max(acc, v) : acc + v;
    }
    return static_cast<double>(acc);
  }
  float acc = static_cast<float>(inputValue(dtype, seed, 0, index));
  for (int r = 1; r < ranks; ++r) {
    float v = static_cast<float>(inputValue(dtype, seed, r, index));
    acc = kind == ReduceKind::max ? std::max(acc, v) : acc + v;
  }
  if (kind == ReduceKind::mean)
    acc /= static_cast<float>(ranks);
  return acc;
}

struct Context {
  Checker &checker;
  Communicator &comm;
  std::string mode;
  int seed = 1;
};

void checkAllReduce(Context &c) {
  int rank = c.comm.rank(), ranks = c.comm.size();
  for (DType dtype : kTypes)
    for (ReduceKind kind : kKinds) {
      if (!isFloat(dtype) && kind == ReduceKind::mean)
        continue;
      for (int64_t count : {0, 1, 7, 1000, 4099})
        for (bool inPlace : {false, true}) {
          int seed = ++c.seed;
          Buffer in(dtype, count), out(dtype, count), expected(dtype, count);
          for (int64_t i = 0; i < count; ++i) {
            setValue(in, i, inputValue(dtype, seed, rank, i));
            setValue(out, i, -99);
            setValue(expected, i,
                     expectedReduction(dtype, kind, seed, ranks, i));
          }
          std::string what = absl::StrCat(
              c.mode, " all_reduce ", dtypeName(dtype), " ", kindName(kind),
              " count ", count, inPlace ? " in place" : "");
          Buffer &result = inPlace ? in : out;
          if (c.checker.expectOk(c.comm.allReduce(in.data(), result.data(),
                                                  count, dtype, kind),
                                 what))
            expectSame(c.checker, result, expected, what);
        }
    }
}

void checkReduceScatter(Context &c) {
  int rank = c.comm.rank(), ranks = c.comm.size();
  for (DType dtype : kTypes)
    for (ReduceKind kind : kKinds) {
      if (!isFloat(dtype) && kind == ReduceKind::mean)
        continue;
      for (int64_t perRank : {0, 1, 5, 1031}) {
        int seed = ++c.seed;
        Buffer in(dtype, perRank * ranks), out(dtype, perRank),
            expected(dtype, perRank);
        for (int64_t i = 0; i < perRank * ranks; ++i)
          setValue(in, i, inputValue(dtype, seed, rank, i));
        for (int64_t i = 0; i < perRank; ++i)
          setValue(
              expected, i,
              expectedReduction(dtype, kind, seed, ranks, rank * perRank + i));
        std::string what =
            absl::StrCat(c.mode, " reduce_scatter ", dtypeName(dtype), " ",
                         kindName(kind), " per rank ", perRank);
        if (c.checker.expectOk(c.comm.reduceScatter(in.data(), out.data(),
                                                    perRank, dtype, kind),
                               what))
          expectSame(c.checker, out, expected, what);
      }
    }
}

void checkAllGather(Context &c) {
  int rank = c.comm.rank(), ranks = c.comm.size();
  for (DType dtype : kTypes)
    for (int64_t perRank : {0, 1, 3, 1000})
      for (bool inPlace : {false, true}) {
        int seed = ++c.seed;
        Buffer in(dtype, perRank), out(dtype, perRank * ranks),
            expected(dtype, perRank * ranks);
        for (int64_t i = 0; i < perRank; ++i)
          setValue(in, i, inputValue(dtype, seed, rank, i));
        for (int r = 0; r < ranks; ++r)
          for (int64_t i = 0; i < perRank; ++i) {
            setValue(expected, r * perRank + i, inputValue(dtype, seed, r, i));
            setValue(out, r * perRank + i, -99);
          }
        const void *source = in.data();
        if (inPlace) {
          std::memcpy(out.at(rank * perRank), in.data(),
                      perRank * dtypeBytes(dtype));
          source = out.at(rank * perRank);
        }
        std::string what =
            absl::StrCat(c.mode, " all_gather ", dtypeName(dtype), " per rank ",
                         perRank, inPlace ? " in place" : "");
        if (c.checker.expectOk(
                c.comm.allGather(source, out.data(), perRank, dtype), what))
          expectSame(c.checker, out, expected, what);
      }
}

void checkBroadcast(Context &c) {
  int rank = c.comm.rank(), ranks = c.comm.size();
  for (DType dtype : kTypes)
    for (int64_t count : {0, 1, 17, 5000})
      for (int root = 0; root < ranks; ++root)
        for (bool inPlace : {false, true}) {
          int seed = ++c.seed;
          Buffer in(dtype, count), out(dtype, count), expected(dtype, count);
          for (int64_t i = 0; i < count; ++i) {
            setValue(in, i,
                     rank == root ? inputValue(dtype, seed, root, i) : 5);
            setValue(out, i, -99);
            setValue(expected, i, inputValue(dtype, seed, root, i));
          }
          Buffer &result = inPlace ? in : out;
          std::string what =
              absl::StrCat(c.mode, " broadcast ", dtypeName(dtype), " count ",
                           count, " from ", root, inPlace ? " in place" : "");
          if (c.checker.expectOk(c.comm.broadcast(in.data(), result.data(),
                                                  count, dtype, root),
                                 what))
            expectSame(c.checker, result, expected, what);
        }
}

void checkAllToAll(Context &c) {
  int rank = c.comm.rank(), ranks = c.comm.size();
  for (DType dtype : kTypes)
    for (int64_t perRank : {0, 1, 3, 777})
      for (bool inPlace : {false, true}) {
        int seed = ++c.seed;
        Buffer in(dtype, perRank * ranks), out(dtype, perRank * ranks),
            expected(dtype, perRank * ranks);
        // Block r of sender s holds inputValue(s, r * perRank + k); it lands
        // in block s of rank r.
        for (int r = 0; r < ranks; ++r)
          for (int64_t k = 0; k < perRank; ++k) {
            setValue(in, r * perRank + k,
                     inputValue(dtype, seed, rank, r * perRank + k));
            setValue(out, r * perRank + k, -99);
            setValue(expected, r * perRank + k,
                     inputValue(dtype, seed, r, rank * perRank + k));
          }
        Buffer &result = inPlace ? in : out;
        std::string what =
            absl::StrCat(c.mode, " all_to_all ", dtypeName(dtype), " per rank ",
                         perRank, inPlace ? " in place" : "");
        if (c.checker.expectOk(
                c.comm.allToAll(in.data(), result.data(), perRank, dtype),
                what))
          expectSame(c.checker, result, expected, what);
      }
}

/// Every rank's copy of `buffer`, moved as raw 16-bit words.
std::vector<Buffer> gatherAll(Context &c, const Buffer &buffer) {
  int64_t words = static_cast<int64_t>(buffer.bytes.size() - 1) / 2;
  Buffer all(DType::f16, words * c.comm.size());
  c.checker.expectOk(
      c.comm.allGather(buffer.data(), all.data(), words, DType::f16),
      "all_gather of results");
  std::vector<Buffer> copies;
  for (int r = 0; r < c.comm.size(); ++r) {
    copies.emplace_back(buffer.dtype, buffer.count);
    std::memcpy(copies.back().data(), all.at(r * words), words * 2);
  }
  return copies;
}

/// Sums whose rounding depends on the order. Deterministic: bitwise equal
/// to the serial rank-order sum, and all_reduce == reduce_scatter +
/// all_gather. Otherwise: close to it, and the same on every rank.
void checkRounding(Context &c, bool deterministic) {
  int rank = c.comm.rank(), ranks = c.comm.size();
  for (DType dtype : {DType::f32, DType::bf16, DType::f16})
    for (ReduceKind kind : {ReduceKind::sum, ReduceKind::mean})
      for (int64_t logical : {1, 1001, 40000}) {
        int seed = ++c.seed;
        int64_t perRank = (logical + ranks - 1) / ranks;
        int64_t padded = perRank * ranks;
        Buffer in(dtype, padded), expected(dtype, padded);
        for (int64_t i = 0; i < logical; ++i) {
          setValue(in, i, randomValue(seed, rank, i));
          float acc = 0;
          for (int r = 0; r < ranks; ++r) {
            // What the sender holds after rounding to its element type.
            Buffer one(dtype, 1);
            setValue(one, 0, randomValue(seed, r, i));
            float v = static_cast<float>(valueAt(one, 0));
            acc = r == 0 ? v : acc + v;
          }
          if (kind == ReduceKind::mean)
            acc /= static_cast<float>(ranks);
          setValue(expected, i, acc);
        }
        std::string what =
            absl::StrCat(c.mode, " rounding ", dtypeName(dtype), " ",
                         kindName(kind), " count ", logical);
        Buffer reduced(dtype, padded), unpadded(dtype, logical),
            shard(dtype, perRank), gathered(dtype, padded);
        Buffer expectedUnpadded(dtype, logical);
        std::memcpy(expectedUnpadded.data(), expected.data(),
                    logical * dtypeBytes(dtype));
        bool ok = c.checker.expectOk(
            c.comm.allReduce(in.data(), reduced.data(), padded, dtype, kind),
            what + " all_reduce");
        ok &= c.checker.expectOk(
            c.comm.allReduce(in.data(), unpadded.data(), logical, dtype, kind),
            what + " unpadded all_reduce");
        ok &= c.checker.expectOk(
            c.comm.reduceScatter(in.data(), shard.data(), perRank, dtype, kind),
            what + " reduce_scatter");
        ok &= c.checker.expectOk(
            c.comm.allGather(shard.data(), gathered.data(), perRank, dtype),
            what + " all_gather");
        if (!ok)
          continue;
        bool exactPath = deterministic || dtype != DType::f32;
        if (exactPath) {
          expectSame(c.checker, reduced, expected, what + " all_reduce");
          expectSame(c.checker, unpadded, expectedUnpadded,
                     what + " unpadded all_reduce");
          expectSame(c.checker, gathered, reduced,
                     what + " reduce_scatter+all_gather vs all_reduce");
        } else {
          expectClose(c.checker, reduced, expected, 1e-5, what + " all_reduce");
          expectClose(c.checker, gathered, expected, 1e-5,
                      what + " reduce_scatter+all_gather");
        }
        for (Buffer *result : {&reduced, &unpadded}) {
          std::vector<Buffer> copies = gatherAll(c, *result);
          for (int r = 1; r < ranks; ++r)
            expectSame(c.checker, copies[r], copies[0],
                       absl::StrCat(what, " rank ", r, " vs rank 0"));
        }
      }
}

void checkTraffic(Context &c) {
  int ranks = c.comm.size();
  c.comm.resetTraffic();
  Buffer a(DType::f32, 1000), b(DType::bf16, 10 * ranks), b2(DType::bf16, 10),
      g(DType::i32, 3), g2(DType::i32, 3 * ranks), x(DType::i64, 5),
      t(DType::f16, 7 * ranks), t2(DType::f16, 7 * ranks), s(DType::bf16, 7);
  bool ok = c.checker.expectOk(
      c.comm.allReduce(a.data(), a.data(), 1000, DType::f32, ReduceKind::sum),
      "traffic all_reduce");
  ok &= c.checker.expectOk(
      c.comm.allReduce(s.data(), s.data(), 7, DType::bf16, ReduceKind::mean),
      "traffic all_reduce bf16");
  ok &= c.checker.expectOk(c.comm.reduceScatter(b.data(), b2.data(), 10,
                                                DType::bf16, ReduceKind::sum),
                           "traffic reduce_scatter");
  ok &= c.checker.expectOk(c.comm.allGather(g.data(), g2.data(), 3, DType::i32),
                           "traffic all_gather");
  ok &= c.checker.expectOk(
      c.comm.broadcast(x.data(), x.data(), 5, DType::i64, ranks - 1),
      "traffic broadcast");
  ok &= c.checker.expectOk(c.comm.allToAll(t.data(), t2.data(), 7, DType::f16),
                           "traffic all_to_all");
  ok &= c.checker.expectOk(c.comm.barrier(), "traffic barrier");
  if (!ok)
    return;
  // The plan report's expression, op by op (lib/analysis/PlanReport.cpp).
  std::map<std::string, TrafficCount> expected;
  auto add = [&](const std::string &kind, int64_t elements, int64_t bytes) {
    int64_t factor = kind == "all_reduce" ? 2 : 1, repeat = 1;
    TrafficCount &stats = expected[kind];
    stats.count += repeat;
    stats.elements += elements * repeat;
    stats.bytes += bytes * repeat;
    stats.sentBytesPerRank +=
        repeat * factor * static_cast<double>(bytes) * (ranks - 1) / ranks;
  };
  add("all_reduce", 1000, 4000);
  add("all_reduce", 7, 14);
  add("reduce_scatter", 10 * ranks, 20 * ranks);
  add("all_gather", 3 * ranks, 12 * ranks);
  add("broadcast", 5, 40);
  add("all_to_all", 7 * ranks, 14 * ranks);
  const auto &actual = c.comm.traffic();
  c.checker.expect(actual.size() == expected.size(),
                   absl::StrCat(c.mode, " traffic has ", actual.size(),
                                " kinds, expected ", expected.size()));
  for (const auto &[kind, want] : expected) {
    auto found = actual.find(kind);
    if (!c.checker.expect(found != actual.end(),
                          absl::StrCat(c.mode, " traffic lacks ", kind)))
      continue;
    const TrafficCount &got = found->second;
    c.checker.expect(got.count == want.count && got.elements == want.elements &&
                         got.bytes == want.bytes &&
                         got.sentBytesPerRank == want.sentBytesPerRank,
                     absl::StrCat(c.mode, " traffic ", kind, ": count ",
                                  got.count, " elements ", got.elements,
                                  " bytes ", got.bytes, " sent ",
                                  got.sentBytesPerRank, "; expected ",
                                  want.count, " ", want.elements, " ",
                                  want.bytes, " ", want.sentBytesPerRank));
  }
  c.comm.resetTraffic();
  c.checker.expect(c.comm.traffic().empty(),
                   c.mode + " traffic empty after reset");
}

/// Several tickets outstanding, waited in order, in reverse, and in an
/// order that differs between ranks.
void checkOverlap(Context &c) {
  int rank = c.comm.rank(), ranks = c.comm.size();
  for (int order = 0; order < 3; ++order) {
    int seed = ++c.seed;
    std::string what = absl::StrCat(c.mode, " overlap ",
                                    order == 0   ? "forward"
                                    : order == 1 ? "reverse"
                                                 : "rank-dependent");
    constexpr int64_t n = 3001;
    Buffer a(DType::f32, n), aOut(DType::f32, n), aWant(DType::f32, n);
    Buffer b(DType::bf16, n * ranks), bOut(DType::bf16, n),
        bWant(DType::bf16, n);
    Buffer g(DType::i32, n), gOut(DType::i32, n * ranks),
        gWant(DType::i32, n * ranks);
    Buffer d(DType::bf16, n), dWant(DType::bf16, n);
    for (int64_t i = 0; i < n; ++i) {
      setValue(a, i, inputValue(DType::f32, seed, rank, i));
      setValue(aWant, i,
               expectedReduction(DType::f32, ReduceKind::sum, seed, ranks, i));
      setValue(bWant, i,
               expectedReduction(DType::bf16, ReduceKind::mean, seed + 1, ranks,
                                 rank * n + i));
      setValue(g, i, inputValue(DType::i32, seed + 2, rank, i));
      setValue(d, i, inputValue(DType::bf16, seed + 3, rank, i));
      setValue(
          dWant, i,
          expectedReduction(DType::bf16, ReduceKind::max, seed + 3, ranks, i));
    }
    for (int64_t i = 0; i < n * ranks; ++i) {
      setValue(b, i, inputValue(DType::bf16, seed + 1, rank, i));
      setValue(gWant, i, inputValue(DType::i32, seed + 2, i / n, i % n));
    }
    std::vector<absl::StatusOr<Communicator::Ticket>> tickets;
    tickets.push_back(c.comm.startAllReduce(a.data(), aOut.data(), n,
                                            DType::f32, ReduceKind::sum));
    tickets.push_back(c.comm.startReduceScatter(b.data(), bOut.data(), n,
                                                DType::bf16, ReduceKind::mean));
    tickets.push_back(
        c.comm.startAllGather(g.data(), gOut.data(), n, DType::i32));
    tickets.push_back(c.comm.startAllReduce(d.data(), d.data(), n, DType::bf16,
                                            ReduceKind::max));
    bool ok = true;
    for (auto &ticket : tickets)
      ok &= c.checker.expectOk(ticket.status(), what + " start");
    if (!ok)
      continue;
    std::vector<int> sequence = {0, 1, 2, 3};
    if (order == 1 || (order == 2 && rank % 2 == 1))
      sequence = {3, 2, 1, 0};
    for (int index : sequence)
      ok &= c.checker.expectOk(c.comm.wait(*tickets[index]),
                               absl::StrCat(what, " wait ", index));
    c.checker.expect(absl::IsNotFound(c.comm.wait(*tickets[0])),
                     what + " a second wait for a ticket is NotFound");
    if (!ok)
      continue;
    expectSame(c.checker, aOut, aWant, what + " all_reduce f32");
    expectSame(c.checker, bOut, bWant, what + " reduce_scatter bf16");
    expectSame(c.checker, gOut, gWant, what + " all_gather i32");
    expectSame(c.checker, d, dWant, what + " all_reduce bf16 in place");
  }
}

void checkArgumentErrors(Context &c) {
  Buffer a(DType::i32, 4);
  auto invalid = [&](const absl::StatusOr<Communicator::Ticket> &ticket,
                     const std::string &what) {
    c.checker.expect(absl::IsInvalidArgument(ticket.status()),
                     absl::StrCat(c.mode, " ", what, " is InvalidArgument: ",
                                  ticket.status().ToString()));
  };
  invalid(c.comm.startAllReduce(a.data(), a.data(), -1, DType::f32,
                                ReduceKind::sum),
          "negative count");
  invalid(c.comm.startAllReduce(a.data(), a.data(), 4, DType::i32,
                                ReduceKind::mean),
          "mean of i32");
  invalid(
      c.comm.startBroadcast(a.data(), a.data(), 4, DType::i32, c.comm.size()),
      "broadcast root out of range");
  invalid(c.comm.startAllGather(nullptr, a.data(), 1, DType::i32),
          "null input");
  c.checker.expect(absl::IsNotFound(c.comm.wait(123456789)),
                   c.mode + " wait for an unknown ticket is NotFound");
}

} // namespace

void checkCollectives(Checker &checker, Communicator &comm,
                      bool deterministic) {
  Context context{checker, comm,
                  deterministic ? "deterministic" : "non-deterministic"};
  checkArgumentErrors(context);
  checkAllReduce(context);
  checkReduceScatter(context);
  checkAllGather(context);
  checkBroadcast(context);
  checkAllToAll(context);
  checkRounding(context, deterministic);
  checkTraffic(context);
  checkOverlap(context);
  checker.expectOk(comm.barrier(), context.mode + " barrier");
}

} // namespace zero::rt::check
