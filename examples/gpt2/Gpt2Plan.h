//===- Gpt2Plan.h - What gpt2_train says of its model and plan ---*- C++
//-*-===//
//
// The model's configuration from the flags, and the plan's lines printed
// before training (Gpt2Plan.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef ZERO_EXAMPLES_GPT2_GPT2PLAN_H
#define ZERO_EXAMPLES_GPT2_GPT2PLAN_H

#include "Gpt2Flags.h"

#include "zero/frontend/CompiledGraph.h"
#include "zero/frontend/Layers.h"

#include <cstdint>
#include <string>

namespace gpt2 {

/// GPT-2's configuration at the flags' size, context and options.
zero::frontend::GPT2Config modelConfig(const Flags &flags);
/// GPT-2's parameters at `config`: embeddings, blocks and the final norm.
int64_t parameterCount(const zero::frontend::GPT2Config &config);
/// `count` bytes in B, KiB, MiB, GiB or TiB.
std::string bytes(double count);
/// `value` with its thousands separated by commas.
std::string grouped(int64_t value);
/// The model, the configuration, the plan per rank and the attention chosen,
/// one line each; then `dataLine` where not empty.
void printPlan(const Flags &flags,
               const zero::frontend::CompiledGraph &compiled,
               int64_t localBatch, const std::string &dataLine);

} // namespace gpt2

#endif // ZERO_EXAMPLES_GPT2_GPT2PLAN_H
