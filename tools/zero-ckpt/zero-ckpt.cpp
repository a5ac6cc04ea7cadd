//===- zero-ckpt.cpp - Inspects, verifies and consolidates checkpoints ----===//
//
// The checkpoint tool, which needs neither MPI nor the program:
//
//   zero-ckpt inspect D [--tensors]   what the checkpoint holds
//   zero-ckpt verify D                sizes, CRC-32s, headers, coverage
//   zero-ckpt consolidate D -o OUT.safetensors [--optimizer]
//
// D is a checkpoint or a directory with `latest`. consolidate is the
// equivalent of DeepSpeed's zero_to_fp32.py: one safetensors file with every
// parameter at its logical shape (the fp32 master where there is one), no
// padding, streamed a bounded piece at a time so that its memory does not
// grow with the model.
//
//===----------------------------------------------------------------------===//

#include "zero/runtime/CheckpointFormat.h"
#include "zero/runtime/TensorFile.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

#include <cstdlib>
#include <map>

using namespace zero::rt;
namespace cl = llvm::cl;

static cl::OptionCategory category("zero-ckpt options");
static cl::opt<std::string> command(cl::Positional, cl::Required,
                                    cl::desc("<inspect|verify|consolidate>"),
                                    cl::cat(category));
static cl::opt<std::string> checkpoint(cl::Positional, cl::Required,
                                       cl::desc("<checkpoint>"),
                                       cl::cat(category));
static cl::opt<std::string>
    output("o", cl::desc("consolidate: the .safetensors file to write"),
           cl::value_desc("file"), cl::cat(category));
static cl::opt<bool> optimizerFlag(
    "optimizer",
    cl::desc("consolidate: also the optimizer state (slots such as @p.m, "
             "@p.v) and the loss scaler, named as zero-run --init reads them"),
    cl::init(false), cl::cat(category));
static cl::opt<bool> tensorsFlag("tensors",
                                 cl::desc("inspect: one line per tensor"),
                                 cl::init(false), cl::cat(category));

[[noreturn]] static void fail(const absl::Status &status) {
  llvm::errs() << "zero-ckpt: " << std::string(status.message()) << "\n";
  std::exit(1);
}

static std::string bytesText(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  return unit == 0 ? absl::StrFormat("%.0f B", bytes)
                   : absl::StrFormat("%.2f %s", bytes, units[unit]);
}

static int64_t tensorBytes(const CheckpointTensor &tensor) {
  return tensor.numElements() * dtypeBytes(tensor.dtype);
}

static void inspect(const std::string &dir, const CheckpointManifest &m) {
  std::map<std::string, std::pair<int, int64_t>> byRole;
  int64_t total = 0;
  for (const CheckpointTensor &tensor : m.tensors) {
    auto &[count, bytes] = byRole[tensor.role];
    ++count;
    bytes += tensorBytes(tensor);
    total += tensorBytes(tensor);
  }
  llvm::outs() << dir << "\n";
  llvm::outs() << absl::StrFormat(
      "  step %d (next %d); program @%s; saved on %d rank%s, ZeRO stage %d, "
      "%d micro-batch%s per step\n",
      m.step, m.step + 1, m.program, m.ranks, m.ranks == 1 ? "" : "s", m.stage,
      m.accumulateSteps, m.accumulateSteps == 1 ? "" : "es");
  llvm::outs() << absl::StrFormat("  data: seed %d, global batch %d per step\n",
                                  m.seed, m.globalBatch);
  llvm::outs() << absl::StrFormat(
      "  %d tensors, %s of state:", m.tensors.size(), bytesText(total));
  for (const auto &[role, entry] : byRole)
    llvm::outs() << absl::StrFormat(" %s %d (%s)", role, entry.first,
                                    bytesText(entry.second));
  llvm::outs() << "\n";
  for (const std::string &update : m.optimizer)
    llvm::outs() << "  update: " << update << "\n";
  uint64_t fileBytes = 0;
  for (const CheckpointFile &file : m.files)
    fileBytes += file.bytes;
  llvm::outs() << absl::StrFormat("  %d files, %s\n", m.files.size(),
                                  bytesText(static_cast<double>(fileBytes)));
  if (!tensorsFlag)
    return;
  for (const CheckpointTensor &tensor : m.tensors)
    llvm::outs() << absl::StrFormat(
        "  %-32s %-6s %s[%s] %s, %d chunk%s%s\n", tensor.name, tensor.role,
        dtypeName(tensor.dtype), absl::StrJoin(tensor.shape, ", "),
        tensor.layout, tensor.chunks.size(),
        tensor.chunks.size() == 1 ? "" : "s",
        tensor.padding ? absl::StrCat(", ", tensor.padding, " padding")
                       : std::string());
}

