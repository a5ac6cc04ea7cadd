//===- StepTimeline.cpp - The predicted step as text, JSON and SVG --------===//
//
// The SVG is written by hand, element by element, with fixed-precision
// numbers and no timestamps or random ids, so the same program and machine
// always give the same bytes (a lit test checks parts of it) and a browser
// opens it without anything else.
//
//===----------------------------------------------------------------------===//

#include "zero/analysis/StepSimulation.h"

#include "zero/analysis/PlanReport.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstring>

using namespace mlir;

namespace zero {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

double percentOf(double part, double whole) {
  return whole > 0 ? 100.0 * part / whole : 0.0;
}

/// `flops` with the largest SI prefix that leaves at least 1: "3.417
/// PFLOP".
std::string formatFlops(double flops) {
  static constexpr const char *kPrefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  size_t prefix = 0;
  while (flops >= 1000.0 && prefix + 1 < std::size(kPrefixes)) {
    flops /= 1000.0;
    ++prefix;
  }
  return llvm::formatv("{0:F3} {1}FLOP", flops, kPrefixes[prefix]).str();
}

std::string bodyLabel(const SimulatedBody &body) {
  if (body.repeat > 1)
    return body.kind + " (x" + std::to_string(body.repeat) + ")";
  return body.kind;
}

} // namespace

int64_t getPeakDeviceBytes(const StepPrediction &prediction) {
  int64_t peak = 0;
  for (const SimulatedBody &body : prediction.bodies)
    peak = std::max(peak, body.peakLiveArena);
  return prediction.devicePersistentBytes + peak;
}

//===----------------------------------------------------------------------===//
// Text and JSON
//===----------------------------------------------------------------------===//

void printPrediction(const StepPrediction &prediction, llvm::raw_ostream &os) {
  const MachineModel &machine = prediction.machine;
  double step = prediction.stepSeconds;
  os << "Predicted step on machine '" << machine.name << "' ("
     << prediction.ranks << " rank(s), program @" << prediction.program
     << (machine.asyncCollectives ? ""
                                  : ", collectives progress only while the "
                                    "compute stream waits")
     << "):\n";
  auto row = [&](const char *name, double seconds, const char *note) {
    os << llvm::format("  %-22s %12.4f ms", name, seconds * 1e3) << note
       << "\n";
  };
  row("step time", step, "");
  os << llvm::format("  %-22s %12.4f ms   (%.1f %% of the step)\n",
                     static_cast<const char *>("compute stream busy"),
                     prediction.computeBusy * 1e3,
                     percentOf(prediction.computeBusy, step));
  row("communication", prediction.communication,
      "   (time some collective runs)");
  os << llvm::format("  %-22s %12.4f ms   (%.2f %% of the step)\n",
                     static_cast<const char *>("exposed communication"),
                     prediction.exposedCommunication * 1e3,
                     percentOf(prediction.exposedCommunication, step));
  os << llvm::format("  %-22s %12lld B   (persistent %lld B + peak live "
                     "arena; arena planned %lld B)\n",
                     static_cast<const char *>("peak device memory"),
                     static_cast<long long>(getPeakDeviceBytes(prediction)),
                     static_cast<long long>(prediction.devicePersistentBytes),
                     static_cast<long long>(prediction.deviceArenaBytes));
  if (machine.deviceMemory > 0) {
    int64_t peak = getPeakDeviceBytes(prediction);
    double card = static_cast<double>(machine.deviceMemory);
    if (peak <= machine.deviceMemory)
      os << llvm::format("  %-22s %12.2f GiB a device: the peak fits (%.1f "
                         "%% of it)\n",
                         static_cast<const char *>("device memory"),
                         card / kGiB, percentOf(peak, card));
    else
      os << llvm::format("  %-22s %12.2f GiB a device: the peak does NOT fit "
                         "(%lld B over)\n",
                         static_cast<const char *>("device memory"),
                         card / kGiB,
                         static_cast<long long>(peak - machine.deviceMemory));
  }
  // Throughput in the units the runs people plan are published in.
  if (prediction.tokens > 0)
    os << llvm::format("  %-22s %12.1f a device   (%lld a step: the "
                       "elements of input @%s)\n",
                       static_cast<const char *>("tokens / s"),
                       getTokensPerSecond(prediction),
                       static_cast<long long>(prediction.tokens),
                       prediction.tokensInput.c_str());
  if (prediction.modelFlops > 0) {
    os << llvm::format("  %-22s %12s a device   (matmuls and attention, "
                       "each once",
                       static_cast<const char *>("model FLOPs a step"),
                       formatFlops(prediction.modelFlops).c_str());
    if (prediction.recomputeFlops > 0)
      os << "; recomputing adds " << formatFlops(prediction.recomputeFlops);
    os << ")\n";
  }
  if (prediction.modelFlops > 0 && machine.peakFlops > 0)
    os << llvm::format("  %-22s %12.2f %%   (of the %.1f TFLOP/s datasheet "
                       "peak)\n",
                       static_cast<const char *>("MFU"),
                       100.0 * getModelFlopsUtilization(prediction),
                       machine.peakFlops / 1e12);
  os << "  Busy time per stream:\n";
  for (auto [name, busy] : llvm::zip(prediction.streams, prediction.streamBusy))
    os << llvm::format("    @%-19s %12.4f ms\n", name.c_str(), busy * 1e3);
  if (prediction.bodies.size() > 1) {
    os << "  Per body:\n";
    for (const SimulatedBody &body : prediction.bodies)
      os << llvm::format("    %-20s %12.4f ms, exposed communication %.4f "
                         "ms\n",
                         bodyLabel(body).c_str(), body.seconds * 1e3,
                         body.exposedCommunication * 1e3);
  }
  os << "  Collectives (body, instruction, kind, bytes, predicted time, "
        "start):\n";
  for (const SimulatedBody &body : prediction.bodies)
    for (const SimulatedInstruction &instruction : body.instructions)
      if (instruction.kind == SimulatedKind::collective)
        os << llvm::format(
            "    %-6s %6lld  %-15s %14.0f B %12.4f ms  at "
            "%.4f ms\n",
            body.kind.c_str(), static_cast<long long>(instruction.index),
            instruction.name.c_str(), instruction.bytes,
            instruction.seconds() * 1e3, instruction.start * 1e3);
}

