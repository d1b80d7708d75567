// --device and --gemm-math: the options, make_device / make_rank_device through them, and the
// one-line refusal.
#include "flags/device_flag.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tessera/comm/host_collectives.hpp"
#include "tessera/launch/rank_device.hpp"
#include "tessera/runtime/device_factory.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {
namespace {

DeviceChoice program_device_choice(const std::string& flag) {
  if (flag != "cpu" && flag != "cuda" && flag != "auto" && flag != "sim-gpu") {
    throw std::invalid_argument("--device " + flag + ": use cpu, cuda, auto or sim-gpu");
  }
  return parse_device_choice(flag);
}

DeviceOptions device_options(const DeviceFlags& flags) {
  DeviceOptions options;
  options.gemm_math = resolved_gemm_math(flags);
  resolved_device_comm(flags);  // a misspelt --comm is refused before any device is opened
  return options;
}

const char* gemm_math_words(GemmMath math) {
  switch (math) {
    case GemmMath::kF32: return "f32 (exact, as the CPU)";
    case GemmMath::kTf32: return "tf32 tensor cores, f32 accumulation";
    case GemmMath::kBf16: return "bf16 tensor cores, f32 accumulation";
  }
  return "unknown";
}

void print_refusal(const std::string& program, const std::string& why) {
  std::fprintf(stderr, "%s: %s\n", program.c_str(), why.c_str());
  std::fflush(stderr);
}

}  // namespace

GemmMath resolved_gemm_math(const DeviceFlags& flags) {
  if (flags.gemm_math == "auto") return GemmMath::kBf16;
  for (GemmMath math : {GemmMath::kF32, GemmMath::kTf32, GemmMath::kBf16}) {
    if (flags.gemm_math == gemm_math_name(math)) return math;
  }
  throw std::invalid_argument("--gemm-math " + flags.gemm_math +
                              ": use auto (bf16 on a GPU), f32 (exact, as the CPU), tf32 or bf16");
}

DeviceComm resolved_device_comm(const DeviceFlags& flags) { return parse_device_comm(flags.comm, "--comm"); }

std::string device_world_line(const DeviceFlags& flags, const Communicator* device_world) {
  if (device_world == nullptr) return "";
  const bool nccl = device_world->backend() == CommBackend::kNccl;
  return std::string("collectives: ") + (nccl ? "nccl" : "mpi, staged through pinned host memory") + " (--comm " +
         flags.comm + ")";
}

void add_device_option(po::options_description& group, DeviceFlags* target) {
  // clang-format off
  group.add_options()("device", value_with_default(&target->device),
                      "cpu, cuda or auto (a usable GPU when this build has the CUDA device, else the CPU); sim-gpu: a "
                      "discrete device simulated on the CPU, for testing GPU paths without a GPU")
      ("gemm-math", value_with_default(&target->gemm_math),
       "GPU GEMM arithmetic: auto (bf16), f32 (exact, as the CPU), tf32 or bf16 (tensor cores, f32 "
       "accumulation); the CPU computes in f32 either way")
      ("comm", value_with_default(&target->comm),
       "GPU collectives: auto (NCCL where every rank has a GPU of its own, else mpi), nccl, or mpi (MPI on "
       "buffers staged through pinned host memory: ranks may share a GPU)");
  // clang-format on
}

std::unique_ptr<Device> open_device(const DeviceFlags& flags) {
  return make_device(program_device_choice(flags.device), device_options(flags));
}

std::string device_line(const DeviceFlags& flags, const Device& device) {
  const bool cpu = device.memory_space() == MemorySpace::kHost;
  if (cpu) return flags.device == "auto" ? "device: cpu (auto: no usable GPU)" : "device: cpu";
  if (device.kind() != DeviceKind::kCuda) return "device: " + device.name() + ", GEMMs f32 (the CPU kernels)";
  return "device: " + device.name() + (flags.device == "auto" ? " (auto)" : "") + ", GEMMs " +
         gemm_math_words(resolved_gemm_math(flags)) + (flags.gemm_math == "auto" ? " (--gemm-math auto)" : "") +
         "; attention: " + device.kernels().attention_kernel();
}

std::unique_ptr<Device> open_device_or_report(const DeviceFlags& flags, const std::string& program) {
  program_device_choice(flags.device);  // a misspelt value is a usage error, reported as one
  device_options(flags);
  try {
    return open_device(flags);
  } catch (const std::runtime_error& e) {
    print_refusal(program, e.what());
    return nullptr;
  }
}

void set_rank_threads(int threads, const DistributedContext& dist) {
  const int local_ranks = std::max(1, dist.rank_info().local_size);
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  set_cpu_threads(threads > 0 ? threads : std::max(1, hardware / local_ranks));
}

std::unique_ptr<Device> open_device_on_every_rank(const DeviceFlags& flags, DistributedContext& dist,
                                                  const std::string& program) {
  const DeviceChoice choice = program_device_choice(flags.device);
  const DeviceOptions options = device_options(flags);
  Communicator& world = dist.world();
  std::unique_ptr<Device> device;
  std::string why;
  try {
    device = make_rank_device(choice, dist.rank_info(), options);
  } catch (const std::runtime_error& e) {
    why = e.what();
  }
  const std::vector<int> opened = all_gather_values(world, device ? 1 : 0);
  const auto first_failing = std::find(opened.begin(), opened.end(), 0);
  if (first_failing == opened.end()) return device;
  if (world.rank() == static_cast<int>(first_failing - opened.begin())) {
    print_refusal(program, world.size() > 1 ? "rank " + std::to_string(world.rank()) + ": " + why : why);
  }
  return nullptr;
}

}  // namespace tessera