/// What consolidate writes: (output name, source tensor).
static std::vector<std::pair<std::string, const CheckpointTensor *>>
consolidated(const CheckpointManifest &m) {
  std::vector<std::pair<std::string, const CheckpointTensor *>> out;
  for (const CheckpointTensor &tensor : m.tensors) {
    if (tensor.role == "param") {
      const CheckpointTensor *master = m.findTensor(tensor.name + ".master");
      out.push_back({tensor.name, master ? master : &tensor});
    } else if (tensor.role == "frozen" ||
               (optimizerFlag &&
                (tensor.role == "slot" || tensor.role == "scaler"))) {
      out.push_back({tensor.name, &tensor});
    }
  }
  return out;
}

static void consolidate(const std::string &dir, const CheckpointManifest &m) {
  if (output.empty())
    fail(absl::InvalidArgumentError("consolidate needs -o FILE.safetensors"));
  // The bytes are read anyway: check them on the way.
  if (absl::Status status = verifyCheckpointFiles(dir, m, /*checksums=*/true);
      !status.ok())
    fail(status);
  std::vector<std::pair<std::string, const CheckpointTensor *>> tensors =
      consolidated(m);
  std::vector<SafetensorsEntry> entries;
  for (const auto &[name, source] : tensors)
    entries.push_back({name, source->dtype, source->shape, 0, 0});
  std::map<std::string, std::string> metadata{{"format", "zero-consolidated"},
                                              {"step", std::to_string(m.step)},
                                              {"source", dir}};
  absl::StatusOr<std::unique_ptr<SafetensorsWriter>> writer =
      SafetensorsWriter::create(output, entries, metadata);
  if (!writer.ok())
    fail(writer.status());
  // Bounded pieces: the tool's memory is this buffer, not the model.
  constexpr int64_t kPieceBytes = int64_t{8} << 20;
  std::vector<uint8_t> buffer;
  for (const auto &[name, source] : tensors) {
    int64_t elementBytes = dtypeBytes(source->dtype);
    int64_t piece = std::max<int64_t>(1, kPieceBytes / elementBytes);
    int64_t total = source->numElements();
    for (int64_t begin = 0; begin < total; begin += piece) {
      int64_t end = std::min(total, begin + piece);
      buffer.resize((end - begin) * elementBytes);
      if (absl::Status status =
              readCheckpointRange(dir, *source, begin, end, buffer.data());
          !status.ok())
        fail(status);
      if (absl::Status status = (*writer)->write(buffer.data(), buffer.size());
          !status.ok())
        fail(status);
    }
  }
  if (absl::Status status = (*writer)->commit(); !status.ok())
    fail(status);
  llvm::outs() << absl::StrFormat(
      "wrote %s: %d tensors of step %d%s\n", output.getValue(), tensors.size(),
      m.step, optimizerFlag ? " (with optimizer state)" : "");
}

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "zero-ckpt: inspects, verifies and consolidates zero-run checkpoints\n\n"
      "  zero-ckpt inspect ckpt/ [--tensors]\n"
      "  zero-ckpt verify ckpt/step-00000100\n"
      "  zero-ckpt consolidate ckpt/ -o model.safetensors [--optimizer]\n");
  if (command != "inspect" && command != "verify" && command != "consolidate")
    fail(absl::InvalidArgumentError(
        absl::StrCat("unknown command '", command.getValue(),
                     "' (inspect, verify or consolidate)")));
  absl::StatusOr<std::string> dir = resolveCheckpoint(checkpoint);
  if (!dir.ok())
    fail(dir.status());
  absl::StatusOr<CheckpointManifest> manifest = readCheckpointManifest(*dir);
  if (!manifest.ok())
    fail(manifest.status());
  if (command == "inspect") {
    inspect(*dir, *manifest);
  } else if (command == "verify") {
    if (absl::Status status =
            verifyCheckpointFiles(*dir, *manifest, /*checksums=*/true);
        !status.ok())
      fail(status);
    uint64_t bytes = 0;
    for (const CheckpointFile &file : manifest->files)
      bytes += file.bytes;
    llvm::outs() << absl::StrFormat(
        "%s: ok: step %d, %d files (%s) match their sizes and CRC-32s, %d "
        "tensors complete\n",
        *dir, manifest->step, manifest->files.size(),
        bytesText(static_cast<double>(bytes)), manifest->tensors.size());
  } else {
    consolidate(*dir, *manifest);
  }
  return 0;
}
