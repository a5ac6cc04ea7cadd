//===- CommCheck.h - Multi-rank check helpers -------------------*- C++ -*-===//
//
// zero-comm-check runs under mpirun, so GoogleTest's single-process model
// does not fit: every rank checks its own results, prints each failure with
// its rank, and the ranks agree on the exit status at the end.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_TEST_UNIT_COMM_COMMCHECK_H
#define ZERO_TEST_UNIT_COMM_COMMCHECK_H

#include "zero/runtime/Communicator.h"

#include "absl/strings/str_cat.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace zero::rt::check {

/// Counts checks and failures of this rank; failures go to stderr at once,
/// so that a later hang does not hide them.
class Checker {
public:
  explicit Checker(int rank) : rank_(rank) {}

  bool expect(bool condition, const std::string &what) {
    ++checks_;
    if (!condition)
      fail(what);
    return condition;
  }
  bool expectOk(const absl::Status &status, const std::string &what) {
    return expect(status.ok(), absl::StrCat(what, ": ", status.ToString()));
  }
  void fail(const std::string &what) {
    ++failures_;
    std::fprintf(stderr, "zero-comm-check: rank %d: FAIL: %s\n", rank_,
                 what.c_str());
    std::fflush(stderr);
  }
  int64_t checks() const { return checks_; }
  int64_t failures() const { return failures_; }

private:
  int rank_;
  int64_t checks_ = 0;
  int64_t failures_ = 0;
};

/// A tensor of `dtype` as raw bytes, like the runtime's buffers.
struct Buffer {
  Buffer(DType dtype, int64_t count)
      : dtype(dtype), count(count),
        bytes(static_cast<size_t>(count * dtypeBytes(dtype)) + 1, 0) {}
  void *data() { return bytes.data(); }
  const void *data() const { return bytes.data(); }
  char *at(int64_t index) { return bytes.data() + index * dtypeBytes(dtype); }

  DType dtype;
  int64_t count;
  // One spare byte so that data() is never null, even for zero elements.
  std::vector<char> bytes;
};

/// Element `index` as a double (exact for every type and value used here).
double valueAt(const Buffer &buffer, int64_t index);
void setValue(Buffer &buffer, int64_t index, double value);

/// Small integers in [-8, 8], exact in every type, so that sums of up to a
/// few ranks are exact in any order and expectations need no tolerance.
double smallValue(int seed, int rank, int64_t index);
/// Pseudo-random floats in [-1, 1] whose sums round differently in
/// different orders.
float randomValue(int seed, int rank, int64_t index);

/// Compares `actual` with `expected` bit for bit; reports the first few
/// differing elements under `what`.
bool expectSame(Checker &checker, const Buffer &actual, const Buffer &expected,
                const std::string &what);
/// Compares within a relative tolerance (for MPI's own f32 reductions).
bool expectClose(Checker &checker, const Buffer &actual, const Buffer &expected,
                 double tolerance, const std::string &what);

/// Runs every value check on `comm`; `label` names the communicator.
void checkCollectives(Checker &checker, Communicator &comm, bool deterministic);

} // namespace zero::rt::check

#endif // ZERO_TEST_UNIT_COMM_COMMCHECK_H
