#include "worker/actions/cuda.h"

#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/util/Exception.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>

#include "core/multiproc.h"
#include "platform/device.h"
#include "platform/nvml.h"
#include "worker/loss_scaler.h"

namespace tunebench::cuda_runtime {

using nlohmann::json;

namespace {

// Counts LibTorch's "called a synchronizing CUDA operation" warnings (sync debug mode) and
// passes any other warning on.
class SyncCounter : public c10::WarningHandler {
 public:
  void process(const c10::Warning& warning) override {
    if (warning.msg().find("synchronizing CUDA operation") != std::string::npos) {
      ++count;
    } else {
      previous->process(warning);
    }
  }
  c10::WarningHandler* previous = c10::WarningUtils::get_warning_handler();
  int64_t count = 0;
};

// A CUDA event through the runtime API, which is the same in every LibTorch version (LibTorch's own
// event class moved from at::cuda to c10::cuda). Waiting on an event never recorded is a no-op.
class Event {
 public:
  explicit Event(bool timing = false) {
    C10_CUDA_CHECK(
        cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
  }
  ~Event() { cudaEventDestroy(event_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(const c10::cuda::CUDAStream& stream) {
    C10_CUDA_CHECK(cudaEventRecord(event_, stream.stream()));
    recorded_ = true;
  }
  void block(const c10::cuda::CUDAStream& stream) const {
    if (recorded_) C10_CUDA_CHECK(cudaStreamWaitEvent(stream.stream(), event_, 0));
  }
  void synchronize() const { C10_CUDA_CHECK(cudaEventSynchronize(event_)); }
  double seconds_since(const Event& start) const {
    float ms = 0;
    C10_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, event_));
    return ms / 1000.0;
  }

 private:
  cudaEvent_t event_ = nullptr;
  bool recorded_ = false;
};

// A fresh tensor like `t` (same shape and dtype; integers below `high`) made on `device`.
torch::Tensor fresh_like(const torch::Tensor& t, int64_t high, const torch::Device& device) {
  const auto options = t.options().device(device);
  if (t.is_floating_point()) return torch::randn(t.sizes(), options);
  return torch::randint(std::max<int64_t>(high, 1), t.sizes(), options);
}

c10::DeviceIndex gpu_of(const json& settings) {
  const json process = settings.value(multiproc::kProcessSetting, json::object());
  return static_cast<c10::DeviceIndex>(process.value("gpu", 0));
}

class CudaTrial : public device_trial::DeviceTrial {
 public:
  // A rank of a distributed trial runs on its own GPU (multiproc::split's "gpu"); every other
  // trial on GPU 0.
  explicit CudaTrial(const TrialSpec& spec)
      : settings_(spec.settings),
        train_(spec.mode == Mode::train),
        device_(torch::kCUDA, gpu_of(spec.settings)) {}

  torch::Device device() const override { return device_; }

  void prepare(torch::nn::Module& module, models::Batch& batch) override {
    // Everything made here (events, streams, buffers) belongs to the trial's GPU, which for a
    // rank is not GPU 0; the rank has selected it by now (worker/ddp.h Rank::join).
    c10::cuda::CUDAGuard on_gpu(device_);
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof(bus), device_.index()) == cudaSuccess) {
      gpu_.pci_bus_id = bus;
    }
    gpu_.index = device_.index();
    if (settings_.contains("tf32")) {
      const bool on = settings_["tf32"] == true;
      at::globalContext().setAllowTF32CuBLAS(on);
      at::globalContext().setAllowTF32CuDNN(on);
    }
    if (settings_.contains("cudnn_benchmark")) {
      at::globalContext().setBenchmarkCuDNN(settings_["cudnn_benchmark"] == true);
    }
    module.to(device_);
    const torch::Tensor host_input = batch.inputs[0];
    for (auto& input : batch.inputs) input = input.to(device_);
    if (batch.target.defined()) batch.target = batch.target.to(device_);
    if (!host_input.is_floating_point()) high_ = host_input.max().item<int64_t>() + 1;

