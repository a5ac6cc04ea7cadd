//===- Gpt2Flags.cpp - gpt2_train's command line --------------------------===//

#include "Gpt2Flags.h"

#include "zero/passes/PipelineOptions.h"
#include "zero/runtime/InstallPaths.h"
#include "zero/support/ByteSize.h"
#include "zero/support/ZeroStage.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>

#ifndef ZERO_GPT2_CORPUS
#define ZERO_GPT2_CORPUS "examples/gpt2/data/coriolanus.txt"
#endif

namespace gpt2 {

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

/// The shipped corpus: in the source tree this was built from, or, in the
/// release bundle, in share/zero beside the program's bin/.
static std::string defaultCorpus() {
  if (std::ifstream(ZERO_GPT2_CORPUS).good())
    return ZERO_GPT2_CORPUS;
  if (absl::StatusOr<std::string> root = zero::rt::installRoot(); root.ok()) {
    std::string bundled =
        *root + "/share/zero/examples/gpt2/data/coriolanus.txt";
    if (std::ifstream(bundled).good())
      return bundled;
  }
  return ZERO_GPT2_CORPUS;
}

//===----------------------------------------------------------------------===//
// Flags
//===----------------------------------------------------------------------===//

const char *kUsage =
    "usage: gpt2_train [--size tiny|mini|124M|355M] [--stage 0..3] [-n N]\n"
    "                  [--mesh RxS [--mesh-scheme hybrid|full] [--hpz]\n"
    "                   [--qwz] [--qgz] [--qwz-bits 8|4] [--qgz-bits 4|8]\n"
    "                   [--quantize-block N]]\n"
    "                  [--precision f32|bf16|f16] [--steps N] [--batch B]\n"
    "                  [--accumulate K]\n"
    "                  [--offload none|optimizer|optimizer+params|auto]\n"
    "                  [--device-memory-budget BYTES]\n"
    "                  [--prefetch-bytes BYTES] [--max-live-gathered-bytes "
    "BYTES]\n"
    "                  [--machine PRESET|FILE.json]\n"
    "                  [--seq T] [--lr LR] [--seed S] [--clip MAX_NORM]\n"
    "                  [--checkpoint-activations] [--deterministic]\n"
    "                  [--check-memory]\n"
    "                  [--plan-only] [--log-every K] [--losses-out FILE]\n"
    "                  [--data FILE] [--save-step FILE.mlir]\n"
    "                  [--checkpoint-dir D [--checkpoint-every S] [--keep K]\n"
    "                   [--checkpoint-async [--checkpoint-write-mibps M]]]\n"
    "                  [--resume D]\n"
    "                  [--backend cpu|cuda|cuda-host-staged] [--cuda-graph]\n"
    "                  [--attention auto|fused|separate]\n"
    "                  [--peak-tflops T]\n"
    "                  [--profile TRACE.json] [--profile-table TABLE.md|.json\n"
    "                   [--profile-machine PRESET|FILE.json]]\n"
    "\n"
    "Trains GPT-2 on byte-level tokens of a text corpus with ZeRO stage\n"
    "0-3 on N ranks (docs/frontend.md): CPU ranks by default, or GPU ranks\n"
    "with --backend cuda (a GPU per rank, NCCL) or cuda-host-staged (MPI\n"
    "collectives through host memory). --batch is the global batch (split\n"
    "over the ranks), so runs at any N and stage see the same data; with\n"
    "--accumulate K each optimizer step adds the gradients of K such\n"
    "micro-batches (K x B sequences).\n"
    "--offload puts the optimizer state (and at stage 3 the parameter\n"
    "shards) in host memory; auto picks the least offload that fits\n"
    "--device-memory-budget (e.g. 80GiB) per rank.\n"
    "At stage 3, --prefetch-bytes issues parameter gathers that far ahead\n"
    "of their use, keeping at most --max-live-gathered-bytes gathered;\n"
    "--machine (h100-nvlink-8, h200-nvlink-8, h100-nodes-ib400 for a\n"
    "--mesh of 8-GPU nodes, cpu or a JSON machine file; h100-nvlink-8 by\n"
    "default with --backend cuda) issues each just early\n"
    "enough to be hidden behind the compute on that machine, and at\n"
    "stages 1-2 runs the updates inside the backward.\n"
    "--attention fused computes each block's attention as one op\n"
    "(FlashAttention's algorithm; cuDNN's on GPUs), separate as matmuls,\n"
    "mask and softmax; auto (the default) fuses it on GPUs where cuDNN\n"
    "serves it and says which it chose.\n"
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
  flags.data = defaultCorpus();
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
    if (flag == "--checkpoint-async") {
      flags.checkpointAsync = true;
      continue;
    }
    if (flag == "--check-memory") {
      flags.checkMemory = true;
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
    if (flag == "--hpz") {
      flags.hpz = true;
      continue;
    }
    if (flag == "--qwz") {
      flags.qwz = true;
      continue;
    }
    if (flag == "--qgz") {
      flags.qgz = true;
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
    static const char *const kValued[] = {"--size",
                                          "--stage",
                                          "-n",
                                          "--ranks",
                                          "--mesh",
                                          "--mesh-scheme",
                                          "--quantize-block",
                                          "--qwz-bits",
                                          "--qgz-bits",
                                          "--precision",
                                          "--steps",
                                          "--batch",
                                          "--seq",
                                          "--lr",
                                          "--seed",
                                          "--clip",
                                          "--log-every",
                                          "--losses-out",
                                          "--profile",
                                          "--profile-table",
                                          "--profile-machine",
                                          "--data",
                                          "--save-step",
                                          "--backend",
                                          "--peak-tflops",
                                          "--accumulate",
                                          "--offload",
                                          "--device-memory-budget",
                                          "--prefetch-bytes",
                                          "--max-live-gathered-bytes",
                                          "--machine",
                                          "--checkpoint-dir",
                                          "--checkpoint-every",
                                          "--keep",
                                          "--checkpoint-write-mibps",
                                          "--resume",
                                          "--attention"};
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
      if (!zero::isZeroStage(flags.stage, /*plainAllowed=*/true))
        usage("--" + zero::zeroStageRangeError(flags.stage, true));
    } else if (flag == "-n" || flag == "--ranks") {
      flags.ranks = static_cast<int>(parseInt(flag, value));
      if (flags.ranks < 1)
        usage(absl::StrCat(flag, " must be at least 1, got ", valueText));
    } else if (flag == "--mesh") {
      std::vector<std::string> extents = absl::StrSplit(valueText, 'x');
      flags.mesh.clear();
      for (const std::string &extent : extents) {
        int64_t number = 0;
        if (!absl::SimpleAtoi(extent, &number) || number < 1)
          usage(absl::StrCat("--mesh must be nodes x ranks per node such as "
                             "2x4, got '",
                             valueText, "'"));
        flags.mesh.push_back(number);
      }
      if (flags.mesh.size() != 2)
        usage(absl::StrCat("--mesh must be nodes x ranks per node such as "
                           "2x4, got '",
                           valueText, "'"));
    } else if (flag == "--mesh-scheme") {
      std::optional<zero::MeshScheme> scheme =
          zero::symbolizeMeshScheme(valueText);
      if (!scheme)
        usage(absl::StrCat("--mesh-scheme must be hybrid or full, got '",
                           valueText, "'"));
      flags.meshScheme = *scheme;
    } else if (flag == "--qwz-bits" || flag == "--qgz-bits") {
      long bits = parseInt(flag, value);
      if (bits != 8 && bits != 4)
        usage(absl::StrCat(flag, " must be 8 (int8) or 4 (int4), got ",
                           valueText));
      (flag == "--qwz-bits" ? flags.qwzBits : flags.qgzBits) = bits;
    } else if (flag == "--quantize-block") {
      flags.quantizeBlock = parseInt(flag, value);
      if (flags.quantizeBlock < 1)
        usage(absl::StrCat("--quantize-block must be at least 1, got ",
                           valueText));
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
    } else if (flag == "--checkpoint-dir") {
      flags.checkpointDir = valueText;
    } else if (flag == "--checkpoint-every" || flag == "--keep") {
      long count = parseInt(flag, value);
      if (count < 0)
        usage(absl::StrCat(flag, " must not be negative, got ", valueText));
      (flag == "--keep" ? flags.keep : flags.checkpointEvery) = count;
    } else if (flag == "--checkpoint-write-mibps") {
      flags.checkpointWriteMibps = parseFloat(flag, value);
      if (!(flags.checkpointWriteMibps >= 0))
        usage(absl::StrCat("--checkpoint-write-mibps must be 0 or more, got ",
                           valueText));
    } else if (flag == "--resume") {
      flags.resume = valueText;
    } else if (flag == "--offload") {
      std::optional<GraphConfig::Offload> choice =
          zero::symbolizeOffloadPlacement(valueText);
      if (!choice)
        usage(absl::StrCat("--offload must be none, optimizer, "
                           "optimizer+params or auto, got '",
                           valueText, "'"));
      flags.offload = *choice;
    } else if (flag == "--device-memory-budget") {
      std::optional<int64_t> bytes = zero::parseByteSize(valueText);
      if (!bytes)
        usage(absl::StrCat("--device-memory-budget must be a number of bytes "
                           "(80GiB, 512MB, 1000000), got '",
                           valueText, "'"));
      flags.deviceMemoryBudget = *bytes;
    } else if (flag == "--prefetch-bytes" ||
               flag == "--max-live-gathered-bytes") {
      std::optional<int64_t> bytes = zero::parseByteSize(valueText);
      if (!bytes)
        usage(absl::StrCat(flag,
                           " must be a number of bytes (64MiB, 1e6, 0), got '",
                           valueText, "'"));
      (flag == "--prefetch-bytes" ? flags.prefetchBytes
                                  : flags.maxLiveGatheredBytes) = *bytes;
    } else if (flag == "--machine") {
      flags.machine = valueText;
    } else if (flag == "--accumulate") {
      flags.accumulate = parseInt(flag, value);
      if (flags.accumulate < 1)
        usage(absl::StrCat("--accumulate must be at least 1, got ", valueText));
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
    } else if (flag == "--profile") {
      flags.profile = valueText;
    } else if (flag == "--profile-table") {
      flags.profileTable = valueText;
    } else if (flag == "--profile-machine") {
      flags.profileMachine = valueText;
    } else if (flag == "--data") {
      flags.data = valueText;
    } else if (flag == "--save-step") {
      flags.saveStep = valueText;
    } else if (flag == "--backend") {
      flags.backend = valueText;
    } else if (flag == "--attention") {
      if (valueText != "auto" && valueText != "fused" &&
          valueText != "separate")
        usage(absl::StrCat("--attention must be auto, fused or separate, got '",
                           valueText, "'"));
      flags.attention = valueText;
    } else if (flag == "--peak-tflops") {
      flags.peakTflops = parseFloat(flag, value);
      if (!(flags.peakTflops > 0))
        usage(absl::StrCat("--peak-tflops must be positive, got ", valueText));
    }
  }
  if ((flags.checkpointEvery || flags.keep) && flags.checkpointDir.empty())
    usage("--checkpoint-every and --keep need --checkpoint-dir");
  if (flags.checkpointAsync && flags.checkpointDir.empty())
    usage("--checkpoint-async needs --checkpoint-dir");
  if (flags.checkpointWriteMibps > 0 && !flags.checkpointAsync)
    usage("--checkpoint-write-mibps paces asynchronous saves; give "
          "--checkpoint-async");
  if (flags.batch < 0)
    flags.batch = flags.size->batch;
  if (flags.seq < 0)
    flags.seq = flags.size->seq;
  if (flags.lr < 0)
    flags.lr = flags.size->lr;
  if (flags.logEvery < 0)
    flags.logEvery = flags.steps <= 20 ? 1 : 10;
  if (!flags.mesh.empty()) {
    int64_t ranks = flags.mesh[0] * flags.mesh[1];
    if (flags.ranks > 0 && flags.ranks != ranks)
      usage(absl::StrCat("-n ", flags.ranks, " but --mesh ", flags.mesh[0], "x",
                         flags.mesh[1], " has ", ranks, " ranks"));
    // The mesh says how many ranks there are: outside mpirun how many to
    // launch, under it what the job's size must be (checked at start).
    if (flags.ranks == 0)
      flags.ranks = static_cast<int>(ranks);
    // The one-node presets describe one axis of ranks; a mesh needs a
    // machine with a link per axis (a preset such as h100-nodes-ib400, or
    // a file, which the compiler checks).
    for (const char *oneAxis : {"h100-nvlink-8", "h200-nvlink-8", "cpu"})
      if (flags.machine == oneAxis)
        usage(absl::StrCat("--machine ", oneAxis,
                           " describes one axis of ranks; a --mesh needs a "
                           "machine with a link per axis, such as "
                           "h100-nodes-ib400"));
  }
  // The rules are the pipeline's (PipelineOptions.h), worded for flags.
  zero::ZeroPipelineOptions sharding;
  sharding.stage = flags.stage;
  sharding.meshScheme = flags.meshScheme;
  sharding.hpz = flags.hpz;
  sharding.qwz = flags.qwz;
  sharding.qgz = flags.qgz;
  sharding.qwzBits = flags.qwzBits;
  sharding.qgzBits = flags.qgzBits;
  sharding.quantizeBlock = flags.quantizeBlock;
  if (std::optional<std::string> error = zero::findZeroOptionsError(
          sharding, !flags.mesh.empty(), zero::OptionSpelling::commandLine()))
    usage(*error);
  if (!flags.profileMachine.empty() && flags.profileTable.empty())
    usage("--profile-machine is the machine of --profile-table; give "
          "--profile-table too");
  if (flags.machine.empty() && flags.mesh.empty())
    flags.machine = zero::rt::getDefaultMachine(flags.backend);
  return flags;
}

