// Shared pieces of the checkpoint tests: a run directory shared by all ranks, communicators over the
// first N world ranks (save at one rank count, load at another, inside one mpirun), a trained tiny
// GPT engine, full parameters / Adam moments by name, and comparisons that name what differs.
#pragma once

#include <gtest/gtest.h>
#include <hdf5.h>
#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tessera/checkpointing/export/gpt_model_fields.hpp"
#include "tessera/checkpointing/format/run_config.hpp"
#include "tessera/comm/device_communicator.hpp"
#include "tessera/sharding/full_parameters.hpp"
#include "tessera/training/trainer.hpp"
#include "tests/launch/child_job.hpp"
#include "tests/sharding/sharding_test_support.hpp"

namespace tessera::testing {

inline constexpr std::int64_t kCkptGlobal = 12;  // rows per step: divisible by 1, 2, 3 and 4 ranks

// A fresh directory made by rank 0 of MPI_COMM_WORLD, the same path on every rank. Removed by the
// destructor (rank 0), after a world barrier.
class SharedTempDir {
 public:
  SharedTempDir() {
    std::string path;
    if (world_rank() == 0) {
      std::string pattern = (std::filesystem::temp_directory_path() / "tessera_ckpt_test_XXXXXX").string();
      path = mkdtemp(pattern.data()) != nullptr ? pattern : "";
    }
    int length = static_cast<int>(path.size());
    MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
    path.resize(static_cast<std::size_t>(length));
    MPI_Bcast(path.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD);
    path_ = path;
  }
  ~SharedTempDir() {
    MPI_Barrier(MPI_COMM_WORLD);
    std::error_code ec;
    if (world_rank() == 0) std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Collective over MPI_COMM_WORLD: a communicator over world ranks 0..ranks-1, nullptr elsewhere.
inline std::unique_ptr<Communicator> first_ranks(int ranks) {
  MPI_Comm sub = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank() < ranks ? 0 : MPI_UNDEFINED, world_rank(), &sub);
  if (sub == MPI_COMM_NULL) return nullptr;
  auto comm = std::make_unique<MpiCommunicator>(sub);
  MPI_Comm_free(&sub);
  return comm;
}

struct RunSetup {
  RunSetup(ZeroStage s = ZeroStage::kStage0, int hybrid = 0, MixedPrecision p = {},
           OptimizerKind o = OptimizerKind::kAdamW)
      : stage(s), hybrid_group(hybrid), precision(p), optimizer(o) {}
  ZeroStage stage;
  int hybrid_group;
  MixedPrecision precision;
  OptimizerKind optimizer;  // 8-bit AdamW quantizes in blocks of 256 here
  OffloadConfig offload;
  std::string describe(int ranks) const {
    std::string s = std::to_string(ranks) + " ranks ZeRO-" + std::to_string(zero_stage_number(stage));
    if (hybrid_group > 0) s += " hybrid " + std::to_string(hybrid_group);
    if (precision.param_dtype != DType::kF32) s += std::string(" param ") + dtype_name(precision.param_dtype);
    if (precision.reduce_dtype != DType::kF32) s += std::string(" reduce ") + dtype_name(precision.reduce_dtype);
    if (optimizer != OptimizerKind::kAdamW) s += std::string(" ") + optimizer_kind_name(optimizer);
    if (offload.any()) s += " offload " + offload.to_string();
    return s;
  }
};

inline ShardingConfig sharding_config(const RunSetup& setup) {
  ShardingConfig config;
  config.stage = setup.stage;
  config.hybrid_group = setup.hybrid_group;
  config.precision = setup.precision;
  config.optimizer.adamw = test_adamw();
  config.optimizer.kind = setup.optimizer;
  config.optimizer.block_size = 256;
  config.offload = setup.offload;
  config.grad_clip = kClip;
  return config;
}

inline RunConfig tiny_run_config(const GptConfig& gpt = tiny_gpt()) {
  RunConfig config;
  add_gpt_config(config, gpt);
  config.set_run("global_batch", kCkptGlobal);
  return config;
}

// Optimizer steps [from, to) of `trainer`: each step on this rank's rows (rank of ranks) of that
// step's global batch of kCkptGlobal sequences of `gpt`.
inline std::vector<float> train_global_steps(Device& device, Trainer& trainer, const GptConfig& gpt, int rank,
                                             int ranks, int from, int to) {
  std::vector<float> losses;
  const std::int64_t micro = kCkptGlobal / ranks;
  for (int s = from; s < to; ++s) {
    const MicroBatch batch = global_rows(device, gpt, s, rank * micro, micro);
    losses.push_back(trainer.train_step({batch}, kLr).loss);
  }
  return losses;
}

// What a checkpoint after `step` such steps records, with rank-specific RNG words.
inline TrainingProgress progress_after(int step, int rank, const GptConfig& gpt = tiny_gpt()) {
  TrainingProgress p;
  p.step = step;
  p.samples_seen = step * kCkptGlobal;
  p.tokens_seen = p.samples_seen * gpt.max_seq_len;
  p.data_seed = kSeed;
  p.rng_state = {0x1000u + static_cast<std::uint64_t>(rank), static_cast<std::uint64_t>(step)};
  return p;
}

// A model, its engine and the communicator it trains over: on the CPU, or on `on` (a GPU, whose
// collectives are then the host world's staged through pinned memory, so ranks may share it).
struct TrainedEngine {
  std::unique_ptr<Device> device = make_cpu_device();
  std::unique_ptr<Communicator> device_world;
  std::unique_ptr<Gpt> model;
  std::unique_ptr<ShardedEngine> engine;
  std::unique_ptr<Trainer> trainer;
  Communicator* comm = nullptr;

