// CheckpointState: what a saved checkpoint holds for training to continue from, read back for a
// test to compare two runs: every tensor under meta.h5's /model and /optimizer (the virtual
// datasets stitched from the shard files, so two checkpoints of one rank count compare tensor by
// tensor whatever the shards' save ids), the step, the data position, the optimizer's step count
// and every rank's generator words.
#pragma once

#include <hdf5.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/checkpointing/format/checkpoint_meta.hpp"
#include "tessera/checkpointing/format/hdf5_util.hpp"

namespace tessera::testing {

struct CheckpointState {
  std::map<std::string, std::vector<float>> tensors;  // "/model/blocks.0.attn.qkv.weight" -> values
  TrainingProgress progress;
  std::int64_t optimizer_steps = 0;
  std::vector<std::vector<std::uint64_t>> rng_states;
};

// H5Lvisit's callback: the names of the datasets below a group.
inline herr_t collect_dataset_name(hid_t group, const char* name, const H5L_info_t*, void* out) {
  const hid_t object = H5Oopen(group, name, H5P_DEFAULT);
  if (object < 0) return -1;
  if (H5Iget_type(object) == H5I_DATASET) static_cast<std::vector<std::string>*>(out)->push_back(name);
  H5Oclose(object);
  return 0;
}

// Reads `step_dir`/meta.h5 and the tensors it stitches. Throws CheckpointError as the reader does.
inline CheckpointState read_checkpoint_state(const std::filesystem::path& step_dir) {
  using tessera::detail::check_status;
  using tessera::detail::H5Id;
  const std::string meta_path = (step_dir / "meta.h5").string();
  const CheckpointMeta meta = read_meta_file(meta_path);
  const tessera::detail::Hdf5Guard guard;
  CheckpointState state;
  state.progress = meta.progress;
  state.optimizer_steps = meta.optimizer_steps;
  state.rng_states = meta.rng_states;
  const H5Id file = tessera::detail::open_file_read(meta_path);
  for (const std::string root : {"/model", "/optimizer"}) {
    std::vector<std::string> names;
    const H5Id group = tessera::detail::open_group(file.get(), root, meta_path);
    check_status(H5Lvisit(group.get(), H5_INDEX_NAME, H5_ITER_INC, collect_dataset_name, &names),
                 CheckpointErrorKind::kCorruptData, meta_path + ": listing " + root);
    for (const std::string& name : names) {
      const std::string path = root + "/" + name;
      const H5Id dataset = tessera::detail::open_dataset(file.get(), path, meta_path);
      const hid_t space = H5Dget_space(dataset.get());
      const hssize_t count = H5Sget_simple_extent_npoints(space);
      H5Sclose(space);
      std::vector<float> values(static_cast<std::size_t>(count));
      check_status(H5Dread(dataset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()),
                   CheckpointErrorKind::kCorruptData, meta_path + ": reading " + path);
      state.tensors[path] = std::move(values);
    }
  }
  return state;
}

// "" when `a` and `b` hold the same state bit for bit, else the first difference, named.
inline std::string first_difference(const CheckpointState& a, const CheckpointState& b) {
  std::ostringstream why;
  if (a.progress.step != b.progress.step)
    why << "step " << a.progress.step << " vs " << b.progress.step;
  else if (a.progress.samples_seen != b.progress.samples_seen)
    why << "data position (samples seen) " << a.progress.samples_seen << " vs " << b.progress.samples_seen;
  else if (a.progress.tokens_seen != b.progress.tokens_seen)
    why << "tokens seen " << a.progress.tokens_seen << " vs " << b.progress.tokens_seen;
  else if (a.progress.data_seed != b.progress.data_seed)
    why << "data seed differs";
  else if (a.optimizer_steps != b.optimizer_steps)
    why << "optimizer steps " << a.optimizer_steps << " vs " << b.optimizer_steps;
  else if (a.rng_states != b.rng_states)
    why << "the ranks' generator words differ";
  else if (a.tensors.size() != b.tensors.size())
    why << a.tensors.size() << " tensors vs " << b.tensors.size();
  if (!why.str().empty()) return why.str();
  for (const auto& [name, values] : a.tensors) {
    const auto other = b.tensors.find(name);
    if (other == b.tensors.end()) return name + " is missing from the second state";
    if (other->second.size() != values.size() ||
        std::memcmp(values.data(), other->second.data(), values.size() * sizeof(float)) != 0) {
      for (std::size_t i = 0; i < values.size(); ++i) {
        if (std::memcmp(&values[i], &other->second[i], sizeof(float)) != 0) {
          why << name << "[" << i << "]: " << values[i] << " vs " << other->second[i];
          return why.str();
        }
      }
      return name + ": sizes differ";
    }
  }
  return "";
}

// The largest |a - b| / (|b| + `floor`) over every value of every tensor both states hold.
inline double max_relative_difference(const CheckpointState& a, const CheckpointState& b, double floor) {
  double worst = 0.0;
  for (const auto& [name, values] : a.tensors) {
    const auto other = b.tensors.find(name);
    if (other == b.tensors.end() || other->second.size() != values.size()) return INFINITY;
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double x = values[i], y = other->second[i];
      worst = std::max(worst, std::abs(x - y) / (std::abs(y) + floor));
    }
  }
  return worst;
}

}  // namespace tessera::testing