/// The backend flags as runtime/backends takes them: the checks and the
/// messages are zero-run's (test/gpt2/errors.test, backend-no-gpu.test).
zero::rt::BackendChoice backendChoice(const Flags &flags) {
  zero::rt::BackendChoice choice;
  choice.name = flags.backend;
  choice.cudaGraph = flags.cudaGraph;
  choice.profile = !flags.profile.empty() || !flags.profileTable.empty();
  choice.deterministic = flags.deterministic;
  choice.program = "gpt2_train";
  return choice;
}

void resolveAttention(Flags &flags) {
  if (flags.attention != "auto") {
    flags.fusedAttention = flags.attention == "fused";
    flags.attentionReason = "--attention " + flags.attention;
    return;
  }
  int64_t headDim = flags.size->dim / flags.size->heads;
  std::string why;
  if (flags.backend == "cpu")
    why = "the CPU backend";
  else if (flags.precision == DType::f32)
    why = "f32 (cuDNN's fused attention takes bf16 and f16)";
  else if (headDim % 8 != 0 || headDim > 128)
    why = absl::StrCat("head dimension ", headDim,
                       " (cuDNN takes multiples of 8 up to 128)");
  else if (absl::Status cudnn =
               zero::rt::cudnnAttentionStatus(backendChoice(flags));
           !cudnn.ok())
    why = std::string(cudnn.message());
  flags.fusedAttention = why.empty();
  flags.attentionReason =
      why.empty() ? "auto: cuDNN's fused attention serves it"
                  : absl::StrCat("auto: separate ops, not fused: ", why);
}

} // namespace gpt2
