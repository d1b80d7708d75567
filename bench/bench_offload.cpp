// bench_offload: one GPT trained with its optimizer state (and, at ZeRO-3, its parameter shard) on
// the device, in pinned host memory and in NVMe files. Prints per mode: ms per step, the optimizer
// step alone, the bytes read and written per step and the throughput of the streamed passes, beside
// the disk's own sequential O_DIRECT throughput measured in the same run, and the peak RSS of the
// process (each mode runs in a child process of its own, so the peaks do not mix).
// On a GPU (or the simulated one) the host updates offloaded state (ZeRO-Offload), and each mode's
// row also gives the last loss, the device and pinned-host peaks, the bytes copied each way per
// step, the host's exposed wait for them, the overlap against the copy engine's own rate (measured
// in the same run) and the CPU AdamW's rate.
//
//   bench_offload [--modes none,cpu,nvme] [--offload-path DIR] [--layers ..] [--grad-accum K] [--steps N]
//                 [--device auto]
//   bench_offload --model 1.5b      GPT-2 XL shape (1.56B parameters). On the CPU: ZeRO-3, parameters
//                                   and optimizer state on NVMe (the other modes only planned); on a
//                                   GPU: ZeRO-1, bf16, none vs cpu (it fits both ways)
//   bench_offload --model 7b        a 7B GPT (L=32, C=4096) on a GPU: ZeRO-1, bf16, optimizer state
//                                   in host memory (without offload it is only planned: no fit)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "best_call.hpp"
#include "flags/device_flag.hpp"
#include "flags/program_options.hpp"
#include "tessera/comm/device_communicator.hpp"
#include "tessera/launch/run_distributed.hpp"
#include "tessera/model/modules/gpt.hpp"
#include "tessera/planning/memory_plan.hpp"
#include "tessera/planning/plan_report.hpp"
#include "tessera/runtime/cpu/blas_core.hpp"
#include "tessera/runtime/cpu/host_memory_budget.hpp"
#include "tessera/runtime/device_factory.hpp"
#include "tessera/runtime/offload/aligned_buffer.hpp"
#include "tessera/runtime/offload/io_queue.hpp"
#include "tessera/runtime/offload/offload_file.hpp"
#include "tessera/sharding/sharded_engine.hpp"
#include "tessera/training/trainer.hpp"