llvm::json::Object predictionToJson(const StepPrediction &prediction) {
  llvm::json::Object streamBusy;
  for (auto [name, busy] : llvm::zip(prediction.streams, prediction.streamBusy))
    streamBusy[name] = busy;
  llvm::json::Array bodies;
  for (const SimulatedBody &body : prediction.bodies) {
    llvm::json::Array collectives, instructions;
    for (const SimulatedInstruction &instruction : body.instructions) {
      llvm::json::Object entry{
          {"index", instruction.index},
          {"name", instruction.name},
          {"kind", stringifySimulatedKind(instruction.kind)},
          {"stream", prediction.streams[instruction.stream]},
          {"start_seconds", instruction.start},
          {"seconds", instruction.seconds()},
          {"bytes", instruction.bytes}};
      if (instruction.flops > 0)
        entry["flops"] = instruction.flops;
      if (instruction.modelFlops != instruction.flops)
        entry["model_flops"] = instruction.modelFlops;
      if (instruction.kind == SimulatedKind::collective)
        collectives.push_back(llvm::json::Object(entry));
      instructions.push_back(std::move(entry));
    }
    bodies.push_back(llvm::json::Object{
        {"kind", body.kind},
        {"repeat", body.repeat},
        {"seconds", body.seconds},
        {"compute_busy_seconds", body.computeBusy},
        {"communication_seconds", body.communication},
        {"exposed_communication_seconds", body.exposedCommunication},
        {"peak_live_arena_bytes", body.peakLiveArena},
        {"collectives", std::move(collectives)},
        {"instructions", std::move(instructions)}});
  }
  double step = prediction.stepSeconds;
  return llvm::json::Object{
      {"machine", machineToJson(prediction.machine)},
      {"program", prediction.program},
      {"ranks", prediction.ranks},
      {"step_seconds", step},
      {"compute_busy_seconds", prediction.computeBusy},
      {"communication_seconds", prediction.communication},
      {"exposed_communication_seconds", prediction.exposedCommunication},
      {"exposed_communication_fraction",
       step > 0 ? prediction.exposedCommunication / step : 0.0},
      {"stream_busy_seconds", std::move(streamBusy)},
      {"device_persistent_bytes", prediction.devicePersistentBytes},
      {"device_arena_bytes", prediction.deviceArenaBytes},
      {"peak_device_bytes", getPeakDeviceBytes(prediction)},
      {"fits_device_memory",
       prediction.machine.deviceMemory > 0
           ? llvm::json::Value(getPeakDeviceBytes(prediction) <=
                               prediction.machine.deviceMemory)
           : llvm::json::Value(nullptr)},
      {"tokens", prediction.tokens},
      {"tokens_input", prediction.tokens > 0
                           ? llvm::json::Value(prediction.tokensInput)
                           : llvm::json::Value(nullptr)},
      {"tokens_per_second",
       prediction.tokens > 0 ? llvm::json::Value(getTokensPerSecond(prediction))
                             : llvm::json::Value(nullptr)},
      {"model_flops", prediction.modelFlops},
      {"recompute_flops", prediction.recomputeFlops},
      {"mfu", prediction.machine.peakFlops > 0
                  ? llvm::json::Value(getModelFlopsUtilization(prediction))
                  : llvm::json::Value(nullptr)},
      {"bodies", std::move(bodies)}};
}

