//===- zero-run.cpp - Trains a lowered ZeRO program on N ranks
//-------------===//
//
// Compiles a training step (zero-pipeline + zero-lower-to-runtime) or loads
// an already lowered zrt program, launches N ranks through mpirun (or runs
// under the user's own mpirun), initializes the state from a seed or a
// .safetensors file, feeds synthetic or .npz batches, runs the steps, and
// writes what every rank measured beside the compile-time report.
//
//===----------------------------------------------------------------------===//

#include "RunCompile.h"
#include "RunMetrics.h"

#include "zero/dialects/dist/DistDialect.h"
#include "zero/dialects/train/TrainDialect.h"
#include "zero/dialects/train/TrainOps.h"
#include "zero/dialects/zrt/ZrtDialect.h"
#include "zero/dialects/zrt/ZrtOps.h"
#include "zero/frontend/CompiledGraph.h"
#include "zero/frontend/Profile.h"
#include "zero/passes/PipelineOptions.h"
#include "zero/runtime/BackendSelection.h"
#include "zero/runtime/Checkpoint.h"
#include "zero/runtime/Communicator.h"
#include "zero/runtime/CpuKernels.h"
#include "zero/runtime/Executor.h"
#include "zero/runtime/Launch.h"
#include "zero/runtime/RankAgreement.h"
#include "zero/runtime/TrainingState.h"
#include "zero/support/ByteSize.h"
#include "zero/support/Status.h"
#include "zero/support/ZeroStage.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

using namespace zero;
using namespace zero::rt;
namespace cl = llvm::cl;

static cl::OptionCategory runCategory("zero-run options");
static cl::opt<std::string> programPath(cl::Positional,
                                        cl::desc("<program.mlir>"),
                                        cl::cat(runCategory));
static cl::opt<bool> printLaunchFlag(
    "print-launch",
    cl::desc("Print which launcher started this process and the rank, world "
             "size and local rank it gave (docs/runtime.md, \"Launchers\"), "
             "and exit"),
    cl::init(false), cl::cat(runCategory));
static cl::opt<int> ranksFlag("n", cl::desc("Ranks to launch through mpirun"),
                              cl::init(0), cl::cat(runCategory));
static cl::opt<int>
    stageFlag("stage",
              cl::desc("Compile a training step for this ZeRO stage (0-3)"),
              cl::init(-1), cl::cat(runCategory));
static cl::opt<std::string> meshFlag(
    "mesh",
    cl::desc("Compile for a two-level grid of ranks, nodes first: --mesh 2x4 "
             "is 2 nodes of 4 ranks (ranks numbered node by node); stages "
             "1-3 shard as --mesh-scheme says"),
    cl::value_desc("RxS"), cl::cat(runCategory));
static cl::opt<int> tpFlag(
    "tp",
    cl::desc("Tensor-parallel ranks: the parameters' dist.sbp plans split "
             "them over a last axis of this many consecutive ranks, after "
             "the data-parallel ones (-n counts both)"),
    cl::init(1));
static cl::opt<MeshScheme> meshSchemeFlag(
    "mesh-scheme", cl::desc("With --mesh and --stage 1-3: how to shard"),
    cl::values(clEnumValN(MeshScheme::hybrid, "hybrid",
                          "shard within a node, replicate across nodes"),
               clEnumValN(MeshScheme::full, "full",
                          "shard over all ranks, gathering across nodes "
                          "first")),
    cl::init(MeshScheme::hybrid), cl::cat(runCategory));
static cl::opt<ReduceDtype> reduceDtypeFlag(
    "reduce-dtype", cl::desc("The type gradients are averaged in"),
    cl::values(clEnumValN(ReduceDtype::gradient, "gradient",
                          "each gradient in its own type"),
               clEnumValN(ReduceDtype::f32, "f32",
                          "16-bit gradients widened to f32 first (FSDP's "
                          "reduce_dtype=float32)")),
    cl::init(ReduceDtype::gradient), cl::cat(runCategory));
static cl::opt<bool> hpzFlag(
    "hpz",
    cl::desc("With --mesh-scheme full --stage 3: gather parameters again "
             "from a secondary shard within the node (ZeRO++ hpZ)"),
    cl::init(false), cl::cat(runCategory));
