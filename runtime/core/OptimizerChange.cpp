//===- OptimizerChange.cpp - How two optimizers differ, in words ----------===//

#include "OptimizerChange.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

#include <map>

namespace zero::rt {
namespace {

using Params = std::map<std::string, std::string>;

/// "9.000000e-01 : f64" as "0.9", "10000 : i64" as "10000", "\"cosine\"" as
/// "cosine": what the user wrote.
std::string plainValue(absl::string_view value) {
  size_t type = value.rfind(" : ");
  if (type != absl::string_view::npos)
    value = value.substr(0, type);
  value = absl::StripAsciiWhitespace(value);
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
    return std::string(value.substr(1, value.size() - 2));
  double number;
  if (absl::SimpleAtod(value, &number))
    return absl::StrCat(number);
  return std::string(value);
}

/// "train.adamw {a = 1 : i64, b = \"x\"}" -> ("train.adamw", {a: 1, b: x}).
std::pair<std::string, Params> parseUpdate(absl::string_view text) {
  size_t open = text.find(" {");
  if (open == absl::string_view::npos || text.back() != '}')
    return {std::string(text), {}};
  std::string kernel(text.substr(0, open));
  absl::string_view body = text.substr(open + 2, text.size() - open - 3);
  Params params;
  // Split at the commas outside brackets and quotes.
  int depth = 0;
  bool quoted = false;
  size_t start = 0;
  for (size_t i = 0; i <= body.size(); ++i) {
    char c = i < body.size() ? body[i] : ',';
    if (c == '"')
      quoted = !quoted;
    else if (!quoted && (c == '[' || c == '{' || c == '('))
      ++depth;
    else if (!quoted && (c == ']' || c == '}' || c == ')'))
      --depth;
    if (c != ',' || quoted || depth != 0)
      continue;
    absl::string_view item =
        absl::StripAsciiWhitespace(body.substr(start, i - start));
    start = i + 1;
    size_t equals = item.find(" = ");
    if (equals == absl::string_view::npos)
      continue;
    params[std::string(item.substr(0, equals))] =
        plainValue(item.substr(equals + 3));
  }
  return {kernel, params};
}

std::map<std::string, Params>
parseUpdates(const std::vector<std::string> &texts) {
  std::map<std::string, Params> updates;
  for (const std::string &text : texts)
    updates.insert(parseUpdate(text));
  return updates;
}

/// The length (`total`) of the updates' schedule, where every update with a
/// schedule has one and they agree.
std::optional<int64_t>
findScheduleTotal(const std::vector<std::string> &updates) {
  std::optional<int64_t> total;
  for (const auto &[kernel, params] : parseUpdates(updates)) {
    auto found = params.find("total");
    // Kernels without a schedule (the clipping) have no length.
    if (found == params.end())
      continue;
    int64_t value;
    if (!absl::SimpleAtoi(found->second, &value) || (total && *total != value))
      return std::nullopt;
    total = value;
  }
  return total;
}

/// Where the updates differ in their schedule's length alone (every
/// kernel's `total`, the same two numbers): the schedule's kind and both
/// lengths.
struct ScheduleLengthChange {
  std::string schedule;
  int64_t saved = 0, current = 0;
};

std::optional<ScheduleLengthChange>
findScheduleLengthChange(const std::vector<std::string> &saved,
                         const std::vector<std::string> &current) {
  std::map<std::string, Params> theirs = parseUpdates(saved),
                                mine = parseUpdates(current);
  if (theirs.size() != mine.size())
    return std::nullopt;
  std::optional<ScheduleLengthChange> change;
  for (const auto &[kernel, params] : theirs) {
    auto found = mine.find(kernel);
    if (found == mine.end())
      return std::nullopt;
    Params a = params, b = found->second;
    auto total = a.find("total"), otherTotal = b.find("total");
    // A kernel without a schedule (the clipping) must be unchanged.
    if (total == a.end() && otherTotal == b.end()) {
      if (a != b)
        return std::nullopt;
      continue;
    }
    if (total == a.end() || otherTotal == b.end())
      return std::nullopt;
    int64_t was, now;
    if (!absl::SimpleAtoi(total->second, &was) ||
        !absl::SimpleAtoi(otherTotal->second, &now))
      return std::nullopt;
    a.erase(total);
    b.erase(otherTotal);
    if (a != b)
      return std::nullopt;
    auto schedule = a.find("schedule");
    ScheduleLengthChange here{schedule == a.end() ? "" : schedule->second, was,
                              now};
    if (change && (change->saved != was || change->current != now))
      return std::nullopt;
    change = here;
  }
  if (change && change->saved == change->current)
    return std::nullopt;
  return change;
}

/// What differs, in words: "train.adamw's beta2 is 0.95 in the checkpoint
/// and 0.99 here; ...".
std::string describeOptimizerChange(const std::vector<std::string> &saved,
                                    const std::vector<std::string> &current) {
  std::map<std::string, Params> theirs = parseUpdates(saved),
                                mine = parseUpdates(current);
  std::vector<std::string> changes;
  for (const auto &[kernel, params] : theirs) {
    auto found = mine.find(kernel);
    if (found == mine.end()) {
      changes.push_back(absl::StrCat("the checkpoint updates with ", kernel,
                                     ", which this program does not use"));
      continue;
    }
    std::map<std::string, bool> keys;
    for (const auto &entry : params)
      keys[entry.first] = true;
    for (const auto &entry : found->second)
      keys[entry.first] = true;
    for (const auto &[key, unused] : keys) {
      const Params &other = found->second;
      auto a = params.find(key);
      auto b = other.find(key);
      std::string was = a == params.end() ? "unset" : a->second;
      std::string now = b == other.end() ? "unset" : b->second;
      if (was != now)
        changes.push_back(absl::StrCat(kernel, "'s ", key, " is ", was,
                                       " in the checkpoint and ", now,
                                       " here"));
    }
  }
  for (const auto &[kernel, params] : mine)
    if (!theirs.count(kernel))
      changes.push_back(absl::StrCat("this program updates with ", kernel,
                                     ", which the checkpoint does not"));
  return changes.empty() ? "the updates' hyper-parameters differ"
                         : absl::StrJoin(changes, "; ");
}

} // namespace

absl::Status checkOptimizerChange(const std::string &dir,
                                  const std::vector<std::string> &saved,
                                  const std::vector<std::string> &current,
                                  std::optional<int64_t> scheduleTotal) {
  std::optional<ScheduleLengthChange> length =
      findScheduleLengthChange(saved, current);
  if (scheduleTotal) {
    std::optional<int64_t> total = findScheduleTotal(current);
    if (!total)
      return absl::InvalidArgumentError(absl::StrCat(
          dir, ": a schedule total to continue under (", *scheduleTotal,
          ") was given, but this run's learning rate has no schedule with a "
          "length"));
    if (*total != *scheduleTotal)
      return absl::InvalidArgumentError(absl::StrCat(
          dir, ": the schedule total to continue under is ", *scheduleTotal,
          ", but this run's schedule ends at step ", *total));
    if (length)
      return absl::OkStatus();
  }
  if (length)
    return absl::InvalidArgumentError(absl::StrCat(
        dir, ": the checkpoint's ", length->schedule,
        length->schedule.empty() ? "" : " ", "schedule ends at step ",
        length->saved, "; this run's at ", length->current,
        ". To continue under the new length, say so: schedule_total=",
        length->current, " (Trainer.load) or --schedule-total ",
        length->current, " (zero-run and the examples)"));
  if (saved != current)
    return absl::InvalidArgumentError(absl::StrCat(
        dir, ": the checkpoint was trained with another optimizer: ",
        describeOptimizerChange(saved, current),
        " (resuming would silently change the training)"));
  return absl::OkStatus();
}

} // namespace zero::rt