//===----------------------------------------------------------------------===//
// SVG
//===----------------------------------------------------------------------===//

namespace {

StringRef colorOf(const SimulatedInstruction &instruction) {
  if (instruction.kind == SimulatedKind::collective)
    return llvm::StringSwitch<StringRef>(instruction.name)
        .Case("all_reduce", "#f28e2b")
        .Case("reduce_scatter", "#e15759")
        .Case("all_gather", "#59a14f")
        .Case("broadcast", "#edc948")
        .Default("#76b7b2");
  switch (instruction.kind) {
  case SimulatedKind::matmul:
    return "#4e79a7";
  case SimulatedKind::kernel:
    return "#a0cbe8";
  case SimulatedKind::copy:
    return "#bab0ac";
  case SimulatedKind::transfer:
    return "#b07aa1";
  case SimulatedKind::hostKernel:
    return "#9c755f";
  default:
    return "#e8e8e8";
  }
}

/// A round step (1, 2 or 5 times a power of ten) that cuts `range` into at
/// most about `count` intervals.
double tickStep(double range, int count) {
  if (range <= 0)
    return 1;
  double raw = range / count;
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double factor : {1.0, 2.0, 5.0, 10.0})
    if (factor * power >= raw)
      return factor * power;
  return 10 * power;
}

/// `value` with as many decimals as `step` needs (0.5 -> 1, 20 -> 0).
std::string formatTick(double value, double step) {
  int decimals =
      step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  return llvm::formatv("{0}", llvm::format("%.*f", decimals, value)).str();
}

std::string escape(StringRef text) {
  std::string out;
  for (char c : text) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

} // namespace