    // The per-step input pipeline of the transfer knobs.
    pinned_ = settings_.value("pinned_memory", false) == true || has("streams_overlap");
    copy_each_step_ = has("pinned_memory") || has("streams_overlap");
    if (copy_each_step_) {
      host_ = pinned_ ? host_input.pin_memory() : host_input.clone();
      for (auto& buffer : buffers_) buffer = batch.inputs[0].clone();
      overlap_ = settings_.value("streams_overlap", false) == true;
      if (overlap_) {
        for (auto& e : ready_) e.emplace();
        for (auto& e : consumed_) e.emplace();
        copy_stream_ = c10::cuda::getStreamFromPool(false, device_.index());
        // The buffers are written on the copy stream: the allocator must wait for its work
        // before it hands their blocks out again (to the other arm of a pair, say).
        for (auto& buffer : buffers_) {
          c10::cuda::CUDACachingAllocator::recordStream(buffer.storage().data_ptr(),
                                                        copy_stream_.value());
        }
        ready_[0]->record(c10::cuda::getCurrentCUDAStream(device_.index()));
      }
    }
    if (settings_.value("varying_shapes", false) == true && batch.inputs[0].dim() == 4) {
      varying_base_ = batch.inputs[0];
      min_side_ = std::max<int64_t>(32, varying_base_.size(2) * 3 / 4 / 8 * 8);
    }
    if (train_ && amp_is_fp16()) scaler_.emplace(device_);
  }

  device_trial::Step wrap(device_trial::Step step, models::Batch& batch) override {
    step_ = step;
    batch_ = &batch;
    return [this, step, &batch]() {
      std::optional<c10::WarningUtils::WarningHandlerGuard> counting;
      SyncCounter counter;
      if (measuring_) {
        counting.emplace(&counter);
        c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_WARN);
      }
      feed(batch);
      torch::Tensor out;
      if (settings_.value("cuda_graphs", false) == true) {
        if (!graph_) capture(step);
        graph_->replay();
        out = graph_out_;
        if (measuring_) ++replays_;
      } else {
        out = step();
      }
      // The buffer this step read may be refilled once the step's kernels are queued, not before.
      if (overlap_) consumed_[cur_]->record(c10::cuda::getCurrentCUDAStream(device_.index()));
      if (has("avoid_sync") && settings_["avoid_sync"] == false) {
        (void)out.item<double>();  // the per-step host read that logging a loss does
        if (measuring_) ++loss_items_;
      }
      if (has("empty_cache") && settings_["empty_cache"] == false) {
        c10::cuda::CUDACachingAllocator::emptyCache();
        if (measuring_) ++empty_caches_;
      }
      if (measuring_) {
        c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
        syncs_ += counter.count;
        ++steps_;
      }
      return out;
    };
  }

  c10::ScalarType amp_dtype(const json& value) const override {
    return value == "bf16" ? torch::kBFloat16 : torch::kHalf;
  }

  void backward(const torch::Tensor& loss) override {
    if (scaler_) {
      scaler_->scale(loss).backward();
    } else {
      loss.backward();
    }
  }

  void step(const std::vector<torch::Tensor>& params,
            const std::function<void()>& optimizer_step) override {
    if (scaler_) {
      scaler_->step(params, optimizer_step);
    } else {
      optimizer_step();
    }
  }

  // The iterations of one sample between two events and one synchronisation at the end, so that
  // the host runs ahead of the GPU as in a training loop that does not sync (avoid_sync's ON
  // arm); a per-step host read (its OFF arm) still stalls every step.
  double time_iterations(const device_trial::Step& iteration, int n) override {
    c10::cuda::CUDAGuard on_gpu(device_);
    const auto stream = c10::cuda::getCurrentCUDAStream(device_.index());
    Event start(/*timing=*/true), end(/*timing=*/true);
    // The allocator's peaks are taken over each sample's own span: a worker holding both arms of a
    // pair runs their samples in turn on one allocator, so one reset at the start of the measured
    // region would give both arms the higher arm's peak. (Host bookkeeping: no synchronisation.)
    if (measuring_) device::reset_peak_memory(device_);
    start.record(stream);
    for (int i = 0; i < n; ++i) {
      auto out = iteration();
      (void)out;
    }
    end.record(stream);
    end.synchronize();
    if (measuring_) {
      sample_peak_bytes_ = std::max(sample_peak_bytes_, device::peak_memory_bytes(device_));
      sample_reserved_peak_bytes_ =
          std::max(sample_reserved_peak_bytes_, device::reserved_peak_bytes(device_));
    }
    return end.seconds_since(start);
  }

  void begin_measurement() override {
    // A graph is captured before the measured region even with warmup 0, so capture and its
    // synchronisations never land in a sample.
    if (settings_.value("cuda_graphs", false) == true && !graph_ && step_) {
      feed(*batch_);
      capture(step_);
    }
    device::synchronize(device_);
    device::reset_peak_memory(device_);
    sample_peak_bytes_ = sample_reserved_peak_bytes_ = -1;
    state_start_ = nvml::device_state(gpu_);
    energy_start_ = nvml::energy_millijoules(gpu_);
    measuring_ = true;
  }

