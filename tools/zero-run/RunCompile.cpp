//===- RunCompile.cpp - zero-run's program, loaded or compiled ------------===//

#include "RunCompile.h"

#include "zero/dialects/dist/DistDialect.h"
#include "zero/dialects/train/TrainDialect.h"
#include "zero/dialects/train/TrainOps.h"
#include "zero/dialects/zrt/ZrtDialect.h"
#include "zero/passes/Passes.h"
#include "zero/runtime/BackendSelection.h"
#include "zero/support/ByteSize.h"
#include "zero/support/Status.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#include <algorithm>

namespace zero::rt {

/// --schedule-total: every train.optimizer's schedule runs to that step.
static absl::Status setScheduleTotal(const CompileFlags &flags,
                                     mlir::ModuleOp module) {
  int64_t total = *flags.scheduleTotal;
  for (train::OptimizerOp optimizer : module.getOps<train::OptimizerOp>()) {
    if (!optimizer.getTotal())
      return absl::InvalidArgumentError(absl::StrCat(
          "--schedule-total ", total, ": @", optimizer.getSymName().str(),
          "'s learning rate has no schedule with a total to set"));
    if (total <= optimizer.getWarmupValue())
      return absl::InvalidArgumentError(
          absl::StrCat("--schedule-total ", total, " must be past @",
                       optimizer.getSymName().str(), "'s warmup of ",
                       optimizer.getWarmupValue(), " steps"));
    optimizer.setTotalAttr(
        mlir::Builder(module.getContext()).getI64IntegerAttr(total));
  }
  return absl::OkStatus();
}

frontend::GraphConfig configFromFlags(const CompileFlags &flags, int64_t budget,
                                      const std::string &machine) {
  frontend::GraphConfig config;
  config.enable_zero(flags.stage > 0, std::max<int>(flags.stage, 1));
  if (!flags.mesh.empty()) {
    std::vector<std::string> extents = absl::StrSplit(flags.mesh, 'x');
    int64_t nodes = 0, perNode = 0;
    if (extents.size() == 2 && absl::SimpleAtoi(extents[0], &nodes) &&
        absl::SimpleAtoi(extents[1], &perNode))
      config.mesh(nodes, perNode);
  }
  config.gradient_accumulation_steps(static_cast<int>(flags.accumulate));
  config.offload(flags.offload);
  config.device_memory_budget(budget);
  config.zero() = flags.zero;
  config.zero().machine = machine;
  return config;
}

/// The lowered program: the file's own, or its training step compiled for
/// --stage on `ranks` ranks.
static absl::StatusOr<zrt::ProgramOp>
getProgram(const CompileFlags &flags, mlir::ModuleOp module, int ranks) {
  auto programs = module.getOps<zrt::ProgramOp>();
  if (!programs.empty()) {
    if (flags.stage >= 0 || flags.offloadGiven || !flags.deviceBudget.empty() ||
        flags.scheduleTotal.has_value())
      return absl::InvalidArgumentError(absl::StrCat(
          flags.programPath,
          " is already lowered; --stage, --offload, --device-memory-budget "
          "and --schedule-total apply to training steps only"));
    zrt::ProgramOp program = *programs.begin();
    if (flags.accumulateGiven && program.getMicroSteps() != flags.accumulate)
      return absl::InvalidArgumentError(absl::StrCat(
          flags.programPath, " is lowered for ", program.getMicroSteps(),
          " micro-batches per step; --accumulate ", flags.accumulate,
          " applies when compiling a training step"));
    return program;
  }
  if (flags.scheduleTotal.has_value())
    ZERO_RETURN_IF_ERROR(setScheduleTotal(flags, module));
  if (flags.stage < 0)
    return absl::InvalidArgumentError(absl::StrCat(
        flags.programPath,
        " is a training step, not a lowered zrt program: pass --stage 0..3 "
        "to compile it"));
  int64_t budget = 0;
  if (!flags.deviceBudget.empty()) {
    std::optional<int64_t> parsed = parseByteSize(flags.deviceBudget);
    if (!parsed)
      return absl::InvalidArgumentError(absl::StrCat(
          "--device-memory-budget '", flags.deviceBudget,
          "' is not a number of bytes (write e.g. 80GiB, 512MB or 1000000)"));
    budget = *parsed;
  }
  // The default machine describes one axis (data parallel).
  dist::PlacementAttr placement = dist::lookupPlacement(module);
  std::string machine = !placement || placement.getNumAxes() <= 1
                            ? std::string(getDefaultMachine(flags.backend))
                            : std::string();
  frontend::GraphConfig config = configFromFlags(flags, budget, machine);
  std::unique_ptr<mlir::Pass> pipeline =
      createZeroPipeline(frontend::pipelineOptionsOf(config, ranks));
  // --pipeline-options come last, so that their accumulate-steps or
  // machine (if any) is the one that counts.
  std::string errors;
  auto onError = [&](const llvm::Twine &message) {
    errors = std::string(absl::StripTrailingAsciiWhitespace(message.str()));
    return mlir::failure();
  };
  if (mlir::failed(pipeline->initializeOptions(flags.pipelineOptions, onError)))
    return absl::InvalidArgumentError(absl::StrCat(
        "bad --pipeline-options '", flags.pipelineOptions, "': ", errors));
  auto pm = mlir::PassManager::on<mlir::ModuleOp>(module.getContext());
  pm.addPass(std::move(pipeline));
  if (mlir::failed(pm.run(module)))
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot compile ", flags.programPath, " for stage ", flags.stage,
        " on ", ranks, ranks == 1 ? " rank" : " ranks",
        " (see the diagnostics above)"));
  programs = module.getOps<zrt::ProgramOp>();
  if (programs.empty())
    return absl::InternalError("the pipeline produced no zrt program");
  return *programs.begin();
}

mlir::DialectRegistry runDialects() {
  mlir::DialectRegistry registry;
  registry.insert<dist::DistDialect, train::TrainDialect, zrt::ZrtDialect,
                  mlir::arith::ArithDialect, mlir::func::FuncDialect>();
  return registry;
}

absl::StatusOr<zrt::ProgramOp>
loadProgram(const CompileFlags &flags, mlir::MLIRContext &context,
            llvm::SourceMgr &sourceMgr, int ranks,
            mlir::OwningOpRef<mlir::ModuleOp> &module) {
  module = mlir::parseSourceFile<mlir::ModuleOp>(flags.programPath, sourceMgr,
                                                 &context);
  if (!module)
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot load ", flags.programPath, " (see the diagnostics above)"));
  return getProgram(flags, *module, ranks);
}

} // namespace zero::rt