static cl::opt<bool> qwzFlag(
    "qwz",
    cl::desc("With --mesh-scheme full --stage 3: gather parameters across "
             "nodes as int8 codes with block scales (ZeRO++ qwZ)"),
    cl::init(false), cl::cat(runCategory));
static cl::opt<int64_t>
    qwzBitsFlag("qwz-bits",
                cl::desc("Bits per weight code under --qwz: 8 or 4"),
                cl::init(8), cl::cat(runCategory));
static cl::opt<bool> qgzFlag(
    "qgz",
    cl::desc("With --mesh-scheme full: reduce gradients by all-to-alls of "
             "int4 codes, averaged in full precision (ZeRO++ qgZ)"),
    cl::init(false), cl::cat(runCategory));
static cl::opt<int64_t>
    qgzBitsFlag("qgz-bits",
                cl::desc("Bits per gradient code under --qgz: 4 or 8"),
                cl::init(4), cl::cat(runCategory));
static cl::opt<int64_t> stepsFlag("steps", cl::desc("Training steps"),
                                  cl::init(10), cl::cat(runCategory));
static cl::opt<uint64_t>
    seedFlag("seed", cl::desc("Seed of the initial state and synthetic data"),
             cl::init(1), cl::cat(runCategory));
static cl::opt<std::string>
    initFlag("init", cl::desc("Initial state from a .safetensors file"),
             cl::cat(runCategory));
static cl::opt<std::string>
    dataFlag("data", cl::desc("Batches from an .npz (or .npy) file"),
             cl::cat(runCategory));
static cl::opt<bool> deterministicFlag(
    "deterministic",
    cl::desc("Fixed-order reductions: stages 0-3 agree bitwise"),
    cl::init(false), cl::cat(runCategory));
static cl::opt<std::string>
    metricsFlag("metrics-json",
                cl::desc("Write losses, timings, measured memory and traffic "
                         "beside the compile-time report"),
                cl::cat(runCategory));
static cl::opt<int64_t> accumulateFlag(
    "accumulate",
    cl::desc("Micro-batches per optimizer step (gradient accumulation): the "
             "global batch is N x local x K"),
    cl::init(1), cl::cat(runCategory));
static cl::opt<OffloadPlacement> offloadFlag(
    "offload",
    cl::desc("When compiling: what lives in host memory (zero-offload)"),
    cl::values(
        clEnumValN(OffloadPlacement::none, "none", "nothing"),
        clEnumValN(OffloadPlacement::optimizer, "optimizer",
                   "the optimizer state and its update"),
        clEnumValN(OffloadPlacement::optimizerAndParams, "optimizer+params",
                   "the parameters' shards too (stage 3)"),
        clEnumValN(OffloadPlacement::automatic, "auto",
                   "the least of these that fits --device-memory-budget")),
    cl::init(OffloadPlacement::none), cl::cat(runCategory));
static cl::opt<std::string> deviceBudgetFlag(
    "device-memory-budget",
    cl::desc("When compiling: device bytes per rank the plan must fit, with "
             "a unit (80GiB, 512MB); needed by --offload auto"),
    cl::cat(runCategory));
static cl::opt<std::string> pipelineOptionsFlag(
    "pipeline-options",
    cl::desc("More zero-pipeline options, e.g. \"reduce-bucket-bytes=0\""),
    cl::cat(runCategory));
static cl::opt<std::string>
    saveStateFlag("save-state",
                  cl::desc("Write the final parameters (logical, unsharded) "
                           "to a .safetensors file"),
                  cl::cat(runCategory));
static cl::opt<std::string> checkpointDirFlag(
    "checkpoint-dir",
    cl::desc("Save checkpoints into this directory (step-<8 digits>/, and "
             "`latest`)"),
    cl::cat(runCategory));
static cl::opt<int64_t> checkpointEveryFlag(
    "checkpoint-every",
    cl::desc("With --checkpoint-dir: save after every S-th optimizer step "
             "(and after the last)"),
    cl::init(0), cl::cat(runCategory));
static cl::opt<bool> checkpointAsyncFlag(
    "checkpoint-async",
    cl::desc("With --checkpoint-dir: copy the state to host memory at the "
             "step and write it while the next steps train (one save in "
             "flight; published when the next save starts or the run ends)"),
    cl::init(false), cl::cat(runCategory));