void writeTimelineSvg(const StepPrediction &prediction, llvm::raw_ostream &os) {
  // Each body once, one after the other on the time axis.
  double total = 0;
  for (const SimulatedBody &body : prediction.bodies)
    total += body.seconds;
  double totalMs = std::max(total * 1e3, 1e-6);
  const double left = 150, plotWidth = 1020, width = left + plotWidth + 30;
  const double laneTop = 56, laneHeight = 26, laneGap = 6;
  size_t lanes = prediction.streams.size();
  double lanesBottom = laneTop + lanes * (laneHeight + laneGap);
  const double memoryTop = lanesBottom + 24, memoryHeight = 160;
  double memoryBottom = memoryTop + memoryHeight;
  double axisY = memoryBottom;
  double height = axisY + 80;
  auto x = [&](double seconds) {
    return left + seconds * 1e3 / totalMs * plotWidth;
  };
  double persistentMiB = prediction.devicePersistentBytes / kMiB;
  double plannedMiB =
      (prediction.devicePersistentBytes + prediction.deviceArenaBytes) / kMiB;
  double topMiB = std::max(plannedMiB, getPeakDeviceBytes(prediction) / kMiB);
  double memoryStep = tickStep(topMiB, 4);
  double memoryMax =
      std::max(memoryStep, std::ceil(topMiB / memoryStep) * memoryStep);
  auto y = [&](double mib) {
    return memoryBottom - mib / memoryMax * memoryHeight;
  };

  os << llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" "
                      "width=\"{0:F0}\" height=\"{1:F0}\" viewBox=\"0 0 "
                      "{0:F0} {1:F0}\" font-family=\"sans-serif\" "
                      "font-size=\"11\">\n",
                      width, height);
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << llvm::formatv(
      "<text class=\"title\" x=\"{0:F0}\" y=\"20\" font-size=\"14\">"
      "Predicted step of @{1} on {2}, {3} rank(s): {4:F3} ms, exposed "
      "communication {5:F3} ms ({6:F1} %)</text>\n",
      left, escape(prediction.program), escape(prediction.machine.name),
      prediction.ranks, prediction.stepSeconds * 1e3,
      prediction.exposedCommunication * 1e3,
      percentOf(prediction.exposedCommunication, prediction.stepSeconds));

  // Bodies: a label over each, a line between them.
  double offset = 0;
  for (const SimulatedBody &body : prediction.bodies) {
    os << llvm::formatv("<text class=\"body\" x=\"{0:F1}\" y=\"44\">{1} "
                        "{2:F3} ms</text>\n",
                        x(offset) + 2, bodyLabel(body), body.seconds * 1e3);
    if (offset > 0)
      os << llvm::formatv("<line x1=\"{0:F1}\" y1=\"32\" x2=\"{0:F1}\" "
                          "y2=\"{1:F1}\" stroke=\"#333\" "
                          "stroke-dasharray=\"4 3\"/>\n",
                          x(offset), axisY);
    offset += body.seconds;
  }

  // Lanes.
  for (size_t lane = 0; lane < lanes; ++lane) {
    double top = laneTop + lane * (laneHeight + laneGap);
    os << llvm::formatv("<g class=\"lane\" id=\"stream-{0}\">\n",
                        prediction.streams[lane]);
    os << llvm::formatv("<text x=\"8\" y=\"{0:F1}\">@{1} {2:F3} ms</text>\n",
                        top + laneHeight * 0.65, prediction.streams[lane],
                        prediction.streamBusy[lane] * 1e3);
    os << llvm::formatv("<rect x=\"{0:F0}\" y=\"{1:F1}\" width=\"{2:F0}\" "
                        "height=\"{3:F0}\" fill=\"#fafafa\" "
                        "stroke=\"#ddd\"/>\n",
                        left, top, plotWidth, laneHeight);
    double start = 0;
    for (const SimulatedBody &body : prediction.bodies) {
      for (const SimulatedInstruction &instruction : body.instructions) {
        // Other streams wait for work to do; only the compute stream's
        // waits are time the step loses.
        if (instruction.stream != lane ||
            (lane != 0 && instruction.kind == SimulatedKind::wait))
          continue;
        double from = x(start + instruction.start);
        double rectWidth = std::max(x(start + instruction.end) - from, 0.2);
        os << llvm::formatv(
            "<rect class=\"{0}\" x=\"{1:F2}\" y=\"{2:F1}\" width=\"{3:F2}\" "
            "height=\"{4:F0}\" fill=\"{5}\"><title>{6} #{7}: {8:F4} ms at "
            "{9:F4} ms, {10:F0} B</title></rect>\n",
            instruction.kind == SimulatedKind::collective
                ? "collective"
                : stringifySimulatedKind(instruction.kind).str(),
            from, top + 1, rectWidth, laneHeight - 2, colorOf(instruction),
            escape(instruction.name), instruction.index,
            instruction.seconds() * 1e3, instruction.start * 1e3,
            instruction.bytes);
        if (instruction.kind == SimulatedKind::collective &&
            rectWidth > 6.5 * instruction.name.size() + 6)
          os << llvm::formatv("<text x=\"{0:F2}\" y=\"{1:F1}\" "
                              "fill=\"white\">{2}</text>\n",
                              from + 3, top + laneHeight * 0.65,
                              instruction.name);
      }
      start += body.seconds;
    }
    os << "</g>\n";
  }

  // Memory: persistent buffers plus the live arena views, and the planned
  // arena above the persistent buffers.
  os << "<g class=\"memory\">\n";
  os << llvm::formatv("<rect x=\"{0:F0}\" y=\"{1:F1}\" width=\"{2:F0}\" "
                      "height=\"{3:F0}\" fill=\"none\" stroke=\"#ddd\"/>\n",
                      left, memoryTop, plotWidth, memoryHeight);
  for (double tick = 0; tick <= memoryMax + memoryStep / 2;
       tick += memoryStep) {
    os << llvm::formatv("<line x1=\"{0:F0}\" y1=\"{1:F1}\" x2=\"{2:F0}\" "
                        "y2=\"{1:F1}\" stroke=\"#eee\"/>\n",
                        left, y(tick), left + plotWidth);
    os << llvm::formatv("<text x=\"{0:F0}\" y=\"{1:F1}\" "
                        "text-anchor=\"end\">{2}</text>\n",
                        left - 6, y(tick) + 4, formatTick(tick, memoryStep));
  }
  os << llvm::formatv("<text x=\"14\" y=\"{0:F1}\" transform=\"rotate(-90 14 "
                      "{0:F1})\" text-anchor=\"middle\">device memory "
                      "(MiB)</text>\n",
                      memoryTop + memoryHeight / 2);
  os << llvm::formatv("<line class=\"planned\" x1=\"{0:F0}\" y1=\"{1:F1}\" "
                      "x2=\"{2:F0}\" y2=\"{1:F1}\" stroke=\"#999\" "
                      "stroke-dasharray=\"6 4\"><title>persistent + planned "
                      "arena: {3:F2} MiB</title></line>\n",
                      left, y(plannedMiB), left + plotWidth, plannedMiB);
  os << llvm::formatv("<line class=\"persistent\" x1=\"{0:F0}\" "
                      "y1=\"{1:F1}\" x2=\"{2:F0}\" y2=\"{1:F1}\" "
                      "stroke=\"#bbb\"><title>persistent buffers: {3:F2} "
                      "MiB</title></line>\n",
                      left, y(persistentMiB), left + plotWidth, persistentMiB);
  os << "<path class=\"live\" fill=\"none\" stroke=\"#4e79a7\" "
        "stroke-width=\"1.5\" d=\"";
  offset = 0;
  bool first = true;
  for (const SimulatedBody &body : prediction.bodies) {
    double previous = persistentMiB;
    for (auto [time, bytes] : body.liveArena) {
      double mib = persistentMiB + bytes / kMiB;
      double at = x(offset + time);
      if (first)
        os << llvm::formatv("M{0:F2},{1:F2}", at, y(mib));
      else
        os << llvm::formatv(" L{0:F2},{1:F2} L{0:F2},{2:F2}", at, y(previous),
                            y(mib));
      first = false;
      previous = mib;
    }
    offset += body.seconds;
    os << llvm::formatv(" L{0:F2},{1:F2}", x(offset), y(previous));
  }
  os << "\"/>\n</g>\n";

  // The time axis, with a grid through the lanes.
  os << "<g class=\"axis\">\n";
  os << llvm::formatv("<line x1=\"{0:F0}\" y1=\"{1:F1}\" x2=\"{2:F0}\" "
                      "y2=\"{1:F1}\" stroke=\"#333\"/>\n",
                      left, axisY, left + plotWidth);
  double timeStep = tickStep(totalMs, 10);
  for (double tick = 0; tick <= totalMs + timeStep * 1e-6; tick += timeStep) {
    double at = left + tick / totalMs * plotWidth;
    os << llvm::formatv("<line x1=\"{0:F2}\" y1=\"{1:F1}\" x2=\"{0:F2}\" "
                        "y2=\"{2:F1}\" stroke=\"#f0f0f0\"/>\n",
                        at, laneTop, axisY);
    os << llvm::formatv("<text x=\"{0:F2}\" y=\"{1:F1}\" "
                        "text-anchor=\"middle\">{2}</text>\n",
                        at, axisY + 16, formatTick(tick, timeStep));
  }
  os << llvm::formatv("<text x=\"{0:F0}\" y=\"{1:F1}\" "
                      "text-anchor=\"middle\">time (ms)</text>\n",
                      left + plotWidth / 2, axisY + 34);
  os << "</g>\n";

  // Legend.
  os << "<g class=\"legend\">\n";
  static const std::pair<const char *, const char *> kLegend[] = {
      {"matmul", "#4e79a7"},
      {"kernel", "#a0cbe8"},
      {"copy", "#bab0ac"},
      {"transfer", "#b07aa1"},
      {"host kernel", "#9c755f"},
      {"all_reduce", "#f28e2b"},
      {"reduce_scatter", "#e15759"},
      {"all_gather", "#59a14f"},
      {"other collective", "#76b7b2"},
      {"compute waits", "#e8e8e8"}};
  double legendX = left;
  for (auto [name, color] : kLegend) {
    os << llvm::formatv("<rect x=\"{0:F0}\" y=\"{1:F1}\" width=\"10\" "
                        "height=\"10\" fill=\"{2}\" stroke=\"#999\"/>"
                        "<text x=\"{3:F0}\" y=\"{4:F1}\">{5}</text>\n",
                        legendX, axisY + 50, color, legendX + 14, axisY + 59,
                        name);
    legendX += 14 + 7.0 * std::strlen(name) + 18;
  }
  os << "</g>\n</svg>\n";
}

LogicalResult writePrediction(const StepPrediction &prediction,
                              ReportFormat format, StringRef output,
                              Location loc) {
  return writeReportOutput(output, loc, [&](llvm::raw_ostream &os) {
    if (format == ReportFormat::json)
      os << llvm::formatv("{0:2}",
                          llvm::json::Value(llvm::json::Object{
                              {"prediction", predictionToJson(prediction)}}))
         << "\n";
    else if (format == ReportFormat::timeline)
      writeTimelineSvg(prediction, os);
    else
      printPrediction(prediction, os);
  });
}

} // namespace zero
