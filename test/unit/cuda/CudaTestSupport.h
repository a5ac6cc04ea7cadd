//===- CudaTestSupport.h - CUDA kernels against CPU kernels -----*- C++ -*-===//
//
// Every CUDA kernel test binds the CPU and the CUDA kernel of one name on the
// same inputs, runs both (the CUDA one on device copies) and compares the
// results element by element:
//
//   |cuda - cpu| <= tol(dtype) * (|cpu| + scale)
//
// with tol = 1e-5 for f32, 1e-2 for bf16 and 2e-3 for f16 results (about two
// ulps of bf16, four of f16: a last-bit difference in f32 may round either
// way), and `scale` the RMS of the CPU result, so that reductions, whose
// summation order differs between the backends, are judged against the
// size of what they sum rather than against results that cancel to near 0.
// Integer results must be equal, and so must every result of a case marked
// `bitwise` (kernels that add in the CPU kernel's order).
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_TEST_UNIT_CUDA_CUDATESTSUPPORT_H
#define ZERO_TEST_UNIT_CUDA_CUDATESTSUPPORT_H

#include "KernelTestSupport.h"

#include "zero/runtime/Communicator.h"
#include "zero/runtime/CudaKernels.h"

#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

namespace zero::rt::test {

/// A one-rank bootstrap for the tests that never reach a collective, or
/// where no MPI is built: a broadcast from rank 0 to itself is a copy.
class OneRank final : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  absl::StatusOr<Ticket> startAllReduce(const void *, void *, int64_t, DType,
                                        ReduceKind) override {
    return absl::UnimplementedError("OneRank");
  }
  absl::StatusOr<Ticket> startReduceScatter(const void *, void *, int64_t,
                                            DType, ReduceKind) override {
    return absl::UnimplementedError("OneRank");
  }
  absl::StatusOr<Ticket> startAllGather(const void *, void *, int64_t,
                                        DType) override {
    return absl::UnimplementedError("OneRank");
  }
  absl::StatusOr<Ticket> startBroadcast(const void *in, void *out,
                                        int64_t count, DType dtype,
                                        int) override {
    if (in != out)
      std::memmove(out, in, static_cast<size_t>(count * dtypeBytes(dtype)));
    return 0;
  }
  absl::StatusOr<Ticket> startAllToAll(const void *, void *, int64_t,
                                       DType) override {
    return absl::UnimplementedError("OneRank");
  }
  absl::Status wait(Ticket) override { return absl::OkStatus(); }
  absl::Status barrier() override { return absl::OkStatus(); }
  [[noreturn]] void abortJob(absl::string_view, int exitCode) override {
    std::_Exit(exitCode);
  }
};

/// Whether this machine has a CUDA GPU (listed once).
bool haveCudaGpu();

#define SKIP_WITHOUT_CUDA_GPU()                                                \
  do {                                                                         \
    if (!::zero::rt::test::haveCudaGpu())                                      \
      GTEST_SKIP() << "no CUDA GPU on this machine";                           \
  } while (false)

/// The tolerance of a result of `dtype` (see above).
double cudaTolerance(DType dtype);

/// One kernel call: inputs, result specs (their bytes are ignored), and
/// results that share an input's buffer ({result, input} pairs).
struct KernelCase {
  std::string name;
  mlir::DictionaryAttr params;
  std::vector<Tensor> ins;
  std::vector<Tensor> outs;
  std::vector<std::pair<size_t, size_t>> aliases = {};
  KernelContext ctx = {};
  /// Every result bit for bit equal to the CPU's (NaN to NaN).
  bool bitwise = false;
  /// Bytes by which every device buffer starts past an allocation's
  /// (256-byte aligned) start: 2 or 4 makes the kernels that move 16 bytes
  /// at a time take their one-element path.
  size_t deviceOffset = 0;
};

/// Runs `kernel` on CPU and CUDA and compares every result.
::testing::AssertionResult matchesCpu(const KernelCase &kernel);

/// "f32", "bf16", "f16".
const std::vector<DType> &floatTypes();

} // namespace zero::rt::test

#endif // ZERO_TEST_UNIT_CUDA_CUDATESTSUPPORT_H
