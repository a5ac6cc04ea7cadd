//===- CudaSupport.cpp - Shared pieces of the CUDA binders ----------------===//

#include "CudaSupport.h"
#include "zero/support/Status.h"

namespace zero::rt::cuda {

absl::Status cudaStatus(absl::string_view kernel, cudaError_t error,
                        absl::string_view what) {
  if (error == cudaSuccess)
    return absl::OkStatus();
  return absl::InternalError(absl::StrCat(kernel, ": ", what, ": ",
                                          cudaGetErrorName(error), " (",
                                          cudaGetErrorString(error), ")"));
}

absl::StatusOr<std::shared_ptr<DeviceScratch>>
DeviceScratch::allocate(absl::string_view kernel, int64_t bytes) {
  void *data = nullptr;
  // cudaMalloc(0) may return null; one byte keeps `as()` a valid pointer.
  ZERO_RETURN_IF_ERROR(cudaStatus(
      kernel,
      cudaMalloc(&data, static_cast<size_t>(bytes > 0 ? bytes : int64_t{1})),
      absl::StrCat("allocating ", bytes, " bytes of scratch")));
  return std::shared_ptr<DeviceScratch>(new DeviceScratch(data));
}

DeviceScratch::~DeviceScratch() { cudaFree(data_); }

absl::StatusOr<StepLr> readStepLr(const BindRequest &request) {
  // The CPU binder has checked these params; this only reads them.
  StepLr rate;
  ZERO_ASSIGN_OR_RETURN(double lr, cpu::getF64(request, "lr"));
  rate.lr = static_cast<float>(lr);
  rate.exactLr = lr;
  const KernelParam *kind = request.params.find("schedule");
  if (!kind || kind->kind != KernelParam::Kind::string)
    return rate;
  rate.scheduled = true;
  LrSchedule &schedule = rate.schedule;
  if (kind->string == "linear")
    schedule.kind = LrSchedule::Kind::linear;
  else if (kind->string == "cosine")
    schedule.kind = LrSchedule::Kind::cosine;
  if (request.params.contains("warmup"))
    if (absl::StatusOr<int64_t> warmup = cpu::getI64(request, "warmup");
        warmup.ok())
      schedule.warmup = *warmup;
  if (schedule.kind != LrSchedule::Kind::constant) {
    absl::StatusOr<int64_t> total = cpu::getI64(request, "total");
    absl::StatusOr<double> minLr = cpu::getF64Or(request, "min_lr", 0.0);
    if (!total.ok())
      return total.status();
    if (!minLr.ok())
      return minLr.status();
    schedule.total = *total;
    schedule.minLr = *minLr;
  }
  return rate;
}

} // namespace zero::rt::cuda
