//===- gpt2_train.cpp - GPT-2 on a text corpus with ZeRO, from C++ --------===//
//
// Builds GPT-2 with the graph builder (byte-level tokens), compiles it for
// the ranks of the job at the requested ZeRO stage, prints what each rank
// will hold and send, and trains it on the shipped corpus
// (examples/gpt2/data/) or any text file:
//
//   build/bin/gpt2_train --size tiny --stage 3 -n 4 --steps 200
//   build/bin/gpt2_train --size 124M --stage 3 -n 8 --plan-only
//   build/bin/gpt2_train --size 124M --stage 0 --precision bf16 \
//       --backend cuda --cuda-graph --steps 20
//
// With -n N > 1 outside mpirun it launches itself under
// `mpirun --oversubscribe -np N`, as zero-run does; under the user's own
// mpirun it takes the job's ranks. docs/frontend.md documents every flag.
//
//===----------------------------------------------------------------------===//

#include "zero/dialects/zrt/ZrtOps.h"
#include "zero/frontend/CompiledGraph.h"
#include "zero/frontend/Graph.h"
#include "zero/frontend/Layers.h"
#include "zero/frontend/Profile.h"

#include "Gpt2Flags.h"
#include "Gpt2Plan.h"
#include "zero/runtime/ArenaWriteCheck.h"
#include "zero/runtime/BackendSelection.h"
#include "zero/runtime/Checkpoint.h"
#include "zero/runtime/CheckpointFormat.h"
#include "zero/runtime/Communicator.h"
#include "zero/runtime/CpuKernels.h"
#include "zero/runtime/Launch.h"
#include "zero/runtime/TrainingState.h"
#include "zero/support/Status.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace zero::frontend;
using gpt2::bytes;
using gpt2::Flags;
using gpt2::grouped;
using gpt2::modelConfig;
using gpt2::parameterCount;
using gpt2::parseFlags;
using gpt2::printPlan;
using gpt2::usage;

