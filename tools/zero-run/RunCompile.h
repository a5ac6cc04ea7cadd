//===- RunCompile.h - zero-run's program, loaded or compiled ----*- C++ -*-===//
//
// The program zero-run runs: a lowered zrt program as it is, or a training
// step compiled for the stage, mesh and offload its flags give. The flags
// become the builder's configuration (configFromFlags), and from there the
// pipeline's options by frontend::pipelineOptionsOf, as for every front end.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_TOOLS_ZERO_RUN_RUNCOMPILE_H
#define ZERO_TOOLS_ZERO_RUN_RUNCOMPILE_H

#include "zero/dialects/zrt/ZrtOps.h"
#include "zero/frontend/CompiledGraph.h"
#include "zero/support/OptionEnums.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/SourceMgr.h"

#include "absl/status/statusor.h"

#include <cstdint>
#include <optional>
#include <string>

namespace zero::rt {

/// What zero-run's flags say about the program and how to compile it.
struct CompileFlags {
  std::string programPath;
  /// --stage, or -1 where not given (a lowered program).
  int stage = -1;
  /// --mesh RxS as written, or empty.
  std::string mesh;
  /// --mesh-scheme, --hpz, --qwz, --qgz and their bits, as the builder
  /// holds them (the machine is configFromFlags's).
  frontend::ZeroOptions zero;
  int64_t accumulate = 1;
  bool accumulateGiven = false;
  OffloadPlacement offload = OffloadPlacement::none;
  bool offloadGiven = false;
  /// --device-memory-budget as written (80GiB), or empty.
  std::string deviceBudget;
  std::optional<int64_t> scheduleTotal;
  std::string backend = "cpu";
  /// --pipeline-options, applied after the rest.
  std::string pipelineOptions;
};

/// The flags in the builder's terms: `budget` in bytes, `machine` the
/// machine to compile for (empty: none).
frontend::GraphConfig configFromFlags(const CompileFlags &flags, int64_t budget,
                                      const std::string &machine);

/// The dialects a program zero-run takes is written in.
mlir::DialectRegistry runDialects();

/// Parses flags.programPath into `module` and returns its lowered program
/// for `ranks` ranks, compiling a training step.
absl::StatusOr<zrt::ProgramOp>
loadProgram(const CompileFlags &flags, mlir::MLIRContext &context,
            llvm::SourceMgr &sourceMgr, int ranks,
            mlir::OwningOpRef<mlir::ModuleOp> &module);

} // namespace zero::rt

#endif // ZERO_TOOLS_ZERO_RUN_RUNCOMPILE_H