  void end_measurement(int64_t iterations, int64_t items_per_iteration) override {
    device::synchronize(device_);
    measuring_ = false;
    // The peaks, read now (later steps, the tensor-peak step and evidence that runs a full-batch
    // backward, must not raise them): over the samples' spans, or the region where none ran.
    peak_bytes_ = sample_peak_bytes_ >= 0 ? sample_peak_bytes_ : device::peak_memory_bytes(device_);
    reserved_peak_bytes_ = sample_reserved_peak_bytes_ >= 0 ? sample_reserved_peak_bytes_
                                                            : device::reserved_peak_bytes(device_);
    state_end_ = nvml::device_state(gpu_);
    const auto energy_end = nvml::energy_millijoules(gpu_);
    // NVML's energy counter is the whole GPU's: with two arms alive in this process (a paired
    // worker), the region holds both arms' samples and the energy is no one arm's.
    shared_energy_ = live_trials() > 1;
    if (!shared_energy_ && energy_start_ && energy_end && iterations > 0) {
      energy_per_item_ =
          double(*energy_end - *energy_start_) / 1000.0 / double(iterations * items_per_iteration);
    }
  }

  int64_t peak_memory_bytes() const override {
    return peak_bytes_ >= 0 ? peak_bytes_ : device::peak_memory_bytes(device_);
  }

  json evidence() const override {
    json e = json::object();
    e["device"] = device_.str();
    e["tf32_matmul"] = at::globalContext().allowTF32CuBLAS();
    e["tf32_cudnn"] = at::globalContext().allowTF32CuDNN();
    e["cudnn_benchmark"] = at::globalContext().benchmarkCuDNN();
    e["input_shapes_seen"] = int64_t(shapes_seen_.size());
    const double steps = std::max<int64_t>(1, steps_);
    e["empty_cache_calls_per_step"] = empty_caches_ / steps;
    e["host_batch_pinned"] = copy_each_step_ && host_.is_pinned();
    e["input_created_on_device"] = created_on_device_;
    e["loss_item_calls_per_step"] = loss_items_ / steps;
    e["cuda_graph_replay"] = replays_ > 0;
    e["copy_stream"] = !copy_each_step_ ? "none" : overlap_ ? "separate" : "compute";
    e["loss_scaling"] = scaler_.has_value();
    if (scaler_) {
      e["loss_scale_final"] = scaler_->current_scale();
      e["loss_scale_skipped_steps"] = scaler_->skipped_steps();
    }
    e["host_syncs_per_step"] = syncs_ / steps;
    e["device_peak_bytes"] = peak_memory_bytes();  // also the trial's device_peak_bytes
    e["device_reserved_peak_bytes"] =
        reserved_peak_bytes_ >= 0 ? reserved_peak_bytes_ : device::reserved_peak_bytes(device_);
    e["gpu_pci_bus_id"] = gpu_.pci_bus_id;
    if (input_format_) {
      e["step_input_channels_last"] = *input_format_ == at::MemoryFormat::ChannelsLast;
    }
    if (energy_per_item_) {
      e["gpu_energy_joules_per_item"] = *energy_per_item_;
    } else if (shared_energy_) {
      e["gpu_energy_joules_per_item"] =
          "not available: both arms ran in this process, and NVML's energy counter is the GPU's";
    } else {
      const std::string why = nvml::unavailable_reason();
      e["gpu_energy_joules_per_item"] =
          "not available: " + (why.empty() ? "this GPU or driver has no NVML energy counter" : why);
    }
    e["gpu_state_start"] = state_start_;
    e["gpu_state_end"] = state_end_;
    return e;
  }

 private:
  bool has(const char* knob) const { return settings_.contains(knob); }
  bool amp_is_fp16() const {
    return has("amp") && settings_["amp"] != false && amp_dtype(settings_["amp"]) == torch::kHalf;
  }

  // The memory format of the batch's input when the first step runs (after the precision family
  // made it channels-last, which happens after prepare()): every per-step input keeps it.
  void adopt_input_format(const models::Batch& batch) {
    if (input_format_) return;
    const auto format = batch.inputs[0].suggest_memory_format();
    input_format_ = format;
    if (format == at::MemoryFormat::Contiguous) return;
    if (host_.defined()) {
      host_ = host_.contiguous(format);
      if (pinned_ && !host_.is_pinned()) host_ = host_.pin_memory();
    }
    for (auto& buffer : buffers_) {
      if (buffer.defined()) buffer = buffer.contiguous(format);
    }
    if (varying_base_.defined()) varying_base_ = varying_base_.contiguous(format);
  }