  TrainedEngine(Communicator& c, const RunSetup& setup, std::uint64_t seed = kSeed, const GptConfig& gpt = tiny_gpt(),
                std::unique_ptr<Device> on = nullptr)
      : model(std::make_unique<Gpt>(gpt)), comm(&c) {
    if (on) {
      device = std::move(on);
      device_world = make_device_world(*device, c, CommOptions{}, DeviceComm::kMpi);
      if (device_world) comm = device_world.get();
    }
    engine = std::make_unique<ShardedEngine>(*model, *device, *comm, sharding_config(setup), seed);
    trainer = std::make_unique<Trainer>(*engine);
  }

  // Optimizer steps [from, to): each rank trains on its rows of the global batch of that step.
  std::vector<float> train(int from, int to) {
    return train_global_steps(*device, *trainer, tiny_gpt(), comm->rank(), comm->size(), from, to);
  }

  TrainingProgress progress(int step) const { return progress_after(step, comm->rank()); }
};

// Full values of one state tensor (by its index in the engine's state list: 0 master, 1 exp_avg,
// 2 exp_avg_sq for AdamW) by parameter name: collective over the engine's shard group.
inline std::map<std::string, std::vector<float>> gather_state(ShardedEngine& engine, int kind) {
  if (kind == 0) return gather_full_parameters(engine);
  std::map<std::string, std::vector<float>> out;
  const auto& units = engine.units();
  for (std::size_t u = 0; u < units.size(); ++u) {
    const FlatLayout& layout = units[u]->layout();
    std::vector<float> mine(static_cast<std::size_t>(units[u]->optimizer_range().count));
    std::vector<float> flat(static_cast<std::size_t>(layout.padded_numel()));
    units[u]->read_state(static_cast<std::size_t>(kind), 0, static_cast<std::int64_t>(mine.size()), mine.data());
    if (units[u]->optimizer_range().count == layout.padded_numel()) {
      flat = mine;
    } else {
      engine.shard_group()
          .all_gather(ConstSpan(mine.data(), mine.size()), Span(flat.data(), flat.size()), DType::kF32)
          .wait();
    }
    for (const FlatEntry& e : layout.entries())
      out[e.name].assign(flat.begin() + e.offset, flat.begin() + e.offset + e.numel);
  }
  return out;
}

// Every unit's state tensor `k` as raw bytes over the unit's whole blocks (the values below
// round_up(numel, alignment), one per elements_per_value): collective over the shard group.
inline std::vector<std::vector<std::byte>> gather_unit_bytes(ShardedEngine& engine, std::size_t k) {
  std::vector<std::vector<std::byte>> out;
  const std::int64_t alignment = optimizer_alignment(engine.config().optimizer);
  const auto& units = engine.units();
  for (std::size_t u = 0; u < units.size(); ++u) {
    const StateTensor t = engine.unit_state(static_cast<int>(u))[k];
    const FlatLayout& layout = units[u]->layout();
    const std::size_t size = dtype_size(engine.state_specs()[k].dtype);
    const std::int64_t values = units[u]->optimizer_range().count / t.elements_per_value;
    std::vector<std::byte> mine(static_cast<std::size_t>(values) * size);
    units[u]->read_state(k, 0, values, mine.data());
    std::vector<std::byte> full(static_cast<std::size_t>(layout.padded_numel() / t.elements_per_value) * size);
    if (units[u]->optimizer_range().count == layout.padded_numel()) {
      full = mine;
    } else {
      engine.shard_group()
          .all_gather(ConstSpan(mine.data(), mine.size()), Span(full.data(), full.size()), DType::kU8)
          .wait();
    }
    const std::int64_t whole = (layout.numel() + alignment - 1) / alignment * alignment;
    full.resize(static_cast<std::size_t>(whole / t.elements_per_value) * size);
    out.push_back(std::move(full));
  }
  return out;
}

// "" when equal bit for bit; else the first differing parameters and elements.
inline std::string compare_states(const std::map<std::string, std::vector<float>>& actual,
                                  const std::map<std::string, std::vector<float>>& expected) {
  std::string out;
  for (const auto& [name, values] : expected) {
    auto it = actual.find(name);
    if (it == actual.end()) {
      out += name + " missing; ";
      continue;
    }
    std::size_t wrong = 0, first = 0;
    for (std::size_t i = 0; i < values.size() && i < it->second.size(); ++i) {
      if (std::memcmp(&values[i], &it->second[i], sizeof(float)) != 0 && wrong++ == 0) first = i;
    }
    if (wrong > 0) {
      out += name + ": " + std::to_string(wrong) + " of " + std::to_string(values.size()) + " differ, index " +
             std::to_string(first) + " expected " + std::to_string(values[first]) + " actual " +
             std::to_string(it->second[first]) + "; ";
    }
  }
  return out;
}

// The whole dataset `name` of `file` as f32, through nothing but the HDF5 C API.
inline std::vector<float> h5_read(const std::string& file, const std::string& name, Shape* shape = nullptr) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(f, 0) << "cannot open " << file;
  const hid_t d = H5Dopen2(f, name.c_str(), H5P_DEFAULT);
  EXPECT_GE(d, 0) << "cannot open " << file << ":" << name;
  const hid_t space = H5Dget_space(d);
  hsize_t dims[8] = {};
  const int nd = H5Sget_simple_extent_dims(space, dims, nullptr);
  std::vector<float> values(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space)));
  EXPECT_GE(H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0) << file << ":" << name;
  if (shape != nullptr) shape->assign(dims, dims + nd);
  H5Sclose(space);
  H5Dclose(d);
  H5Fclose(f);
  return values;
}

// Relative L2 distance of all values.
inline double relative_l2(const std::map<std::string, std::vector<float>>& actual,
                          const std::map<std::string, std::vector<float>>& expected) {
  double d2 = 0.0, n2 = 0.0;
  for (const auto& [name, values] : expected) {
    const auto& other = actual.at(name);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double d = static_cast<double>(other[i]) - values[i];
      d2 += d * d;
      n2 += static_cast<double>(values[i]) * values[i];
    }
  }
  return std::sqrt(d2 / n2);
}

// The tessera_ckpt program: TESSERA_BIN_DIR's (ctest sets it), else beside the test's build tree.
inline std::string tessera_ckpt() {
  const char* dir = std::getenv("TESSERA_BIN_DIR");
  const std::filesystem::path bin =
      dir != nullptr ? std::filesystem::path(dir) : std::filesystem::path(self_executable()).parent_path() / "../../examples";
  return (bin / "tessera_ckpt").string();
}

}  // namespace tessera::testing