namespace {

/// Prints `status` (rank 0 only) and ends every rank.
[[noreturn]] void fail(zero::rt::Communicator *comm,
                       const absl::Status &status) {
  if (!comm || comm->size() == 1) {
    std::fprintf(stderr, "gpt2_train: %s\n",
                 std::string(status.message()).c_str());
    std::exit(1);
  }
  if (comm->rank() != 0) // let rank 0 say it first
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::fflush(stdout);
  comm->abortJob(status.message(), 1);
  std::exit(1); // abortJob does not return; this tells the compiler so.
}

//===----------------------------------------------------------------------===//
// The model and its data
//===----------------------------------------------------------------------===//

/// The per-rank step on `localBatch` sequences (inputs in this order:
/// tokens, positions, targets, which CorpusBatches fills).
Graph buildGpt2(const Flags &flags, int64_t localBatch) {
  Graph graph("gpt2");
  graph.config().precision(flags.precision);
  Tensor tokens = graph.input("tokens", {localBatch, flags.seq}, DType::i32);
  Tensor positions =
      graph.input("positions", {localBatch, flags.seq}, DType::i32);
  Tensor targets = graph.input("targets", {localBatch, flags.seq}, DType::i32);
  GPT2 model(graph, modelConfig(flags));
  graph.minimize(model.loss(tokens, positions, targets));
  graph.config().optimizer(AdamW{flags.lr, {0.9, 0.95}, 1e-8, 0.1});
  graph.config().enable_zero(flags.stage > 0, flags.stage);
  if (!flags.mesh.empty()) {
    graph.config().mesh(flags.mesh[0], flags.mesh[1]);
    graph.config().zero().meshScheme = flags.meshScheme;
    graph.config().zero().hpz = flags.hpz;
    graph.config().zero().qwz = flags.qwz;
    graph.config().zero().qgz = flags.qgz;
    graph.config().zero().qwzBits = flags.qwzBits;
    graph.config().zero().qgzBits = flags.qgzBits;
    graph.config().zero().quantizeBlock = flags.quantizeBlock;
    graph.config().zero().quantizeMinElements = flags.quantizeBlock;
  }
  graph.config().activation_checkpointing(flags.checkpoint);
  graph.config().gradient_accumulation_steps(
      static_cast<int>(flags.accumulate));
  graph.config().offload(flags.offload);
  graph.config().device_memory_budget(flags.deviceMemoryBudget);
  graph.config().zero().prefetchBytes = flags.prefetchBytes;
  graph.config().zero().maxLiveGatheredBytes = flags.maxLiveGatheredBytes;
  graph.config().zero().machine = flags.machine;
  if (flags.clip > 0)
    graph.config().clip_grad_norm(flags.clip);
  return graph;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// Byte-level batches of a text: row g of step s's global batch is the
/// window of seq + 1 bytes at a start drawn from (seed, s, g); its first
/// seq bytes are the tokens, its last seq the targets. Each rank fills its
/// rows of the same global batch, so the data does not depend on the ranks.
class CorpusBatches : public zero::rt::BatchSource {
public:
  static absl::StatusOr<std::unique_ptr<CorpusBatches>>
  create(zero::rt::Executor &executor, std::string path, std::string text,
         int64_t seq, int64_t globalBatch, uint64_t seed) {
    std::unique_ptr<CorpusBatches> batches(new CorpusBatches(
        executor, std::move(path), std::move(text), seq, globalBatch, seed));
    const char *names[] = {"input0", "input1", "input2"};
    int64_t local = globalBatch / executor.communicator().size();
    for (int i = 0; i < 3; ++i) {
      int buffer = executor.findBuffer(names[i]);
      if (buffer < 0)
        return absl::InternalError(
            absl::StrCat("the program has no input ", names[i]));
      const zero::rt::BufferDecl &decl = executor.buffers()[buffer];
      if (decl.spec.dtype != DType::i32 ||
          decl.spec.shape != std::vector<int64_t>{local, seq})
        return absl::InternalError(absl::StrCat(
            "input ", names[i], " is not i32 [", local, ", ", seq, "]"));
      batches->buffers[i] = buffer;
    }
    return batches;
  }

  absl::Status fill(int64_t step, int64_t micro) override {
    zero::rt::Communicator &comm = executor.communicator();
    int64_t local = globalRows / comm.size();
    // Drawn on the host, then copied to the backend's buffers.
    for (std::vector<int32_t> &rows : host)
      rows.resize(local * seq);
    int32_t *tokens = host[0].data();
    int32_t *positions = host[1].data();
    int32_t *targets = host[2].data();
    uint64_t starts = text.size() - seq; // windows of seq + 1 bytes
    for (int64_t row = 0; row < local; ++row) {
      uint64_t global = static_cast<uint64_t>(
          (micro * comm.size() + comm.rank()) * local + row);
      uint64_t start = splitmix64(splitmix64(splitmix64(seed) ^
                                             static_cast<uint64_t>(step)) ^
                                  global) %
                       starts;
      for (int64_t t = 0; t < seq; ++t) {
        tokens[row * seq + t] = static_cast<unsigned char>(text[start + t]);
        targets[row * seq + t] =
            static_cast<unsigned char>(text[start + t + 1]);
        positions[row * seq + t] = static_cast<int32_t>(t);
      }
    }
    for (int i = 0; i < 3; ++i)
      ZERO_RETURN_IF_ERROR(executor.writeBuffer(buffers[i], host[i].data()));
    return absl::OkStatus();
  }
  int64_t globalBatch() const override {
    return globalRows * executor.accumulateSteps();
  }
  std::string describe() const override {
    return absl::StrCat(path, " (", text.size(), " bytes, byte-level tokens)");
  }

private:
  CorpusBatches(zero::rt::Executor &executor, std::string path,
                std::string text, int64_t seq, int64_t globalRows,
                uint64_t seed)
      : executor(executor), path(std::move(path)), text(std::move(text)),
        seq(seq), globalRows(globalRows), seed(seed) {}
  zero::rt::Executor &executor;
  std::string path, text;
  int64_t seq, globalRows;
  uint64_t seed;
  int buffers[3] = {-1, -1, -1};
  std::vector<int32_t> host[3];
};

absl::StatusOr<std::string> readCorpus(const Flags &flags) {
  std::ifstream file(flags.data, std::ios::binary);
  if (!file)
    return absl::InvalidArgumentError(
        absl::StrCat("--data ", flags.data, ": cannot open the file"));
  std::string text((std::istreambuf_iterator<char>(file)),
                   std::istreambuf_iterator<char>());
  if (static_cast<int64_t>(text.size()) < flags.seq + 2)
    return absl::InvalidArgumentError(absl::StrCat(
        "--data ", flags.data, ": ", text.size(),
        " bytes is too short for windows of --seq ", flags.seq, " + 1 bytes"));
  return text;
}

double mean(const std::vector<float> &values, size_t begin, size_t end) {
  double sum = 0;
  for (size_t i = begin; i < end; ++i)
    sum += values[i];
  return end > begin ? sum / static_cast<double>(end - begin) : NAN;
}

/// Model FLOPs per trained token, as in the PaLM paper's MFU (appendix B):
///
///   flops/token = 6 * P + 12 * L * d_model * seq
///
/// where P is the trainable parameters (embeddings included), L the layers
/// and seq the context. 6 * P is the forward (2 * P) and backward (4 * P)
/// matmuls against the weights; 12 * L * d_model * seq the attention scores
/// and their weighted sum, forward and backward. Recomputation under
/// --checkpoint-activations is not counted: MFU measures useful work.
double flopsPerToken(const GPT2Config &config) {
  return 6.0 * static_cast<double>(parameterCount(config)) +
         12.0 * static_cast<double>(config.layers) *
             static_cast<double>(config.dim) * static_cast<double>(config.seq);
}

/// The dense bf16 peak (TFLOP/s) of the GPU `description` names, or 0 where
/// it is not known: H100 SXM and H200 (989). The PCIe and NVL parts are
/// slower and must be given with --peak-tflops.
double defaultPeakTflops(const std::string &description) {
  bool known = description.find("H100") != std::string::npos ||
               description.find("H200") != std::string::npos;
  if (!known || description.find("PCIe") != std::string::npos ||
      description.find("NVL") != std::string::npos)
    return 0;
  return 989;
}

/// The GPU line: the mean step time without step 1 (bind-time work, the
/// CUDA graph's capture, cuBLAS's first calls), tokens/s over the job, and
/// MFU per GPU (one GPU per rank) against the --peak-tflops peak.
void printThroughput(const Flags &flags, const std::vector<double> &seconds,
                     int ranks, const std::string &description) {
  size_t first = seconds.size() > 1 ? 1 : 0;
  double sum = 0;
  for (size_t i = first; i < seconds.size(); ++i)
    sum += seconds[i];
  double step = sum / static_cast<double>(seconds.size() - first);
  double tokensPerSecond =
      static_cast<double>(flags.batch * flags.accumulate * flags.seq) / step;
  double perToken = flopsPerToken(modelConfig(flags));
  std::printf("gpu: mean step %.2f ms (steps %zu-%zu), %.0f tokens/s, "
              "%.3g model FLOPs/token",
              1e3 * step, first + 1, seconds.size(), tokensPerSecond, perToken);
  double peak =
      flags.peakTflops > 0 ? flags.peakTflops : defaultPeakTflops(description);
  if (peak > 0)
    std::printf(", MFU %.1f%% of %g TFLOP/s per GPU",
                100.0 * perToken * tokensPerSecond / (peak * 1e12 * ranks),
                peak);
  else
    std::printf(" (no MFU: give the GPU's peak with --peak-tflops)");
  std::printf("\n");
}

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

int planOnly(const Flags &flags) {
  int ranks = flags.ranks > 0 ? flags.ranks : 1;
  if (flags.batch % ranks != 0)
    usage(absl::StrCat("--batch ", flags.batch, " does not split over ", ranks,
                       " ranks (it is the global batch: use a multiple of ",
                       ranks, ")"));
  int64_t localBatch = flags.batch / ranks;
  Graph graph = buildGpt2(flags, localBatch);
  absl::StatusOr<CompiledGraph> compiled = graph.compile(ranks);
  if (!compiled.ok())
    fail(nullptr, compiled.status());
  if (!flags.saveStep.empty())
    if (absl::Status status = compiled->save(flags.saveStep, Form::step);
        !status.ok())
      fail(nullptr, status);
  printPlan(flags, *compiled, localBatch, "");
  return 0;
}

/// The cost of asynchronous saves to the training: the mean time of the
/// steps that ran while a save was writing against the others (the first
/// step, which binds the program, left out), and what the steps waited for
/// the copies and commits.
void printSaveOverlap(const std::vector<double> &stepSeconds,
                      const std::vector<bool> &duringSave, double waited) {
  double sums[2] = {0, 0};
  long counts[2] = {0, 0};
  for (size_t index = 1; index < stepSeconds.size(); ++index) {
    sums[duringSave[index]] += stepSeconds[index];
    ++counts[duringSave[index]];
  }
  auto meanMs = [&](int which) {
    return counts[which] ? 1e3 * sums[which] / counts[which] : 0.0;
  };
  std::printf("asynchronous saves: %ld steps during a save at %.1f ms/step, "
              "%ld steps without at %.1f ms/step (%.2fx); the steps waited "
              "%.3f s for copies and commits\n",
              counts[1], meanMs(1), counts[0], meanMs(0),
              counts[0] && counts[1] ? meanMs(1) / meanMs(0) : 0.0, waited);
}

int train(zero::rt::Communicator &comm, const Flags &flags) {
  bool leader = comm.rank() == 0;
  if (flags.ranks > 0 && flags.ranks != comm.size())
    fail(&comm, absl::InvalidArgumentError(
                    absl::StrCat("-n ", flags.ranks, " but mpirun started ",
                                 comm.size(), " ranks")));
  if (flags.batch % comm.size() != 0)
    fail(&comm,
         absl::InvalidArgumentError(absl::StrCat(
             "--batch ", flags.batch, " does not split over ", comm.size(),
             " ranks (it is the global batch: use a multiple of ", comm.size(),
             ")")));
  int64_t localBatch = flags.batch / comm.size();
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  zero::rt::setCpuKernelThreads(
      std::max(1, cores / zero::rt::ranksOnThisNode(comm.size())));

  absl::StatusOr<std::string> text = readCorpus(flags);
  if (!text.ok())
    fail(&comm, text.status());
  Graph graph = buildGpt2(flags, localBatch);
  absl::StatusOr<CompiledGraph> compiled = graph.compile(comm.size());
  if (!compiled.ok())
    fail(&comm, compiled.status());
  if (leader && !flags.saveStep.empty())
    if (absl::Status status = compiled->save(flags.saveStep, Form::step);
        !status.ok())
      fail(&comm, status);
  absl::StatusOr<std::unique_ptr<zero::rt::ExecutionBackend>> backend =
      zero::rt::createBackend(comm, backendChoice(flags));
  if (!backend.ok())
    fail(&comm, backend.status());
  auto trainer =
      Trainer::create(*compiled, comm, flags.seed, "", std::move(*backend));
  if (!trainer.ok())
    fail(&comm, trainer.status());
  zero::rt::ExecutionBackend &executionBackend =
      (*trainer)->executor().backend();
  bool onGpu = !executionBackend.hostAddressable();
  auto batches =
      CorpusBatches::create((*trainer)->executor(), flags.data, *text,
                            flags.seq, flags.batch, flags.seed);
  if (!batches.ok())
    fail(&comm, batches.status());
  std::string dataLine = (*batches)->describe();
  (*trainer)->useBatches(std::move(*batches));
  if (!flags.resume.empty()) {
    auto start = std::chrono::steady_clock::now();
    if (absl::Status status = (*trainer)->load(flags.resume); !status.ok())
      fail(&comm, status);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (leader) {
      absl::StatusOr<std::string> dir =
          zero::rt::resolveCheckpoint(flags.resume);
      absl::StatusOr<zero::rt::CheckpointManifest> manifest =
          dir.ok() ? zero::rt::readCheckpointManifest(*dir) : dir.status();
      std::printf(
          "resumed from step %lld of %s: %s\n",
          static_cast<long long>((*trainer)->stepsDone()), flags.resume.c_str(),
          manifest.ok()
              ? zero::rt::describeCheckpointIO(*manifest, seconds).c_str()
              : "");
    }
  }
  // The program the trainer runs: its arenas (here) and its profile.
  zero::zrt::ProgramOp program =
      *compiled->module(Form::program).getOps<zero::zrt::ProgramOp>().begin();
  // After the resume: its state is persistent, the arenas hold only what
  // the steps write.
  zero::rt::ArenaPrediction prediction =
      zero::rt::ArenaPrediction::fromProgram(program);
  if (flags.checkMemory) {
    if (absl::Status status = zero::rt::checkArenaPlacement(prediction);
        !status.ok())
      fail(&comm, status);
    if (absl::Status status = (*trainer)->executor().startWriteCheck();
        !status.ok())
      fail(&comm, status);
  }
  long firstStep = static_cast<long>((*trainer)->stepsDone()) + 1;
  // Checkpoints after every --checkpoint-every steps and after the last;
  // a run with nothing left to train saves the state it loaded.
  auto reportSave = [&](const std::string &dir, double seconds,
                        const std::string &extra) {
    if (!leader)
      return;
    absl::StatusOr<zero::rt::CheckpointManifest> manifest =
        zero::rt::readCheckpointManifest(dir);
    std::printf("saved %s: %s%s\n", dir.c_str(),
                manifest.ok()
                    ? zero::rt::describeCheckpointIO(*manifest, seconds).c_str()
                    : "",
                extra.c_str());
  };
  // With --checkpoint-async, the save still writing (at most one: each
  // holds a copy of the rank's state in host memory) and what the steps
  // waited for the saves: the copies and the commits.
  std::unique_ptr<zero::rt::AsyncCheckpointSave> pending;
  double saveWaitSeconds = 0;
  auto finishPending = [&] {
    if (!pending)
      return;
    absl::StatusOr<std::string> saved = pending->finish();
    if (!saved.ok())
      fail(&comm, saved.status());
    saveWaitSeconds += pending->startSeconds() + pending->finishSeconds();
    reportSave(*saved, pending->writeSeconds(), pending->describeWait());
    pending.reset();
  };
  auto saveCheckpoint = [&] {
    if (flags.checkpointAsync) {
      finishPending();
      absl::StatusOr<std::unique_ptr<zero::rt::AsyncCheckpointSave>> started =
          (*trainer)->startSave(
              flags.checkpointDir, static_cast<int>(flags.keep),
              static_cast<uint64_t>(flags.checkpointWriteMibps * (1 << 20)));
      if (!started.ok())
        fail(&comm, started.status());
      pending = std::move(*started);
      return;
    }
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::string> saved =
        (*trainer)->save(flags.checkpointDir, static_cast<int>(flags.keep));
    if (!saved.ok())
      fail(&comm, saved.status());
    reportSave(
        *saved,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count(),
        "");
  };
  if (leader) {
    printPlan(flags, *compiled, localBatch, dataLine);
    if (onGpu) {
      std::printf("backend: %s on %s\n", executionBackend.name().c_str(),
                  executionBackend.deviceDescription().c_str());
      std::fflush(stdout);
    }
  }

  std::FILE *lossesFile = nullptr;
  if (leader && !flags.lossesOut.empty()) {
    lossesFile = std::fopen(flags.lossesOut.c_str(), "w");
    if (!lossesFile)
      fail(&comm, absl::InvalidArgumentError(
                      absl::StrCat("--losses-out ", flags.lossesOut,
                                   ": cannot open the file for writing")));
  }

  // --profile, --profile-table: the steps' instructions as the backend
  // timed them (zero/frontend/Profile.h).
  zero::rt::StepProfile profile;
  zero::frontend::ProfileOutputs profileOutputs;
  profileOutputs.trace = flags.profile;
  profileOutputs.table = flags.profileTable;
  profileOutputs.machine = !flags.profileMachine.empty() ? flags.profileMachine
                           : flags.backend == "cpu"      ? std::string("cpu")
                                                         : flags.machine;
  profileOutputs.firstStep = firstStep + 1;
  bool profiling = !flags.profile.empty() || !flags.profileTable.empty();
  if (profiling) {
    if (absl::Status status =
            zero::frontend::checkProfileOutputs(program, profileOutputs);
        !status.ok())
      fail(&comm, status);
    if (absl::Status status = executionBackend.setProfile(&profile);
        !status.ok())
      fail(&comm, status);
  }

  comm.resetTraffic();
  std::map<std::string, zero::TrafficCount> firstStepTraffic;
  std::vector<float> losses;
  // Each step's wall time; step() reads the loss back, which waits for the
  // device, so on a GPU this is the step's time too.
  std::vector<double> stepSeconds;
  // Which steps started while an asynchronous save was writing (not
  // merely unpublished: a finished write waits for the next save's commit).
  std::vector<bool> duringSave;
  auto start = std::chrono::steady_clock::now();
  auto lastLog = start;
  long lastLogStep = firstStep - 1;
  for (long step = firstStep; step <= flags.steps; ++step) {
    auto stepStart = std::chrono::steady_clock::now();
    duringSave.push_back(pending && pending->writing());
    absl::StatusOr<float> loss = (*trainer)->step();
    if (!loss.ok())
      fail(&comm, loss.status());
    stepSeconds.push_back(std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - stepStart)
                              .count());
    if (step == firstStep)
      firstStepTraffic = comm.traffic();
    losses.push_back(*loss);
    if (lossesFile)
      std::fprintf(lossesFile, "%.9g\n", *loss);
    if (!std::isfinite(*loss))
      fail(&comm, absl::InternalError(
                      absl::StrCat("the loss is ", *loss, " at step ", step,
                                   " (try a lower --lr, or --clip 1.0)")));
    bool log = flags.logEvery > 0 &&
               (step % flags.logEvery == 0 || step == 1 || step == flags.steps);
    if (leader && log) {
      auto now = std::chrono::steady_clock::now();
      double seconds = std::chrono::duration<double>(now - lastLog).count();
      long stepsSince = step - lastLogStep;
      double tokensPerSecond = seconds > 0
                                   ? stepsSince * flags.batch *
                                         flags.accumulate * flags.seq / seconds
                                   : 0;
      std::printf("step %4ld/%ld  loss %.4f  (%.1f ms/step, %.0f tokens/s)\n",
                  step, flags.steps, *loss, 1e3 * seconds / stepsSince,
                  tokensPerSecond);
      std::fflush(stdout);
      lastLog = now;
      lastLogStep = step;
    }
    if (!flags.checkpointDir.empty() &&
        ((flags.checkpointEvery > 0 && step % flags.checkpointEvery == 0) ||
         step == flags.steps))
      saveCheckpoint();
  }
  if (!flags.checkpointDir.empty() && firstStep > flags.steps)
    saveCheckpoint();
  finishPending();
  if (profiling) {
    (void)executionBackend.setProfile(nullptr);
    if (absl::Status status =
            zero::frontend::writeProfile(comm, (*trainer)->executor(), program,
                                         profile.takeEvents(), profileOutputs);
        !status.ok())
      fail(&comm, status);
    if (leader)
      std::printf("profile: %s%s%s\n", flags.profile.c_str(),
                  flags.profile.empty() || flags.profileTable.empty() ? ""
                                                                      : ", ",
                  flags.profileTable.c_str());
  }
  if (flags.checkMemory) {
    absl::StatusOr<std::pair<zero::rt::ArenaWrites, zero::rt::ArenaWrites>>
        writes = (*trainer)->executor().measureArenaWrites();
    if (!writes.ok())
      fail(&comm, writes.status());
    if (leader) {
      std::printf("--check-memory: rank 0 wrote %lld arena bytes, up to byte "
                  "%lld of the %lld planned (%lld live at once)",
                  static_cast<long long>(writes->first.bytes),
                  static_cast<long long>(writes->first.highWater),
                  static_cast<long long>(prediction.plannedArena),
                  static_cast<long long>(prediction.liveBytes));
      if (prediction.plannedHostArena > 0)
        std::printf("; its host arena up to byte %lld of the %lld planned",
                    static_cast<long long>(writes->second.highWater),
                    static_cast<long long>(prediction.plannedHostArena));
      std::printf("\n");
    }
    if (absl::Status status =
            zero::rt::checkArenaWritesOfEveryRank(comm, prediction, *writes);
        !status.ok())
      fail(&comm, status);
  }
  if (leader && flags.checkpointAsync)
    printSaveOverlap(stepSeconds, duringSave, saveWaitSeconds);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (lossesFile)
    std::fclose(lossesFile);
  if (leader && losses.empty()) {
    std::printf("done: no steps to run (the state is at step %ld)\n",
                firstStep - 1);
  } else if (leader) {
    size_t window =
        std::max<size_t>(1, std::min<size_t>(10, losses.size() / 4));
    const zero::rt::MemoryFigures &measured = (*trainer)->executor().memory();
    double sent = 0;
    for (const auto &[kind, traffic] : firstStepTraffic)
      sent += traffic.sentBytesPerRank;
    double planned = 0;
    for (const auto &[kind, traffic] : compiled->report().traffic)
      planned += traffic.sentBytesPerRank;
    std::printf(
        "done: %zu steps in %.2f s (%.0f tokens/s); loss %.4f -> %.4f (mean "
        "of the first and last %zu steps)\n",
        losses.size(), seconds,
        losses.size() * flags.batch * flags.accumulate * flags.seq / seconds,
        mean(losses, 0, window),
        mean(losses, losses.size() - window, losses.size()), window);
    // The planned arena holds the tensor-level peak plus padding and bucket
    // copies; the high water must stay within it.
    std::printf("measured on rank 0: state %s (plan %s), arena high "
                "water %s of the planned %s arena (tensor-level peak "
                "transient %s), sent %s per step (plan %s)\n",
                bytes(measured.persistent() - measured.inputsOutputs).c_str(),
                bytes(compiled->report().persistent).c_str(),
                bytes(measured.arenaHighWater).c_str(),
                bytes(measured.arenaBytes).c_str(),
                bytes(compiled->report().peakTransient).c_str(),
                bytes(sent).c_str(), bytes(planned).c_str());
    if (compiled->report().memoryPlan)
      std::printf("measured on rank 0: device %s (high water %s), host %s, "
                  "host link %s per step\n",
                  bytes(measured.deviceBytes()).c_str(),
                  bytes(measured.deviceHighWater()).c_str(),
                  bytes(measured.hostBytes()).c_str(),
                  bytes(measured.hostLinkBytesPerStep).c_str());
    zero::rt::Executor &executor = (*trainer)->executor();
    int scaleBuffer = executor.findBuffer("loss_scale");
    int goodBuffer = executor.findBuffer("loss_scale.good_steps");
    if (scaleBuffer >= 0 && goodBuffer >= 0)
      std::printf("loss scale %g after the last step (%g good steps in a "
                  "row)\n",
                  executor.readScalar(scaleBuffer),
                  executor.readScalar(goodBuffer));
    if (onGpu)
      printThroughput(flags, stepSeconds, comm.size(),
                      executionBackend.deviceDescription());
    std::fflush(stdout);
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Flags flags = parseFlags(argc, argv);
  // Checked before launching ranks, so that the message is said once; a
  // plan needs no device, so --plan-only checks only the combination.
  if (absl::Status status =
          zero::rt::checkBackendChoice(backendChoice(flags), !flags.planOnly);
      !status.ok())
    fail(nullptr, status);
  resolveAttention(flags);
  if (flags.planOnly)
    return planOnly(flags);
  // Checked before launching ranks, so that the message is said once.
  if (absl::StatusOr<std::string> text = readCorpus(flags); !text.ok())
    fail(nullptr, text.status());
  if (flags.ranks > 0 && flags.batch % flags.ranks != 0)
    usage(absl::StrCat("--batch ", flags.batch, " does not split over ",
                       flags.ranks,
                       " ranks (it is the global batch: use a multiple of ",
                       flags.ranks, ")"));
  if (flags.ranks > 1 && !zero::rt::isUnderMpirun()) {
    // Compiled once here, so that a step the passes reject is said once,
    // with exit status 1, and not by every rank followed by Open MPI's
    // MPI_ABORT banner. The ranks compile it again: the pipeline is cheap
    // next to training and rank-local compilation needs no file exchange.
    Graph graph = buildGpt2(flags, flags.batch / flags.ranks);
    if (absl::StatusOr<CompiledGraph> compiled = graph.compile(flags.ranks);
        !compiled.ok())
      fail(nullptr, compiled.status());
    // Returns only when mpirun cannot be started.
    absl::Status launch =
        zero::rt::relaunchUnderMpirun(flags.ranks, argc, argv);
    std::fprintf(stderr, "gpt2_train: %s\n",
                 std::string(launch.message()).c_str());
    return 1;
  }
  zero::rt::CommOptions options;
  options.deterministic = flags.deterministic;
  auto comm = zero::rt::createMpiCommunicator(options);
  if (!comm.ok())
    fail(nullptr, comm.status());
  int code = train(**comm, flags);
  comm->reset();
  zero::rt::finalizeMpi();
  return code;
}
