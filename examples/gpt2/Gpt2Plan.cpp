//===- Gpt2Plan.cpp - What gpt2_train says of its model and plan ----------===//
//
// The model's configuration from the flags, and the plan's lines gpt2_train
// prints before it trains (or instead, with --plan-only).
//
//===----------------------------------------------------------------------===//

#include "Gpt2Plan.h"

#include "zero/frontend/Graph.h"
#include "zero/runtime/DType.h"

#include "absl/strings/str_cat.h"

#include <cmath>
#include <cstdio>

namespace gpt2 {

using namespace zero::frontend;
using zero::rt::dtypeName;

GPT2Config modelConfig(const Flags &flags) {
  GPT2Config config;
  config.layers = flags.size->layers;
  config.vocab = flags.size->vocab;
  config.seq = flags.seq;
  config.dim = flags.size->dim;
  config.heads = flags.size->heads;
  config.checkpoint = flags.checkpoint;
  config.fusedAttention = flags.fusedAttention;
  return config;
}

int64_t parameterCount(const GPT2Config &c) {
  int64_t perBlock = 12 * c.dim * c.dim + 13 * c.dim;
  return c.vocab * c.dim + c.seq * c.dim + c.layers * perBlock + 2 * c.dim;
}

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
  std::string micro =
      flags.accumulate > 1
          ? absl::StrCat(", ", flags.accumulate, " micro-batches per step")
          : std::string();
  std::printf("ZeRO stage %d on %d rank(s), %s, AdamW lr %g, %s%s; global "
              "batch %ld x %ld tokens (%lld per rank)%s\n",
              r.stage, r.ranks, precision.c_str(), flags.lr, clip.c_str(),
              flags.checkpoint ? ", activation checkpointing" : "", flags.batch,
              flags.seq, (long long)localBatch, micro.c_str());
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
  if (r.peakTransient > 0)
    std::printf("plan, arena per rank: %s, %.3f x the peak transient\n",
                bytes(r.arenaBytes).c_str(),
                static_cast<double>(r.arenaBytes) /
                    static_cast<double>(r.peakTransient));
  if (const std::optional<zero::MemoryPlan> &plan = r.memoryPlan)
    std::printf("plan, memory per rank (offload %s): device %s, host %s; "
                "host link %s per step\n",
                plan->offload.c_str(), bytes(plan->deviceBytes()).c_str(),
                bytes(plan->hostBytes()).c_str(),
                bytes(plan->hostLinkBytes).c_str());
  std::printf("attention: %s (%s)\n",
              flags.fusedAttention ? "fused" : "separate ops",
              flags.attentionReason.c_str());
  if (!dataLine.empty())
    std::printf("data: %s\n", dataLine.c_str());
  std::fflush(stdout);
}

} // namespace gpt2