static cl::opt<double> checkpointWriteMibpsFlag(
    "checkpoint-write-mibps",
    cl::desc("With --checkpoint-async: write each save at most this many MiB "
             "per second (0: the disk's speed), so that the write slows the "
             "steps it overlaps less"),
    cl::init(0), cl::cat(runCategory));
static cl::opt<int> keepFlag(
    "keep",
    cl::desc("With --checkpoint-dir: keep the newest K checkpoints (0: all)"),
    cl::init(0), cl::cat(runCategory));
static cl::opt<std::string> resumeFlag(
    "resume",
    cl::desc("Continue from a checkpoint (its directory, or a directory with "
             "`latest`): runs the steps after it up to --steps"),
    cl::cat(runCategory));
static cl::opt<int64_t> scheduleTotalFlag(
    "schedule-total",
    cl::desc("The learning-rate schedule's length in steps, in place of the "
             "program's (its train.optimizer total); with --resume, the "
             "word that the checkpoint continues under it"),
    cl::init(0), cl::cat(runCategory));
static cl::opt<std::string>
    emitProgramFlag("emit-program",
                    cl::desc("Write the lowered zrt program to this file"),
                    cl::cat(runCategory));
static cl::opt<std::string> profileFlag(
    "profile",
    cl::desc("Write every rank's measured instruction timeline to this file "
             "as a Chrome trace (chrome://tracing, ui.perfetto.dev); on "
             "--backend cuda timed by CUDA events, without --cuda-graph"),
    cl::cat(runCategory));
static cl::opt<std::string> profileTableFlag(
    "profile-table",
    cl::desc("Write rank 0's timed instructions beside the machine model's "
             "predicted time of each, by instruction, kernel family and "
             "stream, to this file (JSON where it ends in .json, else "
             "Markdown); steps after the first"),
    cl::cat(runCategory));
static cl::opt<std::string> profileMachineFlag(
    "profile-machine",
    cl::desc("The machine --profile-table predicts on: a preset or a machine "
             "file (default: cpu, or h100-nvlink-8 on the CUDA backends)"),
    cl::cat(runCategory));
static cl::opt<double> timeoutFlag(
    "timeout",
    cl::desc("Seconds a collective may wait before the job is ended"),
    cl::init(120), cl::cat(runCategory));
static cl::opt<int> threadsFlag(
    "blas-threads",
    cl::desc("BLAS threads per rank (0: cores / ranks on the node)"),
    cl::init(0), cl::cat(runCategory));
static cl::opt<bool> quietFlag("quiet", cl::desc("No progress lines"),
                               cl::init(false), cl::cat(runCategory));
static cl::opt<bool> checkMemoryFlag(
    "check-memory",
    cl::desc("Measure which arena bytes the instructions really write (the "
             "arenas and a guard band past each are filled with a canary "
             "first; CPU backend) and fail when a rank writes beyond the "
             "arenas the compiler planned, beyond 1.12 x the bytes live at "
             "once, or into a guard band"),
    cl::init(false), cl::cat(runCategory));
static cl::opt<std::string> backendFlag(
    "backend",
    cl::desc("Where the ranks run: cpu (default), cuda (a GPU per rank, "
             "NCCL) or cuda-host-staged (CUDA kernels, MPI collectives "
             "through host memory; ranks may share a GPU)"),
    cl::init("cpu"), cl::cat(runCategory));
static cl::opt<bool> cudaGraphFlag(
    "cuda-graph",
    cl::desc("With --backend cuda: capture the step as a CUDA graph once and "
             "replay it"),
    cl::init(false), cl::cat(runCategory));
static cl::opt<int> deviceFlag(
    "device",
    cl::desc("CUDA device of every rank (default: the rank's index on its "
             "node, modulo the GPUs)"),
    cl::init(-1), cl::cat(runCategory));

/// Fails before a communicator exists: every rank sees the same arguments,
/// so every rank fails the same way.
[[noreturn]] static void failEarly(const std::string &message) {
  llvm::errs() << "zero-run: " << message << "\n";
  std::exit(1);
}

