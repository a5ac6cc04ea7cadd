//===- CompiledGraph.cpp - Graph::compile and the compiled forms ----------===//
//
// compile = emit the forward step, verify it, train-autodiff, then
// zero-pipeline{stage, ranks, ZeRO options, lower-to-runtime}: the same
// passes, in the same order, as `zero-opt --train-autodiff` followed by
// `zero-run --stage`, so a graph trains exactly as its saved step does.
//
//===----------------------------------------------------------------------===//

#include "zero/frontend/CompiledGraph.h"

#include "zero/analysis/MachineModel.h"
#include "zero/analysis/PlanReport.h"
#include "zero/analysis/StepSimulation.h"

#include "EmitModule.h"
#include "GraphState.h"

#include "zero/dialects/train/TrainOps.h"
#include "zero/dialects/zrt/ZrtOps.h"
#include "zero/passes/Pipeline.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include "absl/strings/str_cat.h"

#include <fstream>
#include <map>

using namespace zero::frontend;
using namespace zero::frontend::detail;

struct CompiledGraph::Impl {
  // Declared first so that it is destroyed after the modules it owns.
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> forward, step, program;
  MemoryReport report;
  std::string reportText;
  /// What evalProgram() compiles with: the step's pipeline options.
  zero::ZeroPipelineOptions pipelineOptions;
  /// What pipelineOptions.mesh refers to.
  std::vector<int64_t> mesh;
  /// The step evaluation starts from: `forward` with Graph::output's values
  /// also returned; null when the graph declares none (then `forward`).
  mlir::OwningOpRef<mlir::ModuleOp> evalSource;
  std::vector<std::string> outputNames;
  /// The graph's inputs, in declaration order: the order of a batch.
  std::vector<std::string> inputNames;
  std::vector<std::pair<Shape, DType>> inputTypes;
  /// The forward-only program, compiled on first use.
  mlir::OwningOpRef<mlir::ModuleOp> eval;
  absl::Status evalStatus;
  OptimizerSpec optimizer;
  std::vector<GraphConfig::ParameterGroup> groups;
};

namespace {

/// Collects the diagnostics of a compilation, to return them as a Status.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(mlir::MLIRContext &context)
      : handler(&context, [this](mlir::Diagnostic &diagnostic) {
          if (!messages.empty())
            messages += "\n";
          messages += diagnostic.str();
          for (mlir::Diagnostic &note : diagnostic.getNotes())
            messages += "\n  note: " + note.str();
          return mlir::success();
        }) {}
  const std::string &text() const { return messages; }

private:
  std::string messages;
  mlir::ScopedDiagnosticHandler handler;
};

std::unique_ptr<mlir::MLIRContext> makeContext() {
  mlir::DialectRegistry registry;
  zero::registerZeroDialects(registry);
  auto context = std::make_unique<mlir::MLIRContext>(registry);
  context->loadAllAvailableDialects();
  // Compilation is small next to training; the ranks own the cores.
  context->disableMultithreading();
  return context;
}

/// The figures zero-lower-to-runtime attached as `zrt.report`.
MemoryReport readReport(mlir::ModuleOp module, int stage, int ranks) {
  MemoryReport report;
  report.stage = stage;
  report.ranks = ranks;
  mlir::DictionaryAttr dict;
  for (auto program : module.getOps<zero::zrt::ProgramOp>()) {
    dict = program->getAttrOfType<mlir::DictionaryAttr>(
        zero::zrt::ZrtDialect::getReportAttrName());
    report.arenaBytes = program.getArenaBytes(zero::zrt::MemorySpace::device);
    if (auto plan = program->getAttrOfType<mlir::DictionaryAttr>(
            zero::zrt::ZrtDialect::getMemoryPlanAttrName()))
      report.memoryPlan = zero::MemoryPlan::fromAttr(plan);
  }
  static_cast<zero::ProgramReport &>(report) =
      zero::ProgramReport::fromAttr(dict);
  report.quantization = zero::getQuantizationPlan(module);
  // The lowered program keeps the report's closed formula of the bytes
  // across nodes, not the parameters it is computed from.
  if (report.quantization && report.acrossNodesBytes) {
    report.quantization->acrossNodesBytes = *report.acrossNodesBytes;
    report.quantization->acrossNodesBytesUnquantized =
        report.acrossNodesBytesUnquantized.value_or(0);
  }
  return report;
}

