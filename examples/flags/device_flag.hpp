// --device cpu|cuda|auto: the option every computing program shares, and opening the device it
// names with make_device(parse_device_choice(flag)). auto takes a usable GPU when the build has a
// CUDA device, else the CPU, and says which and why ("device: cpu (auto: no usable GPU)"). A device
// that cannot be opened (cuda without a usable GPU, driver or CUDA build) is one line on stderr,
// "PROGRAM: device cuda: ...", with make_device's own words, and a non-zero exit.
#pragma once

#include <memory>
#include <string>

#include "comm/communicator.hpp"
#include "flags/program_options.hpp"
#include "runtime/device.hpp"

namespace tessera {

// Adds --device (default auto) bound to `target` to `group`.
void add_device_option(po::options_description& group, std::string* target);

// The device --device names; throws std::invalid_argument for a value other than cpu, cuda or
// auto, and what make_device throws when the device cannot be opened.
std::unique_ptr<Device> open_device(const std::string& flag);

// "device: cpu (auto: no usable GPU)", "device: cpu", "device: <the CUDA device's name> (auto)".
std::string device_line(const std::string& flag, const Device& device);

// A single-process program: the device, or null after printing "PROGRAM: <why>" on stderr.
std::unique_ptr<Device> open_device_or_report(const std::string& flag, const std::string& program);

// Collective over `world`: every rank opens its device; when any rank cannot, the lowest such rank
// prints its one line on stderr and every rank gets null (the program then exits non-zero on every
// rank, none left waiting in a collective).
std::unique_ptr<Device> open_device_on_every_rank(const std::string& flag, Communicator& world,
                                                  const std::string& program);

}  // namespace tessera
