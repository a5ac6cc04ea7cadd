//===- ProgramLoader.h - A zrt program into the executor's form -*- C++ -*-===//
//
// Executor::create's walk over a lowered program: its buffers (allocated
// and initialized as declared), the address of every memref value (a
// buffer, or a view of an arena), and each step body's instruction list,
// with the streams and events the backend replays. Private to
// runtime/core.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_RUNTIME_CORE_PROGRAMLOADER_H
#define ZERO_RUNTIME_CORE_PROGRAMLOADER_H

#include "GatheredBytesMeter.h"

#include "zero/dialects/zrt/ZrtOps.h"
#include "zero/runtime/Executor.h"

#include "absl/strings/str_cat.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace zero::rt {

/// Walks the program once: buffers, addresses of every memref value, and
/// the instruction list.
struct Executor::Loader {
  Executor &executor;
  zrt::ProgramOp program;
  Loader(Executor &executor, zrt::ProgramOp program)
      : executor(executor), program(program) {}

  llvm::DenseMap<mlir::Value, char *> addresses;
  llvm::StringMap<int> events;
  /// Stream 0 is the compute stream (the one kernels run on).
  llvm::StringMap<int> streams;
  /// Events some instruction of the current body recorded so far.
  llvm::DenseSet<int> recorded;
  /// The instruction list of the body being loaded.
  StepBody *body = nullptr;
  /// Bytes the body being loaded copies between device and host memory.
  int64_t crossingBytes = 0;
  mlir::SymbolTableCollection symbols;

  int getStream(llvm::StringRef name) {
    return streams.try_emplace(name, streams.size()).first->second;
  }
  int getEvent(llvm::StringRef name) {
    return events.try_emplace(name, events.size()).first->second;
  }

  absl::Status declareBuffer(zrt::BufferOp buffer);
  absl::Status resolve(mlir::Operation *op);
  absl::Status addInstruction(mlir::Operation *op);
  absl::Status addCollective(mlir::Operation *op, StepInstruction::Kind kind,
                             mlir::Value input, mlir::Value output,
                             llvm::StringRef stream);
  void noteArenaUse(mlir::Value memref);
  /// Gathered parameter bytes alive in the body being loaded.
  GatheredBytesMeter gatheredBytes;
  /// The device arena bytes `memref` covers, if it lies there.
  std::vector<GatheredBytesMeter::Range> inArena(mlir::ValueRange memrefs);

  absl::Status error(mlir::Operation *op, absl::string_view message) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << op->getName();
    if (auto location = mlir::dyn_cast<mlir::FileLineColLoc>(op->getLoc()))
      os << " at " << location.getFilename().getValue() << ":"
         << location.getLine() << ":" << location.getColumn();
    return absl::InvalidArgumentError(absl::StrCat(text, ": ", message));
  }
};

} // namespace zero::rt

#endif // ZERO_RUNTIME_CORE_PROGRAMLOADER_H