namespace tessera {
namespace {

struct Options {
  std::string model = "default";  // default | 1.5b | 7b
  std::int64_t layers = 12, dim = 1024, heads = 16, vocab = 8192, seq_len = 128, micro = 4, accumulation = 1;
  int zero = 1, steps = 3, threads = 0;
  std::string modes = "none,cpu,nvme", path = ".", param_dtype = "f32", optimizer = "adamw";
  bool offload_params = false;  // ZeRO-3: the parameter shard follows the optimizer state
  std::int64_t disk_test_mib = 1024;
  std::string run_one;  // internal: run this mode and print one result line
  DeviceFlags device;   // --device, --gemm-math
};

struct Result {
  std::string mode;
  double ms_step = 0, ms_optimizer = 0;
  double read_bytes = 0, written_bytes = 0, stream_seconds = 0;  // per step
  double gather_read_bytes = 0;  // of read_bytes: parameter shards read for gathers (outside the passes)
  double peak_rss = 0, state_bytes = 0, nvme_bytes = 0;
  double first_loss = 0, loss = 0, device_peak = 0, pinned_peak = 0;  // losses: the first and last timed step
  HostUpdateStats host;                                               // per step
  std::string io;
};

GptConfig model_of(const Options& o) {
  GptConfig c;
  c.vocab_size = o.vocab;
  c.max_seq_len = o.seq_len;
  c.layers = o.layers;
  c.heads = o.heads;
  c.channels = o.dim;
  return c;
}

ShardingConfig sharding_of(const Options& o, const std::string& mode) {
  ShardingConfig c;
  c.stage = parse_zero_stage(o.zero);
  c.precision.param_dtype = parse_dtype(o.param_dtype, "--param-dtype");
  c.optimizer.kind = parse_optimizer_kind(o.optimizer);
  const OffloadTarget target = parse_offload_target(mode, "--modes");
  c.offload.optimizer = target;
  if (o.offload_params) c.offload.parameters = target;
  c.offload.nvme.path = o.path;
  return c;
}

std::int64_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return 0;
}

// One mode in this process: a warm-up step, then `steps` timed steps.
Result run_mode(const Options& o, const std::string& mode, Communicator& world) {
  auto device = open_device(o.device);
  // A GPU's collectives: NCCL, or MPI staged through pinned host memory (the simulated GPU).
  const std::unique_ptr<Communicator> device_world = make_device_world(*device, world, CommOptions{});
  Gpt model(model_of(o));
  ShardedEngine engine(model, *device, device_world ? *device_world : world, sharding_of(o, mode), 1234);
  Trainer trainer(engine);
  // The optimizer step is the time from the last backward phase to the end of the step.
  using Clock = std::chrono::steady_clock;
  Clock::time_point last_phase;
  double optimizer_seconds = 0.0;
  engine.set_phase_observer([&](const std::string& phase) {
    const auto now = Clock::now();
    if (phase == "step") optimizer_seconds += std::chrono::duration<double>(now - last_phase).count();
    last_phase = now;
  });
  const std::vector<MicroBatch> batches(static_cast<std::size_t>(o.accumulation),
                                        benchmarks::random_batch(*device, model_of(o), o.micro, 7));
  trainer.train_step(batches, 1e-4f);  // warm-up: records the unit order, first touches
  optimizer_seconds = 0.0;
  engine.reset_host_update_stats();
  device->memory().reset_peaks();
  device->memory(MemoryKind::kPinnedHost).reset_peaks();
  NvmeStore* store = engine.nvme_store();
  const NvmeIoStats before = store ? store->stats() : NvmeIoStats{};
  const auto t0 = Clock::now();
  Result r;
  for (int s = 0; s < o.steps; ++s) {
    r.loss = trainer.train_step(batches, 1e-4f).loss;
    if (s == 0) r.first_loss = r.loss;
  }
  device->synchronize();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.mode = mode;
  r.ms_step = 1e3 * seconds / o.steps;
  r.ms_optimizer = 1e3 * optimizer_seconds / o.steps;
  if (store) {
    const NvmeIoStats& after = store->stats();
    r.read_bytes = static_cast<double>(after.bytes_read - before.bytes_read) / o.steps;
    r.written_bytes = static_cast<double>(after.bytes_written - before.bytes_written) / o.steps;
    r.stream_seconds = (after.stream_seconds - before.stream_seconds) / o.steps;
    r.gather_read_bytes = static_cast<double>(after.bytes_read_whole - before.bytes_read_whole) / o.steps;
    r.io = store->describe();
  }
  for (MemoryKind kind : kAllMemoryKinds) {
    r.state_bytes += static_cast<double>(device->memory(kind).current(MemoryCategory::kOptimizerState));
  }
  r.nvme_bytes = static_cast<double>(device->memory(MemoryKind::kNvme).current_total());
  r.peak_rss = static_cast<double>(peak_rss_bytes());
  r.device_peak = static_cast<double>(device->memory().peak_total());
  r.pinned_peak = static_cast<double>(device->memory(MemoryKind::kPinnedHost).peak_total());
  const HostUpdateStats h = engine.host_update_stats();
  r.host.bytes_to_host = h.bytes_to_host / o.steps;
  r.host.bytes_to_device = h.bytes_to_device / o.steps;
  r.host.copy_wait_seconds = h.copy_wait_seconds / o.steps;
  r.host.update_seconds = h.update_seconds / o.steps;
  r.host.updated_elements = h.updated_elements / o.steps;
  return r;
}

std::string result_line(const Result& r) {
  std::ostringstream s;
  s.precision(17);
  s << "RESULT " << r.mode << ' ' << r.ms_step << ' ' << r.ms_optimizer << ' ' << r.read_bytes << ' ' << r.written_bytes
    << ' ' << r.stream_seconds << ' ' << r.peak_rss << ' ' << r.state_bytes << ' ' << r.nvme_bytes << ' '
    << r.gather_read_bytes << ' ' << r.first_loss << ' ' << r.loss << ' ' << r.device_peak << ' ' << r.pinned_peak
    << ' ' << r.host.bytes_to_host << ' ' << r.host.bytes_to_device << ' ' << r.host.copy_wait_seconds << ' '
    << r.host.update_seconds << ' ' << r.host.updated_elements;
  return s.str();
}

// Runs `mode` in a child process (this program with --run-one) and parses its result line.
bool run_child(const std::string& self, const std::vector<std::string>& args, const std::string& mode, Result& r) {
  std::string command = self;
  for (const std::string& a : args) command += " '" + a + "'";
  command += " --run-one " + mode;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return false;
  char line[4096];
  bool found = false;
  while (std::fgets(line, sizeof line, pipe) != nullptr) {
    std::istringstream in(line);
    std::string tag;
    in >> tag;
    if (tag != "RESULT") {
      std::fputs(line, stdout);  // the child's notices
      continue;
    }
    in >> r.mode >> r.ms_step >> r.ms_optimizer >> r.read_bytes >> r.written_bytes >> r.stream_seconds >> r.peak_rss >>
        r.state_bytes >> r.nvme_bytes >> r.gather_read_bytes >> r.first_loss >> r.loss >> r.device_peak >>
        r.pinned_peak >> r.host.bytes_to_host >> r.host.bytes_to_device >> r.host.copy_wait_seconds >>
        r.host.update_seconds >> r.host.updated_elements;
    found = true;
  }
  return ::pclose(pipe) == 0 && found;
}

struct DiskSpeed {
  double write_bytes_per_s = 0, read_bytes_per_s = 0;
  std::string how;
};

// Sequential O_DIRECT write then read of `bytes` in 4 MiB requests, 8 in flight, through the same
// file and queue code the store uses.
DiskSpeed measure_disk(const std::string& dir, std::int64_t bytes) {
  OffloadFile file(dir, 1 << 20, true);  // a rank number no job uses
  std::string refusal;
  auto queue = make_io_queue(file.fd(), file.path().string(), 32, false, &refusal);
  file.reserve(bytes);
  constexpr std::size_t kRequest = 4 << 20;
  constexpr int kInFlight = 8;
  AlignedBuffer buffer(nullptr, MemoryCategory::kCommBuffers);
  std::byte* data = buffer.reserve(kRequest * kInFlight);
  for (std::size_t i = 0; i < kRequest * kInFlight; ++i) data[i] = static_cast<std::byte>(i * 131u);
  auto pass = [&](IoOp op) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<IoQueue::Ticket> tickets(kInFlight, 0);
    std::int64_t offset = 0;
    for (int slot = 0; offset < bytes; slot = (slot + 1) % kInFlight) {
      if (tickets[static_cast<std::size_t>(slot)] != 0) queue->wait(tickets[static_cast<std::size_t>(slot)]);
      tickets[static_cast<std::size_t>(slot)] =
          queue->submit({op, data + static_cast<std::size_t>(slot) * kRequest, kRequest, offset});
      offset += static_cast<std::int64_t>(kRequest);
    }
    queue->wait_all();
    return static_cast<double>(bytes) / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  DiskSpeed d;
  d.write_bytes_per_s = pass(IoOp::kWrite);
  d.read_bytes_per_s = pass(IoOp::kRead);
  d.how = std::string(queue->name()) + (file.direct() ? ", O_DIRECT" : ", buffered");
  return d;
}

double gb(double bytes) { return bytes / 1e9; }

// The copy engine's own rate each way between pinned host memory and the device: 256 MiB copied
// on the copy stream, the best of 3 (best_call_ms), in bytes per second {to host, to device}.
std::pair<double, double> measure_copy_engine(Device& device) {
  constexpr std::int64_t kBytes = std::int64_t{256} << 20;
  Tensor pinned = Tensor::empty(device, {kBytes}, DType::kU8, MemoryCategory::kCommBuffers, MemoryKind::kPinnedHost);
  Tensor on_device = Tensor::zeros(device, {kBytes}, DType::kU8, MemoryCategory::kCommBuffers);
  std::memset(pinned.data(), 1, static_cast<std::size_t>(kBytes));
  Stream& copy = device.stream(StreamRole::kCopy);
  const auto bytes = static_cast<std::size_t>(kBytes);
  const double to_host_ms = benchmarks::best_call_ms(0.0, 3, [&] {
    device.copy_to_host_async(pinned.data(), on_device.data(), bytes, copy);
    copy.synchronize();
  });
  const double to_device_ms = benchmarks::best_call_ms(0.0, 3, [&] {
    device.copy_from_host_async(on_device.data(), pinned.data(), bytes, copy);
    copy.synchronize();
  });
  return {1e3 * static_cast<double>(kBytes) / to_host_ms, 1e3 * static_cast<double>(kBytes) / to_device_ms};
}

int run(int argc, char** argv) {
  Options o;
  po::options_description desc("Options");
  // clang-format off
  desc.add_options()
      ("model", value_with_default(&o.model),
       "default (the flags below) or 1.5b (GPT-2 XL shape, ZeRO-3, parameters and optimizer state on NVMe)")
      ("layers", value_with_default(&o.layers), "transformer blocks")
      ("dim", value_with_default(&o.dim), "channels")
      ("heads", value_with_default(&o.heads), "attention heads")
      ("vocab", value_with_default(&o.vocab), "vocabulary")
      ("seq-len", value_with_default(&o.seq_len), "tokens per sequence")
      ("micro-batch", value_with_default(&o.micro), "sequences per forward/backward")
      ("grad-accum", value_with_default(&o.accumulation),
       "micro-batches per optimizer step (the state moves once per optimizer step)")
      ("zero", value_with_default(&o.zero), "ZeRO stage (one rank)")
      ("param-dtype", value_with_default(&o.param_dtype), "stored parameters: f32 or bf16")
      ("optimizer", value_with_default(&o.optimizer),
       "adamw (f32 master + m, v: 12 bytes per parameter) or adamw8bit (f32 master + 8-bit m, v: about 6)")
      ("offload-params", po::bool_switch(&o.offload_params), "ZeRO-3: offload the parameter shard too")
      ("steps", value_with_default(&o.steps), "timed steps per mode (after one warm-up step)")
      ("modes", value_with_default(&o.modes), "comma-separated: none, cpu, nvme")
      ("offload-path", value_with_default(&o.path), "directory of the offload files (on the NVMe)")
      ("disk-test-mib", value_with_default(&o.disk_test_mib),
       "MiB written and read to measure the disk's sequential O_DIRECT throughput")
      ("threads", value_with_default(&o.threads), "CPU threads (0: all cores)")
      ("run-one", po::value(&o.run_one), "internal: run one mode and print its result line");
  // clang-format on
  add_device_option(desc, &o.device);
  ProgramOptions program("bench_offload",
                         "bench_offload: one GPT with its optimizer state on the device, in pinned host memory and in "
                         "NVMe files");
  program.add(desc);
  if (!program.parse(argc, argv)) return 0;
  std::vector<std::string> args;  // passed on to the children
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  // Whether the device is discrete (its memory is not host memory): decides the presets and rows.
  // (Known from the choice, without opening a device in every child process a second time.)
  const DeviceChoice choice = resolve_device_choice(parse_device_choice(o.device.device));
  const bool discrete = choice == DeviceChoice::kCuda || choice == DeviceChoice::kSimulatedGpu;
  if (o.model == "1.5b" && !discrete) {
    o.layers = 48, o.dim = 1600, o.heads = 25, o.vocab = 50304, o.micro = 1, o.zero = 3, o.offload_params = true;
    if (program.given("modes")) throw std::invalid_argument("--model 1.5b runs nvme only on the CPU");
    o.modes = "nvme";
  } else if (o.model == "1.5b" || o.model == "7b") {
    const bool big = o.model == "7b";
    o.layers = big ? 32 : 48, o.dim = big ? 4096 : 1600, o.heads = big ? 32 : 25, o.vocab = 50304;
    if (!program.given("seq-len")) o.seq_len = 1024;
    if (!program.given("micro-batch")) o.micro = big ? 1 : 4;
    if (!program.given("zero")) o.zero = 1;
    if (!program.given("param-dtype")) o.param_dtype = "bf16";
    if (!program.given("steps")) o.steps = 10;
    if (!program.given("modes")) o.modes = big ? "cpu" : "none,cpu";
    if (!discrete) throw std::invalid_argument("--model 7b is for a GPU (--device cuda)");
  } else if (o.model != "default") {
    throw std::invalid_argument("--model '" + o.model + "': use default, 1.5b or 7b");
  }
  if (o.threads > 0) set_cpu_threads(o.threads);
  if (!o.run_one.empty()) {
    return run_distributed(argc, argv, [&](DistributedContext& ctx) {
      std::printf("%s\n", result_line(run_mode(o, o.run_one, ctx.world())).c_str());
      return 0;
    });
  }

  const std::unique_ptr<Device> device = open_device_or_report(o.device, "bench_offload");
  if (!device) return 2;
  const GptConfig gpt = model_of(o);
  std::printf("%s\n", device_line(o.device, *device).c_str());
  std::printf(
      "bench_offload: GPT %s, %lld parameters, ZeRO-%d on 1 rank, micro-batch %lld x accumulation %lld, "
      "params %s, %s%s\n",
      gpt.to_string().c_str(), static_cast<long long>(Gpt(gpt).parameter_count()), o.zero,
      static_cast<long long>(o.micro), static_cast<long long>(o.accumulation), o.param_dtype.c_str(),
      o.optimizer.c_str(), o.offload_params ? ", parameters offloaded too" : "");
  // What each mode needs in host memory, from the planner (the engine on the meta device).
  const std::int64_t available = host_memory_budget().share(1);
  for (const char* mode : {"none", "cpu", "nvme"}) {
    PlanConfig plan;
    plan.model = ModelSpec{"bench", gpt, 0};
    plan.seq_len = o.seq_len;
    const ShardingConfig s = sharding_of(o, mode);
    plan.precision = s.precision;
    plan.optimizer = s.optimizer;
    plan.stage = s.stage;
    plan.micro_batch = o.micro;
    plan.accumulation = o.accumulation;
    plan.offload = s.offload;
    plan.host_is_device = !discrete;
    const MemoryPlan p = plan_memory(plan);
    if (discrete) {
      const std::int64_t free = device->memory_budget().share(1);
      std::printf("planned %-4s: device peak %s (%s free), pinned host %s, %s in NVMe files; host %s available\n", mode,
                  format_decimal_bytes(p.needed()).c_str(), free >= 0 ? format_decimal_bytes(free).c_str() : "unknown",
                  format_decimal_bytes(p.host.peak_total).c_str(), format_decimal_bytes(p.nvme.current_total).c_str(),
                  available >= 0 ? format_decimal_bytes(available).c_str() : "unknown");
      continue;
    }
    std::printf("planned %-4s: peak %s host memory (of which optimizer state %s), %s in NVMe files; %s available\n",
                mode, format_decimal_bytes(p.needed()).c_str(),
                format_decimal_bytes(p.before_step.current_of(MemoryCategory::kOptimizerState) +
                                     p.host.current_of(MemoryCategory::kOptimizerState))
                    .c_str(),
                format_decimal_bytes(p.nvme.current_total).c_str(),
                available >= 0 ? format_decimal_bytes(available).c_str() : "unknown");
  }
  std::pair<double, double> engine_rate{0, 0};
  if (discrete) {
    engine_rate = measure_copy_engine(*device);
    std::printf("copy engine (pinned host memory, 256 MiB, best of 3): to host %.2f GB/s, to device %.2f GB/s\n",
                gb(engine_rate.first), gb(engine_rate.second));
  }
  const DiskSpeed disk = measure_disk(o.path, o.disk_test_mib << 20);
  std::printf("disk under %s (%s, %lld MiB sequential): write %.2f GB/s, read %.2f GB/s\n\n", o.path.c_str(),
              disk.how.c_str(), static_cast<long long>(o.disk_test_mib), gb(disk.write_bytes_per_s),
              gb(disk.read_bytes_per_s));

  std::printf("%-5s %10s %10s %10s %10s %11s %9s %11s %11s\n", "mode", "ms/step", "optim ms", "read GB", "write GB",
              "stream GB/s", "of disk", "peak RSS GB", "state GB");
  std::map<std::string, Result> results;
  std::vector<std::string> order;  // the modes as given
  std::stringstream modes(o.modes);
  for (std::string mode; std::getline(modes, mode, ',');) {
    Result r;
    if (!run_child(argv[0], args, mode, r)) {
      std::printf("%-5s failed (see above)\n", mode.c_str());
      continue;
    }
    // The streamed passes' traffic (the gathers' parameter reads happen outside them), and the
    // disk's own time for it over the time the passes took.
    const double pass_read = r.read_bytes - r.gather_read_bytes;
    const double ideal = pass_read / disk.read_bytes_per_s + r.written_bytes / disk.write_bytes_per_s;
    const double stream_rate = r.stream_seconds > 0 ? (pass_read + r.written_bytes) / r.stream_seconds : 0.0;
    std::printf("%-5s %10.1f %10.1f %10.3f %10.3f %11.2f %8.0f%% %11.3f %11.3f\n", mode.c_str(), r.ms_step,
                r.ms_optimizer, gb(r.read_bytes), gb(r.written_bytes), gb(stream_rate),
                r.stream_seconds > 0 ? 100.0 * ideal / r.stream_seconds : 0.0, gb(r.peak_rss), gb(r.state_bytes));
    results[mode] = r;
    order.push_back(mode);
  }
  if (discrete && !results.empty()) {
    std::printf("\n%-5s %10s %17s %10s %10s %10s %10s %10s %8s %11s\n", "mode", "ms/step", "loss first->last",
                "device GB", "pinned GB", "to host GB", "to dev GB", "exposed ms", "overlap", "AdamW GB/s");
    for (const std::string& mode : order) {
      const Result& r = results[mode];
      // The copies at the engine's own rate, against the time the host actually waited for them.
      const double copy_seconds = (engine_rate.first > 0 ? r.host.bytes_to_host / engine_rate.first : 0) +
                                  (engine_rate.second > 0 ? r.host.bytes_to_device / engine_rate.second : 0);
      const double overlap =
          copy_seconds > 0 ? std::clamp(1.0 - r.host.copy_wait_seconds / copy_seconds, 0.0, 1.0) : 0.0;
      // Bytes the host's passes touch: the state read and written, the gradients read, the
      // parameters written.
      const double touched = 2 * r.state_bytes + static_cast<double>(r.host.bytes_to_host + r.host.bytes_to_device);
      std::printf("%-5s %10.1f %8.4f->%7.4f %10.3f %10.3f %10.3f %10.3f %10.1f %7.0f%% %11.2f\n", mode.c_str(),
                  r.ms_step, r.first_loss, r.loss, gb(r.device_peak), gb(r.pinned_peak),
                  gb(static_cast<double>(r.host.bytes_to_host)), gb(static_cast<double>(r.host.bytes_to_device)),
                  1e3 * r.host.copy_wait_seconds, 100.0 * overlap,
                  r.host.update_seconds > 0 ? gb(touched / r.host.update_seconds) : 0.0);
    }
    std::printf(
        "(device GB, pinned GB: peaks of the device and pinned-host trackers; to host / to dev: bytes the copy "
        "stream moved per step; exposed ms: the host's wait for the gradients; overlap: 1 - exposed / the copies' "
        "time at the copy engine's rate; AdamW GB/s: the bytes the host's optimizer passes touched over their time)\n");
    if (results.count("none") && results.count("cpu")) {
      const Result &none = results["none"], &cpu = results["cpu"];
      std::printf("cpu vs none: %.2fx the step time, loss %.6f vs %.6f (|diff| %.2e), device peak %.3f GB lower\n",
                  cpu.ms_step / none.ms_step, cpu.loss, none.loss, std::fabs(cpu.loss - none.loss),
                  gb(none.device_peak - cpu.device_peak));
    }
  }
  std::printf(
      "\n(read GB includes the parameter shards read for ZeRO-3 gathers; stream GB/s: the optimizer passes' "
      "reads and writes over the time they took; of disk: the disk's own time for that traffic at the "
      "sequential rates above, over the time the passes took; state GB: master copy (when separate) and "
      "optimizer state wherever they live)\n");
  if (results.count("none") && results.count("nvme")) {
    const Result &none = results["none"], &nvme = results["nvme"];
    const double resident_state = none.state_bytes;
    std::printf("nvme vs none: %.2fx the step time; peak RSS %.3f GB lower, %.0f%% of the optimizer state's %.3f GB\n",
                nvme.ms_step / none.ms_step, gb(none.peak_rss - nvme.peak_rss),
                100.0 * (none.peak_rss - nvme.peak_rss) / resident_state, gb(resident_state));
  }
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::reexec_with_better_blas_core(argv);
  try {
    return tessera::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_offload: %s\n", e.what());
    return 1;
  }
}
