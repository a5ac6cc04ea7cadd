//===- OffloadRewriter.h - Host memory in a lowered program -----*- C++ -*-===//
//
// The rewrite behind zero-offload (ZeroOffload.cpp decides what goes to
// host memory; this makes it so): kernels that touch host memory move to a
// host stream, every crossing becomes a copy on a transfer stream ordered by
// events, staging memory is planned, and the figures of the result are
// measured.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_PASSES_OFFLOADREWRITER_H
#define ZERO_PASSES_OFFLOADREWRITER_H

#include "zero/analysis/PlanReport.h"
#include "zero/dialects/zrt/ZrtOps.h"

#include "llvm/ADT/StringSet.h"

#include <utility>

namespace zero::offload {

/// Bytes of a memref's elements.
int64_t bytesOf(mlir::Type type);

/// Kernels that update state from a gradient (train.sgd, train.adam, ...).
bool isUpdateKernel(llvm::StringRef kernel);

/// The buffer_ref or arena_view a memref is a view of (null for anything
/// else), and its element offset into it.
std::pair<mlir::Operation *, int64_t> getRoot(mlir::Value memref);

/// Places the buffers named `hostBuffers` in host memory and rewrites every
/// step body of `program` for it: kernels touching host memory on `@host`,
/// the transfers into them hoisted to right after the last writer of their
/// device inputs, the results copied back where the kernel was, stage-3
/// gathers of host parameters staged on the device, and the host arena and
/// device staging planned. Fails with a diagnostic on what it cannot place.
mlir::LogicalResult placeInHostMemory(zrt::ProgramOp program,
                                      const llvm::StringSet<> &hostBuffers);

/// What one rank of `program` holds in device and host memory, and moves
/// between them per optimizer step (the decisions and budget left empty).
MemoryPlan measure(zrt::ProgramOp program);

} // namespace zero::offload

#endif // ZERO_PASSES_OFFLOADREWRITER_H