/// Every member of a parameter group is a trainable parameter of the graph,
/// in one group only.
absl::Status checkParameterGroups(const GraphState &graph) {
  std::map<std::string, const ParameterDecl *> parameters;
  for (const ParameterDecl &param : graph.parameters)
    parameters[param.name] = &param;
  std::map<std::string, std::string> groupOf;
  for (const GraphConfig::ParameterGroup &group :
       graph.config.parameterGroups()) {
    for (const std::string &name : group.parameters) {
      auto it = parameters.find(name);
      if (it == parameters.end())
        return absl::InvalidArgumentError(absl::StrCat("parameter_group '",
                                                       group.name,
                                                       "': the graph has "
                                                       "no parameter '",
                                                       name, "'"));
      if (!it->second->trainable)
        return absl::InvalidArgumentError(
            absl::StrCat("parameter_group '", group.name, "': '", name,
                         "' is frozen; no optimizer updates it"));
      auto [previous, inserted] = groupOf.emplace(name, group.name);
      if (!inserted)
        return absl::InvalidArgumentError(
            absl::StrCat("parameter_group '", group.name, "': '", name,
                         "' is already in group '", previous->second,
                         "'; a parameter belongs to one group"));
    }
  }
  return absl::OkStatus();
}

} // namespace

absl::StatusOr<std::string>
zero::frontend::machineModelJson(const std::string &spec) {
  mlir::MLIRContext context;
  DiagnosticCollector diagnostics(context);
  mlir::FailureOr<zero::MachineModel> machine =
      zero::loadMachineModel(spec, mlir::UnknownLoc::get(&context));
  if (failed(machine))
    return absl::InvalidArgumentError(diagnostics.text());
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(zero::machineToJson(*machine));
  return text;
}

zero::ZeroPipelineOptions
zero::frontend::pipelineOptionsOf(const GraphConfig &config, int ranks) {
  const ZeroOptions &z = config.zero();
  zero::ZeroPipelineOptions options;
  options.stage = config.zeroStage();
  // `ranks` counts every rank; the pipeline's are the data-parallel ones.
  options.tp = z.tensorParallel;
  options.ranks = ranks > 0 && z.tensorParallel > 1
                      ? ranks / static_cast<int>(z.tensorParallel)
                      : ranks;
  // The caller keeps the extents alive as long as the options.
  options.mesh = config.meshShape();
  options.accumulateSteps = config.accumulationSteps();
  options.layout = z.layout == ZeroOptions::Layout::dim0
                       ? zero::train::StorageLayoutKind::dim0
                       : zero::train::StorageLayoutKind::flat;
  options.minShardElements = z.minShardElements;
  options.regatherInBackward = z.regatherInBackward;
  options.meshScheme = z.meshScheme;
  options.reduceDtype = z.reduceDtype;
  options.hpz = z.hpz;
  options.qwz = z.qwz;
  options.qgz = z.qgz;
  options.qwzBits = z.qwzBits;
  options.qgzBits = z.qgzBits;
  options.quantizeBlock = z.quantizeBlock;
  options.quantizeMinElements = z.quantizeMinElements;
  options.maxReuseDistance = z.maxReuseDistance;
  options.reduceBucketBytes = z.reduceBucketBytes;
  options.allgatherBucketBytes = z.allgatherBucketBytes;
  options.prefetchBytes = z.prefetchBytes;
  options.maxLiveGatheredBytes = z.maxLiveGatheredBytes;
  options.machine = z.machine;
  options.lowerToRuntime = true;
  options.fuseEpilogues = z.fuseEpilogues;
  options.offload = config.offloadChoice();
  options.deviceMemoryBudget = config.deviceMemoryBudget();
  return options;
}

