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

#include "zero/frontend/CompiledGraph.h"
#include "zero/frontend/Graph.h"
#include "zero/frontend/Layers.h"
#include "zero/runtime/BackendSelection.h"
#include "zero/runtime/Communicator.h"
#include "zero/runtime/CpuKernels.h"
#include "zero/runtime/TrainingState.h"

#include "absl/strings/str_cat.h"

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
#include <unistd.h>
#include <vector>

using namespace zero::frontend;

#ifndef ZERO_GPT2_CORPUS
#define ZERO_GPT2_CORPUS "examples/gpt2/data/coriolanus.txt"
#endif

namespace {

/// The shipped corpus: in the source tree this was built from, or, in the
/// release bundle, in share/zero beside the program's bin/.
std::string defaultCorpus() {
  if (std::ifstream(ZERO_GPT2_CORPUS).good())
    return ZERO_GPT2_CORPUS;
  char self[4096];
  ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (length > 0) {
    std::string bin(self, length);
    bin = bin.substr(0, bin.find_last_of('/'));
    std::string bundled = bin.substr(0, bin.find_last_of('/')) +
                          "/share/zero/examples/gpt2/data/coriolanus.txt";
    if (std::ifstream(bundled).good())
      return bundled;
  }
  return ZERO_GPT2_CORPUS;
}

//===----------------------------------------------------------------------===//
// Flags
//===----------------------------------------------------------------------===//

/// A named model size: GPT-2's shapes, or small ones for CPU runs and tests.
struct Size {
  const char *name;
  int64_t layers, dim, heads, vocab, seq;
  int64_t batch; // default global batch
  double lr;     // default peak learning rate
  const char *what;
};

const Size kSizes[] = {
    {"tiny", 2, 32, 4, 256, 16, 8, 3e-3,
     "2 layers, width 32, 4 heads, byte vocabulary (the tests' model)"},
    {"mini", 4, 64, 4, 256, 64, 8, 2e-3,
     "4 layers, width 64, 4 heads, byte vocabulary (the demo's model)"},
    {"124M", 12, 768, 12, 50257, 1024, 8, 6e-4,
     "GPT-2 small: 12 layers, width 768, 12 heads, vocabulary 50257"},
    {"355M", 24, 1024, 16, 50257, 1024, 8, 3e-4,
     "GPT-2 medium: 24 layers, width 1024, 16 heads, vocabulary 50257"},
};

struct Flags {
  const Size *size = &kSizes[0];
  int stage = 3;
  int ranks = 0; // 0: the job's (1 outside mpirun)
  DType precision = DType::f32;
  long steps = 200;
  long batch = -1; // global; -1: the size's default
  long seq = -1;   // -1: the size's context
  double lr = -1;  // -1: the size's default
  unsigned long seed = 1;
  double clip = 0; // 0: no clipping
  bool checkpoint = false;
  bool deterministic = false;
  bool planOnly = false;
  long logEvery = -1; // -1: automatic
  std::string lossesOut;
  std::string data = defaultCorpus();
  std::string saveStep;
  /// --backend, --cuda-graph (checked by runtime/backends, as in zero-run).
  std::string backend = "cpu";
  bool cudaGraph = false;
  /// --peak-tflops: the per-GPU peak MFU is measured against; 0: from the
  /// device name (H100, H200), or no MFU.
  double peakTflops = 0;
};

const char *kUsage =
    "usage: gpt2_train [--size tiny|mini|124M|355M] [--stage 0..3] [-n N]\n"
    "                  [--precision f32|bf16|f16] [--steps N] [--batch B]\n"
    "                  [--seq T] [--lr LR] [--seed S] [--clip MAX_NORM]\n"
    "                  [--checkpoint-activations] [--deterministic]\n"
    "                  [--plan-only] [--log-every K] [--losses-out FILE]\n"
    "                  [--data FILE] [--save-step FILE.mlir]\n"
    "                  [--backend cpu|cuda|cuda-host-staged] [--cuda-graph]\n"
    "                  [--peak-tflops T]\n"
    "\n"
    "Trains GPT-2 on byte-level tokens of a text corpus with ZeRO stage\n"
    "0-3 on N ranks (docs/frontend.md): CPU ranks by default, or GPU ranks\n"
    "with --backend cuda (a GPU per rank, NCCL) or cuda-host-staged (MPI\n"
    "collectives through host memory). --batch is the global batch (split\n"
    "over the ranks), so runs at any N and stage see the same data.\n"
    "Sizes:\n";

[[noreturn]] void usage(const std::string &message) {
  std::fprintf(stderr, "gpt2_train: %s\n%s", message.c_str(), kUsage);
  for (const Size &size : kSizes)
    std::fprintf(stderr, "  %-5s %s\n", size.name, size.what);
  std::exit(2);
}

long parseInt(const std::string &flag, const char *value) {
  char *end = nullptr;
  errno = 0;
  long result = std::strtol(value, &end, 10);
  if (*value == '\0' || *end != '\0' || errno)
    usage(absl::StrCat(flag, " takes an integer, got '", value, "'"));
  return result;
}

double parseFloat(const std::string &flag, const char *value) {
  char *end = nullptr;
  errno = 0;
  double result = std::strtod(value, &end);
  if (*value == '\0' || *end != '\0' || errno || !std::isfinite(result))
    usage(absl::StrCat(flag, " takes a number, got '", value, "'"));
  return result;
}

Flags parseFlags(int argc, char **argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      std::printf("%s", kUsage);
      for (const Size &size : kSizes)
        std::printf("  %-5s %s\n", size.name, size.what);
      std::exit(0);
    }
    // Switches.
    if (flag == "--checkpoint-activations") {
      flags.checkpoint = true;
      continue;
    }
    if (flag == "--deterministic") {
      flags.deterministic = true;
      continue;
    }
    if (flag == "--plan-only") {
      flags.planOnly = true;
      continue;
    }
    if (flag == "--cuda-graph") {
      flags.cudaGraph = true;
      continue;
    }
    // Flags with a value: "--flag value" or "--flag=value".
    std::string inlineValue;
    bool hasInline = false;
    if (size_t eq = flag.find('=');
        flag.rfind("--", 0) == 0 && eq != flag.npos) {
      inlineValue = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      hasInline = true;
    }
    static const char *const kValued[] = {
        "--size",    "--stage",      "-n",           "--ranks", "--precision",
        "--steps",   "--batch",      "--seq",        "--lr",    "--seed",
        "--clip",    "--log-every",  "--losses-out", "--data",  "--save-step",
        "--backend", "--peak-tflops"};
    if (std::find_if(std::begin(kValued), std::end(kValued),
                     [&](const char *known) { return flag == known; }) ==
        std::end(kValued))
      usage(absl::StrCat("unknown flag ", flag));
    if (!hasInline && i + 1 >= argc)
      usage(absl::StrCat("missing value after ", flag));
    std::string valueText = hasInline ? inlineValue : argv[++i];
    const char *value = valueText.c_str();
    if (flag == "--size") {
      flags.size = nullptr;
      for (const Size &size : kSizes)
        if (valueText == size.name)
          flags.size = &size;
      if (!flags.size)
        usage(absl::StrCat("--size must be tiny, mini, 124M or 355M, got '",
                           valueText, "'"));
    } else if (flag == "--stage") {
      flags.stage = static_cast<int>(parseInt(flag, value));
      if (flags.stage < 0 || flags.stage > 3)
        usage(absl::StrCat("--stage must be 0, 1, 2 or 3, got ", valueText));
    } else if (flag == "-n" || flag == "--ranks") {
      flags.ranks = static_cast<int>(parseInt(flag, value));
      if (flags.ranks < 1)
        usage(absl::StrCat(flag, " must be at least 1, got ", valueText));
    } else if (flag == "--precision") {
      if (valueText == "f32")
        flags.precision = DType::f32;
      else if (valueText == "bf16")
        flags.precision = DType::bf16;
      else if (valueText == "f16")
        flags.precision = DType::f16;
      else
        usage(absl::StrCat("--precision must be f32, bf16 or f16, got '",
                           valueText, "'"));
    } else if (flag == "--steps") {
      flags.steps = parseInt(flag, value);
      if (flags.steps < 1)
        usage(absl::StrCat("--steps must be at least 1, got ", valueText));
    } else if (flag == "--batch") {
      flags.batch = parseInt(flag, value);
      if (flags.batch < 1)
        usage(absl::StrCat("--batch must be at least 1, got ", valueText));
    } else if (flag == "--seq") {
      flags.seq = parseInt(flag, value);
      if (flags.seq < 1)
        usage(absl::StrCat("--seq must be at least 1, got ", valueText));
    } else if (flag == "--lr") {
      flags.lr = parseFloat(flag, value);
      if (!(flags.lr > 0))
        usage(absl::StrCat("--lr must be positive, got ", valueText));
    } else if (flag == "--seed") {
      flags.seed = static_cast<unsigned long>(parseInt(flag, value));
    } else if (flag == "--clip") {
      flags.clip = parseFloat(flag, value);
      if (!(flags.clip > 0))
        usage(absl::StrCat("--clip (the maximum global gradient norm) must "
                           "be positive, got ",
                           valueText));
    } else if (flag == "--log-every") {
      flags.logEvery = parseInt(flag, value);
      if (flags.logEvery < 0)
        usage(
            absl::StrCat("--log-every must not be negative, got ", valueText));
    } else if (flag == "--losses-out") {
      flags.lossesOut = valueText;
    } else if (flag == "--data") {
      flags.data = valueText;
    } else if (flag == "--save-step") {
      flags.saveStep = valueText;
    } else if (flag == "--backend") {
      flags.backend = valueText;
    } else if (flag == "--peak-tflops") {
      flags.peakTflops = parseFloat(flag, value);
      if (!(flags.peakTflops > 0))
        usage(absl::StrCat("--peak-tflops must be positive, got ", valueText));
    }
  }
  if (flags.batch < 0)
    flags.batch = flags.size->batch;
  if (flags.seq < 0)
    flags.seq = flags.size->seq;
  if (flags.lr < 0)
    flags.lr = flags.size->lr;
  if (flags.logEvery < 0)
    flags.logEvery = flags.steps <= 20 ? 1 : 10;
  return flags;
}

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

