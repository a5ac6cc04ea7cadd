//===- BindTraining.cpp - zero._zero's compile, Trainer and communicator --===//
//
// What runs a compiled graph from Python: the process's communicator and
// the Trainer, whose collective calls first check that every rank is in the
// same one (numpy arrays cross in NumpyArrays.cpp).
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "zero/frontend/CompiledGraph.h"
#include "zero/frontend/Graph.h"
#include "zero/frontend/Layers.h"
#include "zero/runtime/Communicator.h"
#include "zero/runtime/TensorFile.h"
#include "zero/support/ByteSize.h"

#include "absl/strings/str_cat.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>

using namespace zero::frontend;
namespace rt = zero::rt;

namespace zero::python {
namespace {

//===----------------------------------------------------------------------===//
// The communicator: one per process, created on first use.
//===----------------------------------------------------------------------===//

std::unique_ptr<rt::Communicator> &communicatorSlot() {
  static std::unique_ptr<rt::Communicator> comm;
  return comm;
}

/// `status`'s message with the program's slot names (input0, 'input1')
/// replaced by the names the trainer was given, which the user knows.
std::string withInputNames(const absl::Status &status,
                           const std::vector<std::string> &names) {
  std::string message(status.message());
  for (size_t i = 0; i < names.size(); ++i) {
    std::string slot = "input" + std::to_string(i);
    for (size_t at = message.find(slot); at != std::string::npos;
         at = message.find(slot, at)) {
      size_t end = at + slot.size();
      bool word = (at == 0 || !std::isalnum(message[at - 1])) &&
                  (end == message.size() || !std::isalnum(message[end]));
      if (!word) {
        at = end;
        continue;
      }
      message.replace(at, slot.size(), names[i]);
      at += names[i].size();
    }
  }
  return message;
}

/// Set by zero.shutdown(): MPI cannot be initialized again in this
/// process, and a trainer's communicator is gone.
bool &mpiFinalized() {
  static bool finalized = false;
  return finalized;
}

/// Raises (instead of touching a finalized MPI, which aborts or crashes)
/// once zero.shutdown() has run.
void requireMpi(const char *what) {
  if (mpiFinalized())
    throw std::runtime_error(
        std::string(what) +
        ": zero.shutdown() has finalized MPI in this process; nothing that "
        "communicates can run after it (it runs by itself at exit)");
}

/// The options the communicator is created with (zero.set_collective_timeout
/// changes them before that).
rt::CommOptions &communicatorOptions() {
  static rt::CommOptions options;
  return options;
}

rt::Communicator &communicator() {
  requireMpi("zero");
  std::unique_ptr<rt::Communicator> &comm = communicatorSlot();
  if (!comm)
    comm = unwrap(rt::createMpiCommunicator(communicatorOptions()));
  return *comm;
}

/// A JSON value as the Python objects json.loads would give.
py::object toPython(const llvm::json::Value &value) {
  if (const llvm::json::Object *object = value.getAsObject()) {
    py::dict dict;
    // llvm::json::Object is unordered; Python's dicts keep the order their
    // keys come in, so sort them for one order.
    std::vector<std::string> keys;
    for (const auto &entry : *object)
      keys.push_back(entry.first.str());
    std::sort(keys.begin(), keys.end());
    for (const std::string &key : keys)
      dict[py::str(key)] = toPython(*object->get(key));
    return dict;
  }
  if (const llvm::json::Array *array = value.getAsArray()) {
    py::list list;
    for (const llvm::json::Value &element : *array)
      list.append(toPython(element));
    return list;
  }
  if (std::optional<int64_t> integer = value.getAsInteger())
    return py::int_(*integer);
  if (std::optional<double> number = value.getAsNumber())
    return py::float_(*number);
  if (std::optional<bool> flag = value.getAsBoolean())
    return py::bool_(*flag);
  if (std::optional<llvm::StringRef> text = value.getAsString())
    return py::str(text->str());
  return py::none();
}

/// CompiledGraph.report as a dict: the lowered program's report in its JSON
/// form (zero::ProgramReport::toJson, the keys zero-run's metrics use) and
/// zero-report's JSON forms of the parameter groups and the quantization
/// plan, with what the frontend adds.
py::dict reportDict(const MemoryReport &report) {
  py::dict dict = toPython(llvm::json::Value(report.toJson()));
  // The Python name of the optimizer state's bytes.
  dict["optimizer_slots"] = dict.attr("pop")("slots");
  dict["stage"] = report.stage;
  dict["ranks"] = report.ranks;
  dict["arena_bytes"] = report.arenaBytes;
  dict["parameter_groups"] =
      toPython(zero::optimizerGroupsToJson(report.groups));
  dict["dropout"] = toPython(zero::dropoutToJson(report.dropout));
  if (report.quantization)
    dict["quantization"] =
        toPython(zero::quantizationPlanToJson(*report.quantization));
  if (report.memoryPlan) {
    py::dict memory = toPython(zero::memoryPlanToJson(*report.memoryPlan));
    // The Python name of the host-link bytes of a step.
    memory["host_link_bytes"] = memory["host_link_bytes_per_step"];
    dict["memory_plan"] = memory;
  }
  if (report.prediction) {
    // The summary of zero-report's "prediction" object; the per-instruction
    // timeline (thousands of entries for a 7B model) stays in zero-opt's
    // JSON report.
    llvm::json::Object prediction = zero::predictionToJson(*report.prediction);
    prediction.erase("bodies");
    dict["prediction"] = toPython(llvm::json::Value(std::move(prediction)));
  }
  return dict;
}

Form parseForm(const std::string &form) {
  if (form == "forward")
    return Form::forward;
  if (form == "step")
    return Form::step;
  if (form == "program")
    return Form::program;
  throw py::value_error("form must be 'forward', 'step' or 'program', not '" +
                        form + "'");
}

/// A Python-owned trainer: keeps the compiled graph it runs alive.
struct PyTrainer {
  std::shared_ptr<CompiledGraph> compiled;
  std::unique_ptr<Trainer> trainer;
  std::vector<std::string> inputNames;
  uint64_t seed = 0;
  /// Whether the last step ran on arrays the caller passed, so that a step
  /// without a batch must switch back to the seed's synthetic batches.
  bool callerBatches = false;
  /// The collective call that raised on this rank part-way, after the ranks
  /// agreed to make it ("" while none did): the other ranks went on with
  /// its collectives, so no later collective call can line up with theirs.
  std::string abandoned;
  /// Whether step refuses NaN and infinity in a float batch.
  bool checkFinite = true;
};

/// A batch given as numpy arrays in input order, as the program names its
/// inputs (input0, input1, ...); errors name the inputs as the user does.
rt::TensorMap batchArrays(const PyTrainer &self,
                          const std::vector<py::buffer> &batch) {
  rt::TensorMap arrays;
  for (size_t i = 0; i < batch.size(); ++i) {
    std::string slot = "input" + std::to_string(i);
    std::string name = i < self.inputNames.size() ? self.inputNames[i] : slot;
    arrays[slot] = fromNumpy(batch[i], "input '" + name + "'");
  }
  return arrays;
}

/// The collective Trainer methods, for agreeOnCall.
enum class Call : int64_t {
  step = 1,
  stateDict,
  save,
  load,
  evaluate,
  loadStateDict
};

std::string describeCall(int64_t call, int64_t step) {
  switch (static_cast<Call>(call)) {
  case Call::step:
    return "Trainer.step (step " + std::to_string(step + 1) + ")";
  case Call::stateDict:
    return "Trainer.state_dict (after step " + std::to_string(step) + ")";
  case Call::save:
    return "Trainer.save (after step " + std::to_string(step) + ")";
  case Call::load:
    return "Trainer.load (after step " + std::to_string(step) + ")";
  case Call::evaluate:
    return "Trainer.evaluate (after step " + std::to_string(step) + ")";
  case Call::loadStateDict:
    return "Trainer.load_state_dict (after step " + std::to_string(step) + ")";
  }
  return "call " + std::to_string(call);
}

/// Every collective method first checks that all ranks are in the same
/// one at the same step: ranks that call different methods (`if rank == 0:
/// save(...)`, one extra step) would otherwise feed one method's
/// collectives with another's data, or wait until the timeout. A mismatch
/// raises on every rank, naming what each rank was doing. `argument` is a
/// digest of what the call must be given alike on every rank (the state of
/// load_state_dict), 0 where nothing is compared.
void agreeOnCall(PyTrainer &self, Call call, int64_t argument = 0) {
  rt::Communicator &comm = communicator();
  if (comm.size() < 2)
    return;
  if (!self.abandoned.empty())
    throw std::runtime_error(
        describeCall(static_cast<int64_t>(call), self.trainer->stepsDone()) +
        " refused: " + self.abandoned +
        " raised on this rank part-way, after every rank had begun it, and "
        "the other ranks went on with its collectives; no later collective "
        "call of this trainer can line up with theirs. Let the error end "
        "the job and resume from a checkpoint");
  // The learning rate too: set on one rank only, replicated parameters
  // would drift apart without any error.
  double rate = self.trainer->learningRate();
  int64_t rateBits;
  std::memcpy(&rateBits, &rate, sizeof(rate));
  constexpr int kWords = 4;
  int64_t mine[kWords] = {static_cast<int64_t>(call), self.trainer->stepsDone(),
                          rateBits, argument};
  std::vector<int64_t> all(kWords * static_cast<size_t>(comm.size()));
  check(comm.allGather(mine, all.data(), kWords, rt::DType::i64));
  bool sameCall = true, sameRate = true, sameArgument = true;
  for (int rank = 1; rank < comm.size(); ++rank) {
    const int64_t *theirs = &all[kWords * rank];
    sameCall &= theirs[0] == all[0] && theirs[1] == all[1];
    sameRate &= theirs[2] == all[2];
    sameArgument &= theirs[3] == all[3];
  }
  if (sameCall && !sameArgument) {
    // Each rank takes its shard of the state (its rows of the batch) it is
    // given: different ones would assemble a model that is none of them
    // (train on rows no rank was meant to drop).
    bool batches = call == Call::step || call == Call::evaluate;
    std::string message = describeCall(all[0], all[1]) +
                          ": the ranks were given different " +
                          (batches ? "batches" : "states") + " (CRC-32";
    for (int rank = 0; rank < comm.size(); ++rank)
      message += absl::StrCat(rank ? "," : "", " rank ", rank, " ",
                              absl::Hex(all[kWords * rank + 3]));
    throw std::runtime_error(
        message +
        (batches ? "); give every rank the same global batch: each rank "
                   "takes its own rows of it (a DistributedSampler's "
                   "per-rank shards are one global batch split: pass their "
                   "concatenation, in rank order)"
                 : "); give every rank the same whole state (as state_dict "
                   "returns it): each rank takes its own shard of it"));
  }
  if (sameCall && sameRate)
    return;
  std::string message = sameCall ? "the ranks train at different learning "
                                   "rates:"
                                 : "the ranks are in different calls:";
  for (int rank = 0; rank < comm.size(); ++rank) {
    const int64_t *theirs = &all[kWords * rank];
    double theirRate;
    std::memcpy(&theirRate, &theirs[2], sizeof(theirRate));
    message += std::string(rank ? "," : "") + " rank " + std::to_string(rank) +
               (sameCall ? " at " + absl::StrCat(theirRate)
                         : " in " + describeCall(theirs[0], theirs[1]));
  }
  message += sameCall
                 ? "; set trainer.learning_rate to the same value on every "
                   "rank"
                 : "; every rank must make the same Trainer calls in the "
                   "same order (step, evaluate, state_dict, load_state_dict, "
                   "save and load are collective: call them on every rank, "
                   "not only on rank 0)";
  throw std::runtime_error(message);
}

/// Held over a collective call once the ranks agreed to make it: an
/// exception out of it leaves this rank behind the others, and the trainer
/// refuses every later collective call (agreeOnCall), naming this one,
/// instead of pairing its messages with the others' next ones.
class CollectiveScope {
public:
  CollectiveScope(PyTrainer &self, Call call)
      : self_(self), what_(describeCall(static_cast<int64_t>(call),
                                        self.trainer->stepsDone())),
        exceptions_(std::uncaught_exceptions()),
        several_(communicator().size() > 1) {}
  CollectiveScope(const CollectiveScope &) = delete;
  CollectiveScope &operator=(const CollectiveScope &) = delete;
  ~CollectiveScope() {
    if (several_ && std::uncaught_exceptions() > exceptions_)
      self_.abandoned = what_;
  }

private:
  PyTrainer &self_;
  std::string what_;
  int exceptions_;
  bool several_;
};

} // namespace

void bindTraining(py::module_ &m) {
  py::class_<CompiledGraph, std::shared_ptr<CompiledGraph>>(
      m, "CompiledGraph",
      "A graph compiled for a number of ranks (Graph.compile): its plan "
      "(report), its MLIR forms, and what zero.Trainer runs.")
      .def_property_readonly("ranks", &CompiledGraph::ranks,
                             "The number of ranks it was compiled for.")
      .def_property_readonly("stage", &CompiledGraph::stage,
                             "The ZeRO stage it was compiled at (0: plain "
                             "data parallelism).")
      .def_property_readonly("input_names", &CompiledGraph::inputNames,
                             "The graph's inputs, in declaration order: the "
                             "order of a batch's arrays.")
      .def_property_readonly(
          "input_types",
          [](const CompiledGraph &compiled) {
            py::list types;
            for (const auto &[shape, dtype] : compiled.inputTypes())
              types.append(
                  py::make_tuple(shape, std::string(rt::dtypeName(dtype))));
            return types;
          },
          "(shape, dtype) of each input, in declaration order: the shape "
          "one rank holds, as graph.input declared it.")
      .def_property_readonly("output_names", &CompiledGraph::outputNames,
                             "The names given to graph.output, in order: "
                             "what Trainer.evaluate(batch, outputs=True) "
                             "gives back.")
      .def(
          "report_text",
          [](const CompiledGraph &compiled) { return compiled.reportText(); },
          "The plan as zero-opt prints it: per-rank memory and traffic "
          "against the ZeRO formula, parameter groups, memory plan.")
      .def("__repr__",
           [](const CompiledGraph &compiled) {
             const MemoryReport &report = compiled.report();
             return "zero.CompiledGraph(stage=" + std::to_string(report.stage) +
                    ", ranks=" + std::to_string(report.ranks) +
                    ", model_state=" + std::to_string(report.modelState) +
                    " B per rank)";
           })
      .def_property_readonly(
          "report",
          [](const CompiledGraph &compiled) {
            return reportDict(compiled.report());
          },
          "The plan per rank, as zero-report's figures: a dict of bytes "
          "(parameters, gradients, optimizer_slots, masters, model_state, "
          "persistent, peak_transient, peak_gathered, arena_bytes), stage, "
          "ranks, traffic per collective kind, parameter_groups, with "
          "offload or a budget memory_plan and, with config.zero.machine, "
          "prediction: the predicted step on that machine (step_seconds, "
          "exposed_communication_seconds, peak_device_bytes, "
          "fits_device_memory, tokens, tokens_per_second, model_flops, "
          "recompute_flops, mfu, the machine).")
      .def(
          "ir",
          [](const CompiledGraph &compiled, const std::string &form) {
            return compiled.str(parseForm(form));
          },
          py::arg("form") = "program",
          "The step as MLIR text: 'forward' (as built), 'step' (after "
          "train-autodiff, what zero-opt and zero-run --stage take) or "
          "'program' (the lowered program zero-run runs).")
      .def(
          "save",
          [](const CompiledGraph &compiled, const std::string &path,
             const std::string &form) {
            check(compiled.save(path, parseForm(form)));
          },
          py::arg("path"), py::arg("form") = "program",
          "Writes ir(form) to the file `path`, for zero-opt and zero-run.");

  m.def(
      "rank", []() { return communicator().rank(); },
      "This process's rank in the job (0 outside mpirun). Creates the "
      "communicator on first use.");
  m.def(
      "world_size", []() { return communicator().size(); },
      "The number of ranks of the job (1 outside mpirun): what "
      "graph.compile takes. Creates the communicator on first use.");
  m.def(
      "shutdown",
      []() {
        if (communicatorSlot()) {
          // A rank still waiting for this one in a collective fails at
          // once, naming it, instead of at its collective timeout.
          rt::leaveMpiJob("its script ended");
          communicatorSlot().reset();
          rt::finalizeMpi();
          mpiFinalized() = true;
        }
      },
      "Finalizes MPI for good; it runs by itself at interpreter exit. "
      "After it, anything that communicates (rank(), world_size(), a "
      "Trainer's collective calls) raises RuntimeError.");

  m.def(
      "set_collective_timeout",
      [](double seconds) {
        if (communicatorSlot())
          throw py::value_error(
              "set_collective_timeout must come before the first call that "
              "communicates (rank(), world_size(), a Trainer): the "
              "communicator already exists");
        if (!(seconds >= 0))
          throw py::value_error(
              "the timeout is a number of seconds >= 0 (0: wait forever), "
              "got " +
              std::to_string(seconds));
        communicatorOptions().timeoutSeconds = seconds;
      },
      py::arg("seconds"),
      "How long one collective may wait for the other ranks before it "
      "raises (default 120 s; 0 waits forever). Call it before anything "
      "communicates.");
  m.def(
      "_end_job_after_uncaught",
      [](const std::string &what) {
        // Only a job of several ranks: the others may be waiting for this
        // one in a collective, and MPI_Finalize at exit would wait for them
        // (until the collective timeout). One rank has nothing to end.
        std::unique_ptr<rt::Communicator> &comm = communicatorSlot();
        if (!comm || comm->size() < 2)
          return;
        std::string line = "zero: rank " + std::to_string(comm->rank()) + ": " +
                           what +
                           "; ending the job (the other ranks would wait "
                           "for this one)\n";
        std::fwrite(line.data(), 1, line.size(), stderr);
        rt::abortMpiJob(1);
      },
      "Ends the MPI job after an uncaught exception on this rank (the "
      "package's sys.excepthook calls it)");

  py::class_<PyTrainer>(m, "Trainer", "Runs a compiled graph on the ranks")
      .def(py::init([](std::shared_ptr<CompiledGraph> compiled, uint64_t seed,
                       const std::string &init,
                       std::vector<std::string> inputNames) {
             rt::Communicator &comm = communicator();
             if (compiled->ranks() != comm.size())
               throw py::value_error(
                   "the graph was compiled for " +
                   std::to_string(compiled->ranks()) +
                   " ranks but this job has " + std::to_string(comm.size()) +
                   "; compile with graph.compile(zero.world_size())");
             auto trainer = std::make_unique<PyTrainer>();
             trainer->trainer =
                 unwrap(Trainer::create(*compiled, comm, seed, init));
             trainer->compiled = std::move(compiled);
             trainer->seed = seed;
             trainer->inputNames = std::move(inputNames);
             return trainer;
           }),
           py::arg("compiled"), py::arg("seed") = 1, py::arg("init") = "",
           py::arg("input_names") = std::vector<std::string>{})
      .def(
          "step",
          [](PyTrainer &self, const std::vector<py::buffer> &batch) {
            requireMpi("Trainer.step");
            // The batch is checked before the ranks agree: a rank whose
            // batch is refused has begun nothing, and may call again.
            std::unique_ptr<rt::BatchSource> given;
            // Each rank takes its rows of the global batch it is given:
            // ranks given different ones would drop rows unseen.
            uint32_t digest = 0;
            if (!batch.empty()) {
              rt::TensorMap arrays = batchArrays(self, batch);
              digest = rt::stateChecksum(arrays);
              absl::StatusOr<std::unique_ptr<rt::BatchSource>> batches =
                  rt::createArrayBatches(self.trainer->executor(),
                                         std::move(arrays), "the batch",
                                         self.checkFinite, /*oneBatch=*/true);
              if (!batches.ok())
                raise(absl::Status(
                    batches.status().code(),
                    withInputNames(batches.status(), self.inputNames)));
              // Several global batches at once would train on one of them
              // per call, the next on the next call: not what step(batch)
              // says. (zero-run's --data files hold one per step, in turn.)
              if (int64_t held = (*batches)->batchesHeld(); held != 1)
                raise(absl::InvalidArgumentError(
                    absl::StrCat("step takes one global batch, and the arrays "
                                 "hold ",
                                 held, "; call step once per batch")));
              given = *std::move(batches);
            }
            agreeOnCall(self, Call::step, digest);
            CollectiveScope scope(self, Call::step);
            if (given) {
              self.trainer->useBatches(std::move(given));
              self.callerBatches = true;
            } else if (self.callerBatches) {
              self.trainer->useBatches(unwrap(rt::createSyntheticBatches(
                  self.trainer->executor(), self.seed)));
              self.callerBatches = false;
            }
            py::gil_scoped_release release;
            return unwrap(self.trainer->step());
          },
          py::arg("batch") = std::vector<py::buffer>{})
      .def_readwrite("check_finite", &PyTrainer::checkFinite)
      .def_property(
          "learning_rate",
          [](const PyTrainer &self) { return self.trainer->learningRate(); },
          [](PyTrainer &self, double lr) {
            check(self.trainer->setLearningRate(lr));
          })
      .def("learning_rates",
           [](const PyTrainer &self) { return self.trainer->learningRates(); })
      .def(
          "device_memory",
          [](PyTrainer &self) -> py::object {
            std::optional<rt::ExecutionBackend::DeviceMemory> memory =
                self.trainer->executor().backend().deviceMemory();
            if (!memory)
              return py::none();
            py::dict figures;
            figures["allocated_bytes"] = memory->allocatedBytes;
            figures["peak_allocated_bytes"] = memory->peakAllocatedBytes;
            figures["used_bytes"] = memory->usedBytes;
            figures["total_bytes"] = memory->totalBytes;
            return std::move(figures);
          },
          "The device's memory now, on a GPU backend (None on CPU ranks): "
          "allocated_bytes and peak_allocated_bytes, what the runtime's "
          "buffers and arena hold and held at most; used_bytes and "
          "total_bytes, the driver's (cudaMemGetInfo: the CUDA context, "
          "cuBLAS and NCCL workspaces and other processes included).")
      .def(
          "evaluate",
          [](PyTrainer &self, const std::vector<py::buffer> &batch,
             bool outputs) -> py::object {
            requireMpi("Trainer.evaluate");
            rt::TensorMap arrays = batchArrays(self, batch);
            agreeOnCall(self, Call::evaluate, rt::stateChecksum(arrays));
            CollectiveScope scope(self, Call::evaluate);
            absl::StatusOr<Trainer::Evaluation> evaluation;
            {
              py::gil_scoped_release release;
              evaluation = self.trainer->evaluateWithOutputs(std::move(arrays),
                                                             "the batch");
            }
            if (!evaluation.ok())
              raise(absl::Status(
                  evaluation.status().code(),
                  withInputNames(evaluation.status(), self.inputNames)));
            if (!outputs)
              return py::float_(evaluation->loss);
            py::dict named;
            for (const auto &[name, tensor] : evaluation->outputs)
              named[py::str(name)] = toNumpy(tensor);
            return py::make_tuple(evaluation->loss, named);
          },
          py::arg("batch"), py::arg("outputs") = false)
      .def("state_dict",
           [](PyTrainer &self) {
             requireMpi("Trainer.state_dict");
             agreeOnCall(self, Call::stateDict);
             CollectiveScope scope(self, Call::stateDict);
             rt::TensorMap state = unwrap(self.trainer->gatherState());
             py::dict dict;
             for (const auto &[name, tensor] : state)
               dict[py::str(name)] = toNumpy(tensor);
             return dict;
           })
      .def(
          "load_state_dict",
          [](PyTrainer &self, const py::object &source) {
            requireMpi("Trainer.load_state_dict");
            rt::TensorMap state;
            std::string what = "load_state_dict";
            if (py::isinstance<py::str>(source)) {
              what = source.cast<std::string>();
              state = unwrap(rt::readSafetensors(what));
            } else if (py::isinstance<py::dict>(source)) {
              for (auto [key, value] : source.cast<py::dict>()) {
                std::string name = py::str(key);
                state[name] =
                    stateFromNumpy(value, "load_state_dict: '" + name + "'");
              }
            } else {
              throw py::type_error(
                  "load_state_dict takes a dict of numpy arrays (as "
                  "state_dict gives) or the path of a .safetensors file, not " +
                  std::string(py::str(source.get_type().attr("__name__"))));
            }
            // The ranks compare what they were given: one rank loading
            // alone would leave the others' shards as they were.
            agreeOnCall(self, Call::loadStateDict,
                        communicator().size() > 1 ? rt::stateChecksum(state)
                                                  : 0);
            check(self.trainer->loadStateDict(state, what));
          },
          py::arg("state"))
      .def(
          "save",
          [](PyTrainer &self, const std::string &root, int keep) {
            requireMpi("Trainer.save");
            if (keep < 0)
              throw py::value_error(
                  "keep must be 0 (keep every checkpoint) or the number of "
                  "newest checkpoints to keep, got " +
                  std::to_string(keep));
            agreeOnCall(self, Call::save);
            CollectiveScope scope(self, Call::save);
            return unwrap(self.trainer->save(root, keep));
          },
          py::arg("root"), py::arg("keep") = 0)
      .def(
          "load",
          [](PyTrainer &self, const std::string &path,
             std::optional<int64_t> scheduleTotal) {
            requireMpi("Trainer.load");
            agreeOnCall(self, Call::load);
            CollectiveScope scope(self, Call::load);
            check(self.trainer->load(path, scheduleTotal));
          },
          py::arg("path"), py::arg("schedule_total") = py::none())
      .def_property_readonly(
          "steps_done",
          [](const PyTrainer &self) { return self.trainer->stepsDone(); })
      .def_property_readonly(
          "initial_state_from_rank0",
          [](const PyTrainer &self) {
            return self.trainer->initialStateFromRankZero();
          },
          "The init file's tensors that differed from rank 0's on some rank "
          "(every rank took rank 0's, as DDP does)")
      .def_property_readonly("last_step", [](const PyTrainer &self) {
        // zero.Trainer.metrics adds the batch's throughput to these.
        const Trainer::StepMetrics &m = self.trainer->lastStep();
        py::dict metrics;
        auto optional = [](const std::optional<double> &value) -> py::object {
          return value ? py::object(py::float_(*value)) : py::none();
        };
        metrics["step"] = m.step;
        metrics["loss"] = m.loss;
        metrics["grad_norm"] = optional(m.gradNorm);
        metrics["learning_rates"] = m.learningRates;
        metrics["loss_scale"] = optional(m.lossScale);
        metrics["skipped"] = m.skipped;
        metrics["skipped_steps"] = m.skippedSteps;
        metrics["seconds"] = m.seconds;
        return metrics;
      });
}

} // namespace zero::python
