// --device: the option, make_device through it, and the one-line refusal.
#include "flags/device_flag.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "comm/host_collectives.hpp"
#include "runtime/device_factory.hpp"

namespace tessera {
namespace {

DeviceChoice program_device_choice(const std::string& flag) {
  if (flag != "cpu" && flag != "cuda" && flag != "auto") {
    throw std::invalid_argument("--device " + flag + ": use cpu, cuda or auto");
  }
  return parse_device_choice(flag);
}

void print_refusal(const std::string& program, const std::string& why) {
  std::fprintf(stderr, "%s: %s\n", program.c_str(), why.c_str());
  std::fflush(stderr);
}

}  // namespace

void add_device_option(po::options_description& group, std::string* target) {
  group.add_options()("device", value_with_default(target),
                      "cpu, cuda or auto (a usable GPU when this build has the CUDA device, else the CPU)");
}

std::unique_ptr<Device> open_device(const std::string& flag) { return make_device(program_device_choice(flag)); }

std::string device_line(const std::string& flag, const Device& device) {
  const bool cpu = device.memory_space() == MemorySpace::kHost;
  if (flag == "auto") return cpu ? "device: cpu (auto: no usable GPU)" : "device: " + device.name() + " (auto)";
  return cpu ? "device: cpu" : "device: " + device.name();
}

std::unique_ptr<Device> open_device_or_report(const std::string& flag, const std::string& program) {
  program_device_choice(flag);  // a misspelt value is a usage error, reported as one
  try {
    return open_device(flag);
  } catch (const std::runtime_error& e) {
    print_refusal(program, e.what());
    return nullptr;
  }
}

std::unique_ptr<Device> open_device_on_every_rank(const std::string& flag, Communicator& world,
                                                  const std::string& program) {
  program_device_choice(flag);
  std::unique_ptr<Device> device;
  std::string why;
  try {
    device = open_device(flag);
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