/// The backend flags as runtime/backends takes them: the checks and the
/// messages are zero-run's (test/gpt2/errors.test, backend-no-gpu.test).
zero::rt::BackendChoice backendChoice(const Flags &flags) {
  zero::rt::BackendChoice choice;
  choice.name = flags.backend;
  choice.cudaGraph = flags.cudaGraph;
  choice.deterministic = flags.deterministic;
  choice.program = "gpt2_train";
  return choice;
}

//===----------------------------------------------------------------------===//
// The model and its data
//===----------------------------------------------------------------------===//

GPT2Config modelConfig(const Flags &flags) {
  GPT2Config config;
  config.layers = flags.size->layers;
  config.vocab = flags.size->vocab;
  config.seq = flags.seq;
  config.dim = flags.size->dim;
  config.heads = flags.size->heads;
  config.checkpoint = flags.checkpoint;
  return config;
}

int64_t parameterCount(const GPT2Config &c) {
  int64_t perBlock = 12 * c.dim * c.dim + 13 * c.dim;
  return c.vocab * c.dim + c.seq * c.dim + c.layers * perBlock + 2 * c.dim;
}

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
  graph.config().activation_checkpointing(flags.checkpoint);
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

  absl::Status fill(int64_t step) override {
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
      uint64_t global = static_cast<uint64_t>(comm.rank() * local + row);
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
      if (absl::Status status =
              executor.writeBuffer(buffers[i], host[i].data());
          !status.ok())
        return status;
    return absl::OkStatus();
  }
  int64_t globalBatch() const override { return globalRows; }
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

