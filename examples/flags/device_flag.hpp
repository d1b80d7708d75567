// --device cpu|cuda|auto and --gemm-math f32|tf32|bf16: the options every computing program shares,
// and opening the device they name (make_device, or make_rank_device for a rank of a job, which
// picks the rank's GPU from its place on the node). auto takes a usable GPU when the build has a
// CUDA device, else the CPU, and says which and why ("device: cpu (auto: no usable GPU)"). A device
// that cannot be opened (cuda without a usable GPU, driver or CUDA build) is one line on stderr,
// "PROGRAM: device cuda: ...", with make_device's own words, and a non-zero exit.
#pragma once

#include <memory>
#include <string>

#include "flags/program_options.hpp"
#include "tessera/comm/device_communicator.hpp"
#include "tessera/launch/distributed_context.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/runtime/gemm_math.hpp"

namespace tessera {

struct DeviceFlags {
  std::string device = "auto";    // cpu | cuda | auto | sim-gpu
  std::string comm = "auto";      // a GPU's collectives: auto | nccl | mpi (comm/device_communicator.hpp)
  std::string gemm_math = "auto";  // the GPU's GEMM arithmetic: auto | f32 | tf32 | bf16 (runtime/gemm_math.hpp)
};

// Adds --device (default auto), --gemm-math (default auto) and --comm (default auto) bound to
// `target` to `group`.
void add_device_option(po::options_description& group, DeviceFlags* target);

// The GEMM arithmetic the flags ask for: auto is bf16 on the tensor cores with f32 accumulation (what
// a GPU is built for; the CPU computes in f32 whatever is asked). Throws std::invalid_argument naming
// --gemm-math for another value.
GemmMath resolved_gemm_math(const DeviceFlags& flags);

// --comm as a DeviceComm; throws std::invalid_argument naming --comm for another value.
DeviceComm resolved_device_comm(const DeviceFlags& flags);

// "collectives: nccl (--comm auto)", "collectives: mpi, staged through pinned host memory (--comm mpi)";
// "" without a device world (the CPU: the MPI world itself).
std::string device_world_line(const DeviceFlags& flags, const Communicator* device_world);

// The device the flags name; throws std::invalid_argument for a value other than cpu, cuda or auto
// (or a GEMM math other than f32, tf32, bf16), and what make_device throws when the device cannot
// be opened.
std::unique_ptr<Device> open_device(const DeviceFlags& flags);

// "device: cpu (auto: no usable GPU)", "device: cpu",
// "device: <the CUDA device's name> (auto), GEMMs bf16 tensor cores, f32 accumulation (--gemm-math auto)".
std::string device_line(const DeviceFlags& flags, const Device& device);

// A single-process program: the device, or null after printing "PROGRAM: <why>" on stderr.
std::unique_ptr<Device> open_device_or_report(const DeviceFlags& flags, const std::string& program);

// --threads of a rank of a job: sets this rank's CPU threads (OpenMP and OpenBLAS) to `threads`, or
// for 0 to this node's cores divided by the job's ranks on it.
void set_rank_threads(int threads, const DistributedContext& dist);

// Collective over the job's world: every rank opens its device (its own GPU: make_rank_device);
// when any rank cannot, the lowest such rank prints its one line on stderr and every rank gets null
// (the program then exits non-zero on every rank, none left waiting in a collective).
std::unique_ptr<Device> open_device_on_every_rank(const DeviceFlags& flags, DistributedContext& dist,
                                                  const std::string& program);

}  // namespace tessera