absl::StatusOr<CompiledGraph> Graph::compile(int ranks) const {
  const GraphState &graph = *state;
  if (!graph.firstError.ok())
    return graph.firstError;
  std::string what = absl::StrCat("compile graph '", graph.name, "'");
  if (absl::Status status = graph.config.validate(); !status.ok())
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", status.message()));
  if (graph.precisionRead && *graph.precisionRead != graph.config.precision())
    return absl::FailedPreconditionError(absl::StrCat(
        what, ": precision: set to ", dtypeName(graph.config.precision()),
        " after the first parameter or input was declared (as ",
        dtypeName(*graph.precisionRead),
        "); set it right after constructing the graph "
        "(graph.config.precision(...) in Python, "
        "graph.config().precision(...) in C++)"));
  if (absl::Status status = checkParameterGroups(graph); !status.ok())
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", status.message()));
  if (ranks < 1)
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ranks must be at least 1, got ", ranks));
  if (const std::vector<int64_t> &mesh = graph.config.meshShape();
      !mesh.empty() && mesh[0] * mesh[1] != ranks)
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": the mesh of ", mesh[0], " nodes x ", mesh[1], " ranks has ",
        mesh[0] * mesh[1], " ranks, but compile was given ", ranks));
  if (graph.lossNode < 0)
    return absl::FailedPreconditionError(absl::StrCat(
        what, ": no loss; call graph.minimize(loss) before compile"));

  auto impl = std::make_unique<CompiledGraph::Impl>();
  impl->context = makeContext();
  DiagnosticCollector diagnostics(*impl->context);
  auto failure = [&](const std::string &stepName) {
    return absl::InternalError(
        absl::StrCat(what, " (stage ", graph.config.zeroStage(), ", ", ranks,
                     " ranks): ", stepName, " failed:\n", diagnostics.text()));
  };

  impl->forward = emitModule(graph, *impl->context);
  if (mlir::failed(mlir::verify(*impl->forward)))
    return failure("verifying the built step");
  if (!graph.outputs.empty()) {
    impl->evalSource = emitModule(graph, *impl->context, /*withOutputs=*/true);
    if (mlir::failed(mlir::verify(*impl->evalSource)))
      return failure("verifying the evaluation step");
    for (const auto &output : graph.outputs)
      impl->outputNames.push_back(output.first);
  }
  for (const detail::InputDecl &input : graph.inputs) {
    impl->inputNames.push_back(input.name);
    const detail::Node &node = graph.nodes[input.node];
    impl->inputTypes.emplace_back(node.shape, node.dtype);
  }
  impl->step = (*impl->forward).clone();
  mlir::PassManager autodiff(impl->context.get());
  zero::TrainAutodiffOptions autodiffOptions;
  autodiffOptions.recompute = graph.config.activationCheckpointing();
  autodiff.addPass(zero::createTrainAutodiff(autodiffOptions));
  if (mlir::failed(autodiff.run(*impl->step)))
    return failure("train-autodiff");
  // The pipeline differentiates the forward step itself, as it did here:
  // so its report can plan, where the step does not fit, the settings that
  // need the forward (recomputation, a smaller micro-batch).
  impl->program = (*impl->forward).clone();
  // The pipeline writes zero-report's text (the plan against the ZeRO
  // formula) to a file; the compiled graph keeps it for reportText().
  llvm::SmallString<128> reportPath;
  if (std::error_code error =
          llvm::sys::fs::createTemporaryFile("zero-report", "txt", reportPath))
    return absl::InternalError(absl::StrCat(
        what,
        ": cannot create a temporary file for the report: ", error.message()));
  zero::ZeroPipelineOptions options = pipelineOptionsOf(graph.config, ranks);
  options.recompute = autodiffOptions.recompute;
  impl->mesh = graph.config.meshShape();
  impl->pipelineOptions = options;
  impl->pipelineOptions.mesh = impl->mesh;
  options.report = zero::ReportFormat::text;
  options.reportOutput = reportPath.str().str();
  mlir::PassManager pipeline(impl->context.get());
  zero::buildZeroPipeline(pipeline, options);
  bool piped = mlir::succeeded(pipeline.run(*impl->program));
  if (auto text = llvm::MemoryBuffer::getFile(reportPath))
    impl->reportText = (*text)->getBuffer().str();
  llvm::sys::fs::remove(reportPath);
  if (!piped)
    return failure("zero-pipeline");
  impl->report = readReport(*impl->program, graph.config.zeroStage(), ranks);
  impl->report.groups = zero::computeOptimizerGroups(*impl->step);
  impl->report.dropout = zero::summarizeDropout(*impl->step);
  if (!options.machine.empty()) {
    // The pipeline printed the prediction into the text; the dict gets it
    // from the same simulation of the same program.
    mlir::Location loc = mlir::UnknownLoc::get(impl->context.get());
    mlir::FailureOr<zero::MachineModel> machine =
        zero::loadMachineModel(options.machine, loc);
    if (failed(machine))
      return failure("loading the machine");
    for (auto program : impl->program->getOps<zero::zrt::ProgramOp>()) {
      mlir::FailureOr<zero::StepPrediction> prediction =
          zero::simulateProgram(program, *machine);
      if (failed(prediction))
        return failure("predicting the step");
      impl->report.prediction = std::move(*prediction);
    }
  }
  impl->optimizer = graph.config.optimizerSpec();
  impl->groups = graph.config.parameterGroups();
  return CompiledGraph(std::move(impl));
}