  // Puts this step's input in place, as the transfer knobs say, in the input's memory format.
  void feed(models::Batch& batch) {
    adopt_input_format(batch);
    const auto format = *input_format_;
    if (varying_base_.defined()) {
      // A new resolution each step (32 sizes, 8 pixels apart, from 3/4 of the original): cuDNN's
      // autotuner meets shapes it has not tuned throughout the measured region, as with
      // variable-size inputs, instead of a few it tuned during warm-up.
      const int64_t side = min_side_ + 8 * (cycle_++ % 32);
      batch.inputs[0] = at::upsample_bilinear2d(varying_base_, {side, side},
                                                /*align_corners=*/false)
                            .contiguous(format);
    } else if (has("on_device_alloc")) {
      created_on_device_ = settings_["on_device_alloc"] == true;
      batch.inputs[0] =
          created_on_device_
              ? fresh_like(batch.inputs[0], high_, device_).contiguous(format)
              : fresh_like(batch.inputs[0], high_, torch::kCPU).contiguous(format).to(device_);
    } else if (copy_each_step_ && !overlap_) {
      buffers_[0].copy_(host_, /*non_blocking=*/pinned_);
      batch.inputs[0] = buffers_[0];
    } else if (overlap_) {
      // Step k computes on buffer k % 2, filled one step ahead on the copy stream; the copy into
      // the other buffer waits until the step that last read it has been queued.
      // (consumed_[cur] is recorded in wrap(), after the step's kernels are queued.)
      auto compute = c10::cuda::getCurrentCUDAStream(device_.index());
      const size_t cur = size_t(cycle_++) % 2, next = 1 - cur;
      cur_ = cur;
      ready_[cur]->block(compute);
      batch.inputs[0] = buffers_[cur];
      consumed_[next]->block(copy_stream_.value());
      {
        c10::cuda::CUDAStreamGuard guard(copy_stream_.value());
        buffers_[next].copy_(host_, /*non_blocking=*/true);
        ready_[next]->record(copy_stream_.value());
      }
    }
    if (measuring_) shapes_seen_.insert(batch.inputs[0].sizes().vec());
  }

  // Captures the step into a CUDA graph on a side stream after three eager runs there (cuBLAS
  // and cuDNN handles and workspaces, and in training the gradients and momentum buffers, are
  // made before capture). A training step's backward runs on the stream its forward ran on, so
  // autograd's kernels are captured too, as in PyTorch's whole-network capture.
  void capture(const device_trial::Step& step) {
    auto side = c10::cuda::getStreamFromPool(false, device_.index());
    device::synchronize(device_);
    {
      c10::cuda::CUDAStreamGuard guard(side);
      for (int i = 0; i < 3; ++i) (void)step();
    }
    device::synchronize(device_);
    graph_ = std::make_unique<at::cuda::CUDAGraph>();
    {
      c10::cuda::CUDAStreamGuard guard(side);
      graph_->capture_begin();
      graph_out_ = step();
      graph_->capture_end();
    }
    device::synchronize(device_);
  }

  json settings_;
  bool train_;
  torch::Device device_;
  int64_t high_ = 2;
  bool pinned_ = false, copy_each_step_ = false, overlap_ = false, created_on_device_ = false;
  torch::Tensor host_;
  torch::Tensor buffers_[2];
  std::optional<Event> ready_[2], consumed_[2];  // made in prepare(), on the trial's GPU
  size_t cur_ = 0;                               // the buffer the current step reads
  std::optional<at::MemoryFormat> input_format_;
  device_trial::Step step_;
  models::Batch* batch_ = nullptr;
  nvml::Gpu gpu_;
  int64_t peak_bytes_ = -1, reserved_peak_bytes_ = -1;
  std::optional<c10::cuda::CUDAStream> copy_stream_;
  torch::Tensor varying_base_;
  int64_t min_side_ = 32;
  std::set<std::vector<int64_t>> shapes_seen_;
  int64_t cycle_ = 0;
  std::unique_ptr<at::cuda::CUDAGraph> graph_;
  torch::Tensor graph_out_;
  std::optional<amp::LossScaler> scaler_;
  bool measuring_ = false;
  int64_t steps_ = 0, syncs_ = 0, replays_ = 0, loss_items_ = 0, empty_caches_ = 0;
  json state_start_, state_end_;
  std::optional<uint64_t> energy_start_;
  std::optional<double> energy_per_item_;
  int64_t sample_peak_bytes_ = -1, sample_reserved_peak_bytes_ = -1;
  bool shared_energy_ = false;
  // CudaTrials alive in this process (two where a worker holds both arms of a pair).
  static int& live_trials() {
    static int n = 0;
    return n;
  }
  struct Alive {
    Alive() { ++live_trials(); }
    ~Alive() { --live_trials(); }
    Alive(const Alive&) = delete;
    Alive& operator=(const Alive&) = delete;
  } alive_;
};

}  // namespace

std::unique_ptr<device_trial::DeviceTrial> make(const TrialSpec& spec) {
  return std::make_unique<CudaTrial>(spec);
}

}  // namespace tunebench::cuda_runtime
