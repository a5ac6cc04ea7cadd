//===- PipelineOptions.h - The rules of the ZeRO options --------*- C++ -*-===//
//
// The one owner of what makes a set of zero-pipeline options valid. The
// zero-pipeline pass, the builder's GraphConfig::validate, zero-run and
// gpt2_train check their options here, before anything is compiled, and
// word the refusal in the terms their users wrote the options in.
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_PASSES_PIPELINEOPTIONS_H
#define ZERO_PASSES_PIPELINEOPTIONS_H

#include "zero/passes/Passes.h"
#include "zero/support/ZeroStage.h"

#include <functional>
#include <optional>
#include <string>

namespace zero {

/// How a front end names the options in its refusals.
struct OptionSpelling {
  /// An option's name as its user writes it, from the pass option's
  /// (`qgz-bits`): `--qgz-bits` on a command line, `qgz bits` in prose.
  std::function<std::string(llvm::StringRef option)> name;
  /// Between an option and its value: `--mesh-scheme full`,
  /// `mesh-scheme=full`.
  std::string valueSeparator;
  /// What asks for stage 3: `--stage 3`, `enable_zero(true, 3)`, `stage=3`.
  std::string stage3;
  /// What gives a two-level mesh: `give --mesh RxS`, ...
  std::string giveMesh;
  /// Joins two settings a rule needs: `--stage 3 --mesh-scheme full`,
  /// `stage=3 and mesh-scheme=full`.
  std::string both;

  /// zero-run's and gpt2_train's flags.
  static OptionSpelling commandLine();
  /// The builder's GraphConfig and the Python Config.
  static OptionSpelling builder();
  /// zero-pipeline's own options.
  static OptionSpelling passOptions();
};

/// The first rule `options` breaks, in `spelling`'s terms, or nullopt. The
/// rules: the stage is 0-3; no size, distance or budget is negative; the
/// mesh scheme, hpz, qwz and qgz need a two-level mesh (`onMesh`); qwz and
/// qgz need mesh scheme full, qwz and hpz stage 3 too; codes are 8 or 4
/// bits; a quantization block holds at least one element. `Options` is
/// ZeroPipelineOptions, or the zero-pipeline pass holding them.
template <typename Options>
std::optional<std::string>
findZeroOptionsError(const Options &o, bool onMesh,
                     const OptionSpelling &spelling) {
  auto name = [&](llvm::StringRef option) { return spelling.name(option); };
  if (!isZeroStage(o.stage, /*plainAllowed=*/true))
    return zeroStageRangeError(static_cast<int64_t>(o.stage),
                               /*plainAllowed=*/true);
  for (auto [option, value] : {
           std::pair<llvm::StringRef, int64_t>{"min-shard-elements",
                                               o.minShardElements},
           {"reduce-bucket-bytes", o.reduceBucketBytes},
           {"allgather-bucket-bytes", o.allgatherBucketBytes},
           {"allgather-across-uses-bytes", o.allgatherAcrossUsesBytes},
           {"max-reuse-distance", o.maxReuseDistance},
           {"prefetch-bytes", o.prefetchBytes},
           {"max-live-gathered-bytes", o.maxLiveGatheredBytes},
           {"device-memory-budget", o.deviceMemoryBudget},
       })
    if (value < 0)
      return name(option) + " must not be negative, got " +
             std::to_string(value);
  std::string fullScheme =
      name("mesh-scheme") + spelling.valueSeparator + "full";
  if ((o.meshScheme != MeshScheme::hybrid || o.hpz || o.qwz || o.qgz) &&
      !onMesh)
    return name("mesh-scheme") + ", " + name("hpz") + ", " + name("qwz") +
           " and " + name("qgz") + " say how a mesh is sharded; " +
           spelling.giveMesh;
  if ((o.qwz || o.qgz) && o.meshScheme != MeshScheme::full)
    return name("qwz") + " and " + name("qgz") +
           " quantize what crosses nodes under full 2-D sharding; they need " +
           fullScheme;
  if (o.qwz && o.stage != 3)
    return name("qwz") +
           " quantizes the gathers of sharded parameters; it needs " +
           spelling.stage3;
  for (auto [option, bits] :
       {std::pair<llvm::StringRef, int64_t>{"qwz-bits", o.qwzBits},
        {"qgz-bits", o.qgzBits}})
    if (bits != 8 && bits != 4)
      return name(option) + " must be 8 (int8) or 4 (int4), got " +
             std::to_string(bits);
  if (o.quantizeBlock < 1 || o.quantizeMinElements < 0)
    return name("quantize-block") + " must be positive and " +
           name("quantize-min-elements") + " not negative, got " +
           std::to_string(static_cast<int64_t>(o.quantizeBlock)) + " and " +
           std::to_string(static_cast<int64_t>(o.quantizeMinElements));
  if (o.tp < 1)
    return name("tp") + " must be at least 1, got " +
           std::to_string(static_cast<int64_t>(o.tp));
  if (o.hpz && (o.meshScheme != MeshScheme::full || o.stage != 3))
    return name("hpz") +
           " keeps a secondary shard of the parameters within the node; it "
           "needs " +
           spelling.stage3 + spelling.both + fullScheme;
  return std::nullopt;
}

} // namespace zero

#endif // ZERO_PASSES_PIPELINEOPTIONS_H
