//===- Gpt2Flags.h - gpt2_train's command line --------------------*- C++
//-*-===//
//
// The flags of examples/gpt2/gpt2_train (docs/frontend.md documents each):
// parsed and checked here, so that the trainer reads only valid values.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_EXAMPLES_GPT2_GPT2FLAGS_H
#define ZERO_EXAMPLES_GPT2_GPT2FLAGS_H

#include "zero/frontend/Graph.h"
#include "zero/runtime/BackendSelection.h"
#include "zero/runtime/DType.h"

#include <cstdint>
#include <string>

namespace gpt2 {

using ::zero::frontend::GraphConfig;
using ::zero::rt::DType;

/// A named model size: GPT-2's shapes, or small ones for CPU runs and tests.
struct Size {
  const char *name;
  int64_t layers, dim, heads, vocab, seq;
  int64_t batch; // default global batch
  double lr;     // default peak learning rate
  const char *what;
};

/// The named sizes, smallest first; --size picks one.
extern const Size kSizes[4];

struct Flags {
  const Size *size = &kSizes[0];
  int stage = 3;
  int ranks = 0; // 0: the job's (1 outside mpirun)
  /// --mesh RxS: R nodes of S ranks (hybrid sharding at stages 1-3);
  /// empty: one axis.
  std::vector<int64_t> mesh;
  /// --mesh-scheme hybrid|full and --hpz (zero-shard's options).
  zero::MeshScheme meshScheme = zero::MeshScheme::hybrid;
  bool hpz = false;
  /// --qwz, --qgz, --qwz-bits N, --qgz-bits N and --quantize-block N
  /// (ZeRO++'s quantized communication).
  bool qwz = false;
  bool qgz = false;
  long qwzBits = 8;
  long qgzBits = 4;
  long quantizeBlock = 4096;
  DType precision = DType::f32;
  long steps = 200;
  long batch = -1;     // global, per micro-batch; -1: the size's default
  long accumulate = 1; // micro-batches per optimizer step
  /// --offload, --device-memory-budget: zero-offload's placement.
  GraphConfig::Offload offload = GraphConfig::Offload::none;
  int64_t deviceMemoryBudget = 0;
  /// --prefetch-bytes, --max-live-gathered-bytes: zero-schedule's window
  /// and bound (stage 3).
  int64_t prefetchBytes = 0;
  int64_t maxLiveGatheredBytes = 0;
  /// --machine: what zero-schedule hides the gathers on (empty: none;
  /// h100-nvlink-8 with --backend cuda).
  std::string machine;
  long seq = -1;  // -1: the size's context
  double lr = -1; // -1: the size's default
  unsigned long seed = 1;
  double clip = 0; // 0: no clipping
  bool checkpoint = false;
  /// --check-memory: hold the arenas' measured writes against the plan
  /// (as zero-run's flag of the same name).
  bool checkMemory = false;
  bool deterministic = false;
  bool planOnly = false;
  long logEvery = -1; // -1: automatic
  std::string lossesOut;
  /// The shipped corpus (see defaultCorpus in Gpt2Flags.cpp).
  std::string data;
  std::string saveStep;
  /// Checkpoints (as zero-run's flags of the same names).
  std::string checkpointDir;
  long checkpointEvery = 0;
  long keep = 0;
  /// --checkpoint-async: write each save while the next steps train;
  /// --checkpoint-write-mibps M: at most M MiB/s (0: the disk's speed).
  bool checkpointAsync = false;
  double checkpointWriteMibps = 0;
  std::string resume;
  /// --backend, --cuda-graph (checked by runtime/backends, as in zero-run).
  std::string backend = "cpu";
  /// --attention auto|fused|separate: each block's attention as one
  /// train.attention, or as its matmuls, mask and softmax; auto fuses it on
  /// a CUDA backend where cuDNN serves it (resolveAttention).
  std::string attention = "auto";
  /// What resolveAttention chose, and why (said once at start-up).
  bool fusedAttention = false;
  std::string attentionReason;
  bool cudaGraph = false;
  /// --peak-tflops: the per-GPU peak MFU is measured against; 0: from the
  /// device name (H100, H200), or no MFU.
  double peakTflops = 0;
  /// --profile, --profile-table, --profile-machine: as zero-run's flags of
  /// the same names (docs/runtime.md, "Profiles").
  std::string profile;
  std::string profileTable;
  std::string profileMachine;
};

/// Parses and checks the command line; a bad one ends the program with the
/// usage and exit status 2.
Flags parseFlags(int argc, char **argv);

/// Prints `message` and the usage, and exits with status 2.
[[noreturn]] void usage(const std::string &message);

/// The backend flags as runtime/backends takes them.
zero::rt::BackendChoice backendChoice(const Flags &flags);

/// Sets fusedAttention and attentionReason from --attention: `auto` fuses
/// where cuDNN's fused attention will serve every block (a CUDA backend
/// where libcudnn.so.9 loads, 16-bit precision, a head dimension that is a
/// multiple of 8 up to 128), since the built-in CUDA kernel is slower than
/// the separate ops; elsewhere the separate ops.
void resolveAttention(Flags &flags);

} // namespace gpt2

#endif // ZERO_EXAMPLES_GPT2_GPT2FLAGS_H