//===----------------------------------------------------------------------===//
// Reporting
//===----------------------------------------------------------------------===//

std::string bytes(double count) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (std::fabs(count) >= 1024 && unit < 4) {
    count /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), unit ? "%.2f %s" : "%.0f %s", count,
                units[unit]);
  return text;
}

std::string grouped(int64_t value) {
  std::string digits = std::to_string(value);
  for (int at = static_cast<int>(digits.size()) - 3; at > 0; at -= 3)
    digits.insert(at, ",");
  return digits;
}

void printPlan(const Flags &flags, const CompiledGraph &compiled,
               int64_t localBatch, const std::string &dataLine) {
  GPT2Config config = modelConfig(flags);
  int64_t params = parameterCount(config);
  const MemoryReport &r = compiled.report();
  std::printf("gpt2 %s: %lld layers, width %lld, %lld heads, context %lld, "
              "vocabulary %lld: %s parameters\n",
              flags.size->name, (long long)config.layers, (long long)config.dim,
              (long long)config.heads, (long long)config.seq,
              (long long)config.vocab, grouped(params).c_str());
  std::string clip =
      flags.clip > 0 ? absl::StrCat("clip_grad_norm ", flags.clip) : "no clip";
  std::string precision(dtypeName(flags.precision));
  // The builder turns dynamic loss scaling on for f16.
  if (flags.precision == DType::f16)
    absl::StrAppend(&precision, " with dynamic loss scaling from ",
                    LossScaling::dynamic().initialScale);
  std::printf("ZeRO stage %d on %d rank(s), %s, AdamW lr %g, %s%s; global "
              "batch %ld x %ld tokens (%lld per rank)\n",
              r.stage, r.ranks, precision.c_str(), flags.lr, clip.c_str(),
              flags.checkpoint ? ", activation checkpointing" : "", flags.batch,
              flags.seq, (long long)localBatch);
  std::printf("plan, per rank: parameters %s, gradients %s, optimizer "
              "slots %s, fp32 masters %s; model state %s, persistent %s, "
              "peak transient %s\n",
              bytes(r.parameters).c_str(), bytes(r.gradients).c_str(),
              bytes(r.slots).c_str(), bytes(r.masters).c_str(),
              bytes(r.modelState).c_str(), bytes(r.persistent).c_str(),
              bytes(r.peakTransient).c_str());
  std::string sends;
  double total = 0;
  for (const auto &[kind, traffic] : r.traffic) {
    if (traffic.count == 0)
      continue;
    absl::StrAppend(&sends, sends.empty() ? "" : ", ", kind, " ", traffic.count,
                    "x ", bytes(traffic.bytes), " (sends ",
                    bytes(traffic.sentBytesPerRank), ")");
    total += traffic.sentBytesPerRank;
  }
  std::printf("plan, per rank and step: %s%s\n",
              sends.empty() ? "no collectives" : sends.c_str(),
              sends.empty()
                  ? ""
                  : absl::StrCat("; sends ", bytes(total), " in all").c_str());
  if (!dataLine.empty())
    std::printf("data: %s\n", dataLine.c_str());
  std::fflush(stdout);
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
  double tokensPerSecond = static_cast<double>(flags.batch * flags.seq) / step;
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
  int local = comm.size();
  if (const char *value = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE"))
    local = std::max(1, std::atoi(value));
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  zero::rt::setCpuKernelThreads(std::max(1, cores / std::max(1, local)));

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
  bool onGpu = executionBackend.name() != "cpu";
  auto batches =
      CorpusBatches::create((*trainer)->executor(), flags.data, *text,
                            flags.seq, flags.batch, flags.seed);
  if (!batches.ok())
    fail(&comm, batches.status());
  std::string dataLine = (*batches)->describe();
  (*trainer)->useBatches(std::move(*batches));
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

  comm.resetTraffic();
  std::map<std::string, zero::rt::TrafficStats> firstStepTraffic;
  std::vector<float> losses;
  // Each step's wall time; step() reads the loss back, which waits for the
  // device, so on a GPU this is the step's time too.
  std::vector<double> stepSeconds;
  auto start = std::chrono::steady_clock::now();
  auto lastLog = start;
  long lastLogStep = 0;
  for (long step = 1; step <= flags.steps; ++step) {
    auto stepStart = std::chrono::steady_clock::now();
    absl::StatusOr<float> loss = (*trainer)->step();
    if (!loss.ok())
      fail(&comm, loss.status());
    stepSeconds.push_back(std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - stepStart)
                              .count());
    if (step == 1)
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
      double tokensPerSecond =
          seconds > 0 ? stepsSince * flags.batch * flags.seq / seconds : 0;
      std::printf("step %4ld/%ld  loss %.4f  (%.1f ms/step, %.0f tokens/s)\n",
                  step, flags.steps, *loss, 1e3 * seconds / stepsSince,
                  tokensPerSecond);
      std::fflush(stdout);
      lastLog = now;
      lastLogStep = step;
    }
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (lossesFile)
    std::fclose(lossesFile);
  if (leader) {
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
        "done: %ld steps in %.2f s (%.0f tokens/s); loss %.4f -> %.4f (mean "
        "of the first and last %zu steps)\n",
        flags.steps, seconds, flags.steps * flags.batch * flags.seq / seconds,
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