/// Fails with every rank ending: a lone failing rank must not leave the
/// others waiting in a collective.
[[noreturn]] static void fail(Communicator &comm, const absl::Status &status) {
  if (comm.size() == 1) {
    llvm::errs() << "zero-run: " << std::string(status.message()) << "\n";
    std::exit(1);
  }
  // Rank 0 prints the diagnostics; let it finish before the job is torn down.
  if (comm.rank() != 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  llvm::errs().flush();
  comm.abortJob(status.message(), 1);
  std::exit(1); // abortJob does not return; this tells the compiler so.
}

/// zero-run's flags about the program and its compilation.
static CompileFlags compileFlags() {
  CompileFlags flags;
  flags.programPath = programPath;
  flags.stage = stageFlag;
  flags.mesh = meshFlag;
  flags.zero.tensorParallel = tpFlag;
  flags.zero.meshScheme = meshSchemeFlag;
  flags.zero.reduceDtype = reduceDtypeFlag;
  flags.zero.hpz = hpzFlag;
  flags.zero.qwz = qwzFlag;
  flags.zero.qgz = qgzFlag;
  flags.zero.qwzBits = qwzBitsFlag;
  flags.zero.qgzBits = qgzBitsFlag;
  flags.accumulate = accumulateFlag;
  flags.accumulateGiven = accumulateFlag.getNumOccurrences() > 0;
  flags.offload = offloadFlag;
  flags.offloadGiven = offloadFlag.getNumOccurrences() > 0;
  flags.deviceBudget = deviceBudgetFlag;
  if (scheduleTotalFlag.getNumOccurrences())
    flags.scheduleTotal = scheduleTotalFlag;
  flags.backend = backendFlag;
  flags.pipelineOptions = pipelineOptionsFlag;
  return flags;
}

/// Compiles the program and checks its placement once before mpirun starts
/// the ranks, so that a bad program is said once with exit status 1, not by
/// every rank followed by Open MPI's MPI_ABORT banner. Each rank compiles it
/// again (the pipeline is cheap next to training, and needs no file passed
/// between processes).
static void compileBeforeLaunch(int ranks) {
  mlir::MLIRContext context(runDialects());
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler printer(sourceMgr, &context);
  mlir::OwningOpRef<mlir::ModuleOp> module;
  absl::StatusOr<zrt::ProgramOp> program =
      loadProgram(compileFlags(), context, sourceMgr, ranks, module);
  if (!program.ok())
    failEarly(std::string(program.status().message()));
  if (absl::Status status = Executor::checkPlacement(*program, ranks);
      !status.ok())
    failEarly(std::string(status.message()));
}

static void setThreads(int ranks) {
  int threads = threadsFlag;
  if (threads <= 0) {
    int cores = static_cast<int>(std::thread::hardware_concurrency());
    threads = std::max(1, cores / ranksOnThisNode(ranks));
  }
  setCpuKernelThreads(threads);
}

/// The backend flags, as runtime/backends checks and creates them (the same
/// code as gpt2_train's, so the two programs say the same things).
static BackendChoice backendChoice() {
  BackendChoice choice;
  choice.name = backendFlag;
  choice.cudaGraph = cudaGraphFlag;
  choice.profile = !profileFlag.empty() || !profileTableFlag.empty();
  choice.device = deviceFlag;
  choice.deviceSet = deviceFlag.getNumOccurrences() > 0;
  choice.deterministic = deterministicFlag;
  choice.timeoutSeconds = timeoutFlag;
  choice.program = "zero-run";
  return choice;
}

/// Checks the backend flags before any rank starts, so that a bad
/// combination is said once.
static void checkBackendFlags() {
  if (absl::Status status = checkBackendChoice(backendChoice()); !status.ok())
    failEarly(std::string(status.message()));
}

int main(int argc, char **argv) {
  registerZeroPasses();
  cl::HideUnrelatedOptions(runCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "zero-run: trains a ZeRO program on N ranks: CPU ranks over MPI, or "
      "GPU ranks over CUDA and NCCL\n\n"
      "  zero-run examples/mlp.mlir -n 4 --stage 3 --steps 20\n"
      "  zero-run examples/gpt2-tiny.mlir -n 2 --stage 2 --backend cuda\n");
  if (printLaunchFlag) {
    absl::StatusOr<Launch> launch = resolveLaunch();
    if (!launch.ok())
      failEarly(std::string(launch.status().message()));
    // One write for the whole line: under mpirun, every rank prints one,
    // and a line written in pieces can interleave with another rank's.
    llvm::outs() << describeLaunch(*launch) + "\n";
    llvm::outs().flush();
    return 0;
  }
  if (programPath.empty())
    failEarly("give the program to run: zero-run <program.mlir> [options]");
  if (stageFlag != -1 && !zero::isZeroStage(stageFlag, /*plainAllowed=*/true))
    failEarly("--" + zero::zeroStageRangeError(stageFlag, true));
  if (stepsFlag < 1)
    failEarly("--steps must be at least 1");
  if (accumulateFlag < 1)
    failEarly(absl::StrCat("--accumulate must be at least 1, got ",
                           accumulateFlag.getValue()));
  if (checkpointEveryFlag < 0 || keepFlag < 0)
    failEarly("--checkpoint-every and --keep must not be negative");
  if ((checkpointEveryFlag.getNumOccurrences() ||
       keepFlag.getNumOccurrences()) &&
      checkpointDirFlag.empty())
    failEarly("--checkpoint-every and --keep need --checkpoint-dir");
  if (tpFlag > 1 && (!checkpointDirFlag.empty() || !resumeFlag.empty()))
    failEarly("--checkpoint-dir and --resume: checkpoints of "
              "tensor-parallel programs (--tp above 1) are not supported "
              "yet; --save-state writes the final parameters whole");
  if (tpFlag < 1)
    failEarly(absl::StrCat("--tp must be at least 1, got ", tpFlag.getValue()));
  if (checkpointAsyncFlag && checkpointDirFlag.empty())
    failEarly("--checkpoint-async needs --checkpoint-dir");
  if (checkpointWriteMibpsFlag.getNumOccurrences() && !checkpointAsyncFlag)
    failEarly("--checkpoint-write-mibps paces asynchronous saves; give "
              "--checkpoint-async");
  if (!(checkpointWriteMibpsFlag >= 0))
    failEarly(absl::StrCat("--checkpoint-write-mibps must be 0 or more, got ",
                           checkpointWriteMibpsFlag.getValue()));
  if (!resumeFlag.empty() && !llvm::sys::fs::is_directory(resumeFlag))
    failEarly(
        absl::StrCat(resumeFlag.getValue(), ": no such checkpoint directory"));
  if (ranksFlag < 0 || (ranksFlag == 0 && ranksFlag.getNumOccurrences()))
    failEarly("-n must be at least 1");
  if (!meshFlag.empty()) {
    std::vector<std::string> extents = absl::StrSplit(meshFlag.getValue(), 'x');
    int64_t product = 1;
    for (const std::string &extent : extents) {
      int64_t value = 0;
      if (!absl::SimpleAtoi(extent, &value) || value < 1)
        failEarly(absl::StrCat("--mesh '", meshFlag.getValue(),
                               "' is not a grid of ranks such as 2x4"));
      product *= value;
    }
    if (extents.size() != 2)
      failEarly(absl::StrCat("--mesh '", meshFlag.getValue(),
                             "': a mesh has two axes, nodes x ranks per node"));
    product *= std::max(tpFlag.getValue(), 1);
    if (ranksFlag.getNumOccurrences() && ranksFlag != product)
      failEarly(absl::StrCat(
          "-n ", ranksFlag.getValue(), " but --mesh ", meshFlag.getValue(),
          tpFlag > 1 ? absl::StrCat(" --tp ", tpFlag.getValue())
                     : std::string(),
          " has ", product, " ranks"));
    if (!ranksFlag.getNumOccurrences() && !isUnderMpirun())
      ranksFlag = static_cast<int>(product);
  } else if (tpFlag > 1 && !ranksFlag.getNumOccurrences() && !isUnderMpirun()) {
    ranksFlag = tpFlag.getValue();
  } else if (tpFlag > 1 && ranksFlag % tpFlag != 0) {
    failEarly(absl::StrCat("-n ", ranksFlag.getValue(),
                           " does not divide into tensor-parallel groups of "
                           "--tp ",
                           tpFlag.getValue()));
  }
  // The ZeRO options' rules are the pipeline's (PipelineOptions.h), worded
  // for flags; the machine is checked when compiling.
  {
    frontend::GraphConfig config = configFromFlags(compileFlags(), 0, "");
    if (std::optional<std::string> error = findZeroOptionsError(
            frontend::pipelineOptionsOf(config, 0), !meshFlag.empty(),
            OptionSpelling::commandLine()))
      failEarly(*error);
  }
  bool profiling = !profileFlag.empty() || !profileTableFlag.empty();
  if (profileMachineFlag.getNumOccurrences() && profileTableFlag.empty())
    failEarly("--profile-machine is the machine of --profile-table; give "
              "--profile-table too");
  checkBackendFlags();
  // Checked before launching ranks, so that the message is said once.
  for (const std::string &path :
       {programPath.getValue(), initFlag.getValue(), dataFlag.getValue()})
    if (!path.empty() && !llvm::sys::fs::exists(path))
      failEarly(absl::StrCat(path, ": no such file"));
  if (ranksFlag > 1 && !isUnderMpirun()) {
    compileBeforeLaunch(ranksFlag);
    // Returns only when mpirun cannot be started.
    failEarly(
        std::string(relaunchUnderMpirun(ranksFlag, argc, argv).message()));
  }

  CommOptions commOptions;
  commOptions.deterministic = deterministicFlag;
  commOptions.timeoutSeconds = timeoutFlag;
  absl::StatusOr<std::unique_ptr<Communicator>> created =
      createMpiCommunicator(commOptions);
  if (!created.ok())
    failEarly(std::string(created.status().message()));
  Communicator &comm = **created;
  bool leader = comm.rank() == 0;
  if (ranksFlag > 0 && ranksFlag != comm.size())
    fail(comm, absl::InvalidArgumentError(absl::StrCat(
                   "-n ", ranksFlag.getValue(), " but mpirun started ",
                   comm.size(), " ranks")));
  setThreads(comm.size());

  mlir::MLIRContext context(runDialects());
  // One rank speaks for all: the others would print the same diagnostics.
  llvm::SourceMgr sourceMgr;
  std::optional<mlir::SourceMgrDiagnosticHandler> printer;
  std::optional<mlir::ScopedDiagnosticHandler> silencer;
  if (leader)
    printer.emplace(sourceMgr, &context);
  else
    silencer.emplace(&context,
                     [](mlir::Diagnostic &) { return mlir::success(); });
  mlir::OwningOpRef<mlir::ModuleOp> module;
  absl::StatusOr<zrt::ProgramOp> program =
      loadProgram(compileFlags(), context, sourceMgr, comm.size(), module);
  if (!program.ok())
    fail(comm, program.status());
  // Ranks launched with another file (a stale copy on one host) or other
  // flags would run other collective sequences: refuse before the first.
  {
    std::string programText, commandLine;
    llvm::raw_string_ostream programStream(programText);
    module->print(programStream);
    for (int index = 1; index < argc; ++index)
      absl::StrAppend(&commandLine, index > 1 ? " " : "", argv[index]);
    const RankFact facts[] = {{"the zero-run flags", commandLine},
                              {"the program", programStream.str()}};
    if (absl::Status status = checkRanksAgree(
            comm, facts,
            "every rank must run the same program file with the same flags");
        !status.ok())
      fail(comm, status);
  }
  if (!emitProgramFlag.empty() && leader) {
    std::error_code error;
    llvm::raw_fd_ostream os(emitProgramFlag, error);
    if (error)
      fail(comm, absl::InvalidArgumentError(
                     absl::StrCat("cannot write ", emitProgramFlag.getValue(),
                                  ": ", error.message())));
    module->print(os);
  }

  absl::StatusOr<std::unique_ptr<ExecutionBackend>> backend =
      createBackend(comm, backendChoice());
  if (!backend.ok())
    fail(comm, backend.status());
  absl::StatusOr<std::unique_ptr<Executor>> executor =
      Executor::create(*program, comm, std::move(*backend));
  if (!executor.ok())
    fail(comm, executor.status());
  std::vector<std::string> takenFromRankZero;
  if (absl::Status status = initializeState(
          **executor, seedFlag, initFlag.getValue(), &takenFromRankZero);
      !status.ok())
    fail(comm, status);
  if (!takenFromRankZero.empty() && comm.rank() == 0)
    llvm::errs() << "zero-run: the ranks' --init files differ in "
                 << takenFromRankZero.size() << " tensor(s), first '"
                 << takenFromRankZero.front()
                 << "': every rank starts from rank 0's, as PyTorch's DDP "
                    "does\n";
  // A resumed run continues the checkpoint's data unless told otherwise.
  uint64_t seed = seedFlag;
  int64_t firstStep = 1;
  if (!resumeFlag.empty()) {
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<CheckpointManifest> resumed =
        loadCheckpoint(**executor, resumeFlag,
                       {scheduleTotalFlag.getNumOccurrences()
                            ? std::optional<int64_t>(scheduleTotalFlag)
                            : std::nullopt});
    if (!resumed.ok())
      fail(comm, resumed.status());
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    firstStep = resumed->step + 1;
    if (!seedFlag.getNumOccurrences())
      seed = resumed->seed;
    if (leader && !quietFlag)
      llvm::outs() << "zero-run: resumed from step " << resumed->step
                   << " (saved on " << resumed->ranks << " rank"
                   << (resumed->ranks == 1 ? "" : "s") << ", stage "
                   << resumed->stage
                   << "): " << describeCheckpointIO(*resumed, seconds) << "\n";
  }
  absl::StatusOr<std::unique_ptr<BatchSource>> batches =
      dataFlag.empty() ? createSyntheticBatches(**executor, seed)
                       : createFileBatches(**executor, dataFlag);
  if (!batches.ok())
    fail(comm, batches.status());

  if (checkMemoryFlag)
    if (absl::Status status = (*executor)->startWriteCheck(); !status.ok())
      fail(comm, status);

  RunMetrics metrics(**executor, *program);
  // A placement whose values overwrite each other is refused before it is
  // measured: its writes would be held against a program it does not run.
  if (checkMemoryFlag)
    if (absl::Status status = checkArenaPlacement(metrics.arenaPrediction());
        !status.ok())
      fail(comm, status);
  metrics.steps = stepsFlag;
  metrics.firstStep = firstStep;
  metrics.globalBatch = (*batches)->globalBatch();
  metrics.deterministic = deterministicFlag;
  metrics.seed = seed;
  metrics.data = (*batches)->describe();
  if (leader && !quietFlag)
    llvm::outs() << metrics.describeStart() << "\n";

  // Prints what a finished save wrote; `seconds` is the write's.
  auto reportSave = [&](const std::string &dir, double seconds,
                        const std::string &extra) {
    if (!leader || quietFlag)
      return;
    absl::StatusOr<CheckpointManifest> written = readCheckpointManifest(dir);
    llvm::outs() << "zero-run: saved " << dir;
    if (written.ok())
      llvm::outs() << ": " << describeCheckpointIO(*written, seconds);
    llvm::outs() << extra << "\n";
  };
  // With --checkpoint-async, the save still writing: at most one, as a
  // second copy of the state would double the host memory a save holds.
  std::unique_ptr<AsyncCheckpointSave> pending;
  auto finishPending = [&] {
    if (!pending)
      return;
    absl::StatusOr<std::string> saved = pending->finish();
    if (!saved.ok())
      fail(comm, saved.status());
    reportSave(*saved, pending->writeSeconds(), pending->describeWait());
    pending.reset();
  };
  auto save = [&](int64_t step) {
    CheckpointContext context{seed, (*batches)->globalBatch()};
    if (checkpointAsyncFlag) {
      finishPending();
      absl::StatusOr<std::unique_ptr<AsyncCheckpointSave>> started =
          AsyncCheckpointSave::start(
              **executor, checkpointDirFlag, step, context, keepFlag,
              static_cast<uint64_t>(checkpointWriteMibpsFlag * (1 << 20)));
      if (!started.ok())
        fail(comm, started.status());
      pending = std::move(*started);
      return;
    }
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::string> saved =
        saveCheckpoint(**executor, checkpointDirFlag, step, context, keepFlag);
    if (!saved.ok())
      fail(comm, saved.status());
    reportSave(
        *saved,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count(),
        "");
  };
  StepProfile profile;
  frontend::ProfileOutputs profileOutputs;
  profileOutputs.trace = profileFlag;
  profileOutputs.table = profileTableFlag;
  profileOutputs.machine =
      !profileMachineFlag.empty() ? profileMachineFlag.getValue()
      : backendFlag == "cpu"      ? std::string("cpu")
                                  : std::string(getDefaultMachine("cuda"));
  profileOutputs.firstStep = firstStep + 1;
  if (profiling) {
    if (absl::Status status =
            frontend::checkProfileOutputs(*program, profileOutputs);
        !status.ok())
      fail(comm, status);
    if (absl::Status status = (*executor)->backend().setProfile(&profile);
        !status.ok())
      fail(comm, status);
  }
  comm.resetTraffic();
  size_t axes = (*executor)->grid().size();
  if (axes > 1)
    for (size_t axis = 0; axis < axes; ++axis)
      (*executor)->axisCommunicator(static_cast<int>(axis)).resetTraffic();
  for (int64_t step = firstStep; step <= stepsFlag; ++step) {
    // The step's time includes filling its micro-batches.
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<float> loss = runTrainingStep(**executor, **batches, step);
    if (!loss.ok())
      fail(comm, loss.status());
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (step == firstStep) {
      metrics.trafficPerStep = comm.traffic();
      if (axes > 1)
        for (size_t axis = 0; axis < axes; ++axis)
          metrics.axisTrafficPerStep.push_back(
              (*executor)->axisCommunicator(static_cast<int>(axis)).traffic());
    }
    metrics.recordStep(*loss, seconds);
    if (leader && !quietFlag)
      llvm::outs() << metrics.describeStep(step) << "\n";
    bool due = checkpointEveryFlag > 0 && step % checkpointEveryFlag == 0;
    if (!checkpointDirFlag.empty() && (due || step == stepsFlag))
      save(step);
  }
  // Resumed at its last step, a run trains nothing; with --checkpoint-dir
  // it still saves the state it loaded, under its own plan.
  if (!checkpointDirFlag.empty() && firstStep > stepsFlag)
    save(firstStep - 1);
  finishPending();
  metrics.trafficTotal = comm.traffic();
  if (checkMemoryFlag) {
    absl::StatusOr<std::pair<ArenaWrites, ArenaWrites>> writes =
        (*executor)->measureArenaWrites();
    if (!writes.ok())
      fail(comm, writes.status());
    metrics.writes = *writes;
  }
  if (profiling) {
    (void)(*executor)->backend().setProfile(nullptr);
    if (absl::Status status = frontend::writeProfile(
            comm, **executor, *program, profile.takeEvents(), profileOutputs);
        !status.ok())
      fail(comm, status);
  }

  if (absl::Status status = metrics.gatherRanks(comm); !status.ok())
    fail(comm, status);
  if (!saveStateFlag.empty()) {
    absl::StatusOr<TensorMap> state = gatherState(**executor);
    if (!state.ok())
      fail(comm, state.status());
    if (leader)
      if (absl::Status status = writeSafetensors(saveStateFlag, *state);
          !status.ok())
        fail(comm, status);
  }
  if (leader) {
    if (!metricsFlag.empty())
      if (absl::Status status = metrics.writeJson(metricsFlag); !status.ok())
        fail(comm, status);
    if (!quietFlag)
      llvm::outs() << metrics.describeEnd() << "\n";
    if (checkMemoryFlag && !quietFlag && metrics.writes)
      llvm::outs() << "zero-run: --check-memory: rank 0 wrote "
                   << metrics.writes->first.bytes << " arena bytes, up to byte "
                   << metrics.writes->first.highWater << " of the "
                   << metrics.arenaPrediction().plannedArena << " planned\n";
    llvm::outs().flush();
  }
  // After the metrics are written, so that the figures of a failed check
  // can be read; every rank holds every rank's figures and fails alike.
  if (std::vector<std::string> beyond = metrics.writesBeyondPlan();
      !beyond.empty())
    fail(comm, absl::FailedPreconditionError(
                   absl::StrCat("--check-memory: ", absl::StrJoin(beyond, "; "),
                                " (docs/runtime.md, \"What is measured\")")));
  if (absl::Status status = comm.barrier(); !status.ok())
    fail(comm, status);
  executor->reset();
  created->reset();
  finalizeMpi();
  return 0;
}