CompiledGraph::CompiledGraph(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}
CompiledGraph::~CompiledGraph() = default;
CompiledGraph::CompiledGraph(CompiledGraph &&) noexcept = default;
CompiledGraph &CompiledGraph::operator=(CompiledGraph &&) noexcept = default;

int CompiledGraph::ranks() const { return impl->report.ranks; }
int CompiledGraph::stage() const { return impl->report.stage; }
const MemoryReport &CompiledGraph::report() const { return impl->report; }
const std::string &CompiledGraph::reportText() const {
  return impl->reportText;
}

const std::vector<std::string> &CompiledGraph::outputNames() const {
  return impl->outputNames;
}

const std::vector<std::string> &CompiledGraph::inputNames() const {
  return impl->inputNames;
}

const std::vector<std::pair<Shape, DType>> &CompiledGraph::inputTypes() const {
  return impl->inputTypes;
}

const OptimizerSpec &CompiledGraph::optimizer() const {
  return impl->optimizer;
}
const std::vector<GraphConfig::ParameterGroup> &
CompiledGraph::parameterGroups() const {
  return impl->groups;
}

absl::StatusOr<mlir::ModuleOp> CompiledGraph::evalProgram() const {
  if (impl->eval)
    return *impl->eval;
  if (!impl->evalStatus.ok())
    return impl->evalStatus;
  // The step as built, without its train.minimize: no backward, no update.
  // The same pipeline shards its parameters exactly as the training
  // program's (the same sizes, placement and options), gathers them at
  // stage 3, and averages the loss over the ranks.
  mlir::OwningOpRef<mlir::ModuleOp> eval =
      (impl->evalSource ? *impl->evalSource : *impl->forward).clone();
  eval->walk([](zero::train::MinimizeOp minimize) { minimize.erase(); });
  // Evaluation is PyTorch's eval mode: no dropout.
  eval->walk([](zero::train::DropoutOp dropout) {
    dropout.replaceAllUsesWith(dropout.getInput());
    dropout.erase();
  });
  DiagnosticCollector diagnostics(*impl->context);
  zero::ZeroPipelineOptions options = impl->pipelineOptions;
  options.accumulateSteps = 1;
  mlir::PassManager pipeline(impl->context.get());
  zero::buildZeroPipeline(pipeline, options);
  if (mlir::failed(pipeline.run(*eval))) {
    impl->evalStatus = absl::InternalError(absl::StrCat(
        "compiling the forward-only program for evaluation failed:\n",
        diagnostics.text()));
    return impl->evalStatus;
  }
  impl->eval = std::move(eval);
  return *impl->eval;
}

mlir::ModuleOp CompiledGraph::module(Form form) const {
  switch (form) {
  case Form::forward:
    return *impl->forward;
  case Form::step:
    return *impl->step;
  case Form::program:
    return *impl->program;
  }
  return *impl->program;
}

std::string CompiledGraph::str(Form form) const {
  std::string text;
  llvm::raw_string_ostream os(text);
  module(form).print(os);
  os.flush();
  return text;
}

void CompiledGraph::print(std::ostream &os, Form form) const {
  os << str(form);
}

absl::Status CompiledGraph::save(const std::string &path, Form form) const {
  std::ofstream file(path);
  if (!file)
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write ", path, ": cannot open the file"));
  file << str(form);
  file.close();
  if (!file)
    return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}
