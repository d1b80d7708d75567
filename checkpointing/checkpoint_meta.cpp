// meta.h5 reading and writing.
#include "checkpointing/checkpoint_meta.hpp"

#include <cstdio>
#include <ctime>

#include "checkpointing/checkpoint_paths.hpp"
#include "checkpointing/hdf5_util.hpp"
#include "checkpointing/shard_file_writer.hpp"
#include "checkpointing/virtual_datasets.hpp"

namespace tessera {
namespace {

using detail::H5Id;
using detail::read_double_attribute;
using detail::read_int_attribute;
using detail::read_string_attribute;
using detail::write_attribute;

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string rng_name(int rank) {
  char name[32];
  std::snprintf(name, sizeof name, "rank_%05d", rank);
  return name;
}

void write_config_section(hid_t parent, const char* name, const std::map<std::string, std::string>& fields,
                          const std::string& where) {
  H5Id group = detail::create_group(parent, name, where);
  for (const auto& [key, value] : fields) write_attribute(group.get(), key, value);
}

std::map<std::string, std::string> read_config_section(hid_t parent, const char* name, const std::string& where) {
  std::map<std::string, std::string> fields;
  H5Id group = detail::open_group(parent, name, where);
  for (const std::string& key : detail::attribute_names(group.get())) {
    fields[key] = read_string_attribute(group.get(), key, where + ":/config/" + name);
  }
  return fields;
}

void write_layout(hid_t file, const CheckpointLayout& layout, const std::string& where) {
  H5Id group = detail::create_group(file, "layout", where);
  std::vector<std::string> unit_names, param_names;
  std::vector<std::int64_t> unit_numel, unit_shard, param_offset, param_dims;
  std::vector<std::int32_t> param_unit, param_ndim;
  for (const UnitRecord& u : layout.units) {
    unit_names.push_back(u.name);
    unit_numel.push_back(u.numel);
    unit_shard.push_back(u.shard_numel);
  }
  for (const ParamRecord& p : layout.params) {
    param_names.push_back(p.name);
    param_unit.push_back(p.unit);
    param_offset.push_back(p.offset);
    param_ndim.push_back(static_cast<std::int32_t>(p.shape.size()));
    param_dims.insert(param_dims.end(), p.shape.begin(), p.shape.end());
  }
  detail::write_strings(group.get(), "unit_names", unit_names);
  detail::write_vector(group.get(), "unit_numel", unit_numel);
  detail::write_vector(group.get(), "unit_shard_numel", unit_shard);
  detail::write_strings(group.get(), "param_names", param_names);
  detail::write_vector(group.get(), "param_unit", param_unit);
  detail::write_vector(group.get(), "param_offset", param_offset);
  detail::write_vector(group.get(), "param_ndim", param_ndim);
  detail::write_vector(group.get(), "param_dims", param_dims);
  std::vector<std::string> state_names, state_dtypes;
  std::vector<std::int64_t> state_elements_per_value;
  for (const StateSpec& spec : layout.states) {
    state_names.push_back(spec.name);
    state_dtypes.push_back(dtype_name(spec.dtype));
    state_elements_per_value.push_back(spec.elements_per_value);
  }
  detail::write_strings(group.get(), "state_names", state_names);
  detail::write_strings(group.get(), "state_dtypes", state_dtypes);
  detail::write_vector(group.get(), "state_elements_per_value", state_elements_per_value);
  detail::write_attribute(group.get(), "state_alignment", layout.state_alignment);
}

// The state tensors of a format-1 checkpoint, which did not list them.
std::vector<StateSpec> format1_states() {
  return {{"master", DType::kF32}, {"exp_avg", DType::kF32}, {"exp_avg_sq", DType::kF32}};
}

std::vector<StateSpec> read_states(hid_t layout_group, std::int64_t alignment, const std::string& w) {
  const auto names = detail::read_strings(layout_group, "state_names", w);
  const auto dtypes = detail::read_strings(layout_group, "state_dtypes", w);
  const auto per_value = detail::read_i64_vector(layout_group, "state_elements_per_value", w);
  if (names.size() != dtypes.size() || names.size() != per_value.size() || names.empty() ||
      names.front() != kMasterDataset) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData,
                          w + ": state_names, state_dtypes and state_elements_per_value must list the same tensors, "
                              "master first");
  }
  std::vector<StateSpec> states;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (per_value[i] < 1 || alignment % per_value[i] != 0) {
      throw CheckpointError(CheckpointErrorKind::kCorruptData,
                            w + ": state '" + names[i] + "' has " + std::to_string(per_value[i]) +
                                " elements per value, which does not divide the alignment " + std::to_string(alignment));
    }
    try {
      states.push_back({names[i], parse_dtype(dtypes[i], "state dtype"), per_value[i]});
    } catch (const std::invalid_argument&) {
      throw CheckpointError(CheckpointErrorKind::kCorruptData,
                            w + ": state '" + names[i] + "' has an unknown dtype '" + dtypes[i] + "'");
    }
  }
  return states;
}

CheckpointLayout read_layout(hid_t file, int shard_ranks, std::int64_t format, const std::string& where) {
  H5Id group = detail::open_group(file, "layout", where);
  const std::string w = where + ":/layout";
  CheckpointLayout layout;
  layout.shard_ranks = shard_ranks;
  const auto unit_names = detail::read_strings(group.get(), "unit_names", w);
  const auto unit_numel = detail::read_i64_vector(group.get(), "unit_numel", w);
  const auto unit_shard = detail::read_i64_vector(group.get(), "unit_shard_numel", w);
  const auto param_names = detail::read_strings(group.get(), "param_names", w);
  const auto param_unit = detail::read_i32_vector(group.get(), "param_unit", w);
  const auto param_offset = detail::read_i64_vector(group.get(), "param_offset", w);
  const auto param_ndim = detail::read_i32_vector(group.get(), "param_ndim", w);
  const auto param_dims = detail::read_i64_vector(group.get(), "param_dims", w);
  if (format >= 2) {
    layout.state_alignment = read_int_attribute(group.get(), "state_alignment", w);
    if (layout.state_alignment < 1) {
      throw CheckpointError(CheckpointErrorKind::kCorruptData,
                            w + ": state_alignment " + std::to_string(layout.state_alignment) + " is not positive");
    }
  }
  layout.states = format == 1 ? format1_states() : read_states(group.get(), layout.state_alignment, w);
  const std::size_t nu = unit_names.size(), np = param_names.size();
  if (unit_numel.size() != nu || unit_shard.size() != nu || param_unit.size() != np || param_offset.size() != np ||
      param_ndim.size() != np) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData, w + ": layout tables have inconsistent lengths");
  }
  for (std::size_t u = 0; u < nu; ++u) layout.units.push_back({unit_names[u], unit_numel[u], unit_shard[u]});
  std::size_t at = 0;
  for (std::size_t i = 0; i < np; ++i) {
    ParamRecord p;
    p.name = param_names[i];
    p.unit = param_unit[i];
    p.offset = param_offset[i];
    const auto nd = static_cast<std::size_t>(param_ndim[i]);
    if (at + nd > param_dims.size() || p.unit < 0 || static_cast<std::size_t>(p.unit) >= nu) {
      throw CheckpointError(CheckpointErrorKind::kCorruptData, w + ": layout of parameter '" + p.name + "' is invalid");
    }
    p.shape.assign(param_dims.begin() + static_cast<std::ptrdiff_t>(at),
                   param_dims.begin() + static_cast<std::ptrdiff_t>(at + nd));
    at += nd;
    const UnitRecord& unit = layout.units[static_cast<std::size_t>(p.unit)];
    if (p.offset < 0 || p.offset + p.numel() > unit.numel || unit.shard_numel * shard_ranks < unit.numel) {
      throw CheckpointError(CheckpointErrorKind::kCorruptData,
                            w + ": parameter '" + p.name + "' lies outside its unit '" + unit.name + "'");
    }
    layout.params.push_back(std::move(p));
  }
  return layout;
}

}  // namespace

void write_meta_file(const std::string& path, const CheckpointMeta& meta) {
  {
    detail::Hdf5Guard guard;
    H5Id file = detail::create_file(path);
    const hid_t f = file.get();
    write_attribute(f, "tessera_checkpoint_format", kCheckpointFormatVersion);
    write_attribute(f, "kind", std::string("meta"));
    write_attribute(f, "step", meta.progress.step);
    write_attribute(f, "tokens_seen", meta.progress.tokens_seen);
    write_attribute(f, "samples_seen", meta.progress.samples_seen);
    write_attribute(f, "data_seed", static_cast<std::int64_t>(meta.progress.data_seed));
    write_attribute(f, "optimizer_steps", meta.optimizer_steps);
    write_attribute(f, "world_size", static_cast<std::int64_t>(meta.world_size));
    write_attribute(f, "shard_ranks", static_cast<std::int64_t>(meta.layout.shard_ranks));
    write_attribute(f, "hybrid_group", static_cast<std::int64_t>(meta.hybrid_group));
    write_attribute(f, "zero_stage", static_cast<std::int64_t>(zero_stage_number(meta.stage)));
    write_attribute(f, "param_dtype", std::string(dtype_name(meta.precision.param_dtype)));
    write_attribute(f, "reduce_dtype", std::string(dtype_name(meta.precision.reduce_dtype)));
    write_attribute(f, "optimizer", std::string(optimizer_kind_name(meta.optimizer.kind)));
    write_attribute(f, "adamw_beta1", static_cast<double>(meta.optimizer.adamw.beta1));
    write_attribute(f, "adamw_beta2", static_cast<double>(meta.optimizer.adamw.beta2));
    write_attribute(f, "adamw_eps", static_cast<double>(meta.optimizer.adamw.eps));
    write_attribute(f, "adamw_weight_decay", static_cast<double>(meta.optimizer.adamw.weight_decay));
    write_attribute(f, "grad_clip", static_cast<double>(meta.grad_clip));
    write_attribute(f, "created", meta.created.empty() ? utc_now() : meta.created);

    H5Id config = detail::create_group(f, "config", path);
    write_config_section(config.get(), "model", meta.config.model(), path);
    write_config_section(config.get(), "run", meta.config.run(), path);
    if (meta.loss_scaler) {
      H5Id scaler = detail::create_group(f, "loss_scaler", path);
      write_attribute(scaler.get(), "scale", static_cast<double>(meta.loss_scaler->scale));
      write_attribute(scaler.get(), "good_steps", meta.loss_scaler->good_steps);
      write_attribute(scaler.get(), "hysteresis_left", static_cast<std::int64_t>(meta.loss_scaler->hysteresis_left));
    }
    H5Id rng = detail::create_group(f, "rng", path);
    for (std::size_t r = 0; r < meta.rng_states.size(); ++r) {
      detail::write_vector(rng.get(), rng_name(static_cast<int>(r)), meta.rng_states[r]);
    }
    H5Id shards = detail::create_group(f, "shards", path);
    detail::write_vector(shards.get(), "file_bytes", meta.shard_file_bytes);
    write_layout(f, meta.layout, path);
    write_virtual_datasets(f, meta.layout, path);
    config.reset();
    rng.reset();
    shards.reset();
    detail::check_status(file.close(), CheckpointErrorKind::kIo, "closing " + path);
  }
  fsync_path(path);
}

CheckpointMeta read_meta_file(const std::string& path) {
  detail::Hdf5Guard guard;
  H5Id file = detail::open_file_read(path);
  const hid_t f = file.get();
  CheckpointMeta meta;
  if (!detail::has_attribute(f, "tessera_checkpoint_format")) {
    throw CheckpointError(CheckpointErrorKind::kUnknownFormat,
                          path + " is not a Tessera checkpoint (no tessera_checkpoint_format attribute)");
  }
  meta.format_version = read_int_attribute(f, "tessera_checkpoint_format", path);
  check_readable_format(meta.format_version, path);
  meta.progress.step = read_int_attribute(f, "step", path);
  meta.progress.tokens_seen = read_int_attribute(f, "tokens_seen", path);
  meta.progress.samples_seen = read_int_attribute(f, "samples_seen", path);
  meta.progress.data_seed = static_cast<std::uint64_t>(read_int_attribute(f, "data_seed", path));
  meta.optimizer_steps = read_int_attribute(f, "optimizer_steps", path);
  meta.world_size = static_cast<int>(read_int_attribute(f, "world_size", path));
  const auto shard_ranks = static_cast<int>(read_int_attribute(f, "shard_ranks", path));
  meta.hybrid_group = static_cast<int>(read_int_attribute(f, "hybrid_group", path));
  // A stored setting that does not parse is a damaged checkpoint, not a usage error.
  auto stored = [&path](const char* attribute, auto parse) {
    try {
      return parse();
    } catch (const std::invalid_argument& e) {
      throw CheckpointError(CheckpointErrorKind::kCorruptData,
                            path + ": the stored " + attribute + " is not valid (" + e.what() + ")");
    }
  };
  meta.stage = stored("zero_stage", [&] { return parse_zero_stage(static_cast<int>(read_int_attribute(f, "zero_stage", path))); });
  meta.precision.param_dtype =
      stored("param_dtype", [&] { return parse_dtype(read_string_attribute(f, "param_dtype", path), "param_dtype"); });
  meta.precision.reduce_dtype =
      stored("reduce_dtype", [&] { return parse_dtype(read_string_attribute(f, "reduce_dtype", path), "reduce_dtype"); });
  if (meta.format_version >= 2) {
    const std::string optimizer = read_string_attribute(f, "optimizer", path);
    try {
      meta.optimizer.kind = parse_optimizer_kind(optimizer);
    } catch (const std::invalid_argument&) {
      throw CheckpointError(CheckpointErrorKind::kUnknownFormat,
                            path + " was written by the optimizer '" + optimizer + "', which this build does not have");
    }
  }
  meta.optimizer.adamw.beta1 = static_cast<float>(read_double_attribute(f, "adamw_beta1", path));
  meta.optimizer.adamw.beta2 = static_cast<float>(read_double_attribute(f, "adamw_beta2", path));
  meta.optimizer.adamw.eps = static_cast<float>(read_double_attribute(f, "adamw_eps", path));
  meta.optimizer.adamw.weight_decay = static_cast<float>(read_double_attribute(f, "adamw_weight_decay", path));
  meta.grad_clip = static_cast<float>(read_double_attribute(f, "grad_clip", path));
  meta.created = read_string_attribute(f, "created", path);

  H5Id config = detail::open_group(f, "config", path);
  for (const auto& [key, value] : read_config_section(config.get(), "model", path)) meta.config.set_model(key, value);
  for (const auto& [key, value] : read_config_section(config.get(), "run", path)) meta.config.set_run(key, value);
  if (detail::link_exists(f, "loss_scaler")) {
    H5Id scaler = detail::open_group(f, "loss_scaler", path);
    const std::string w = path + ":/loss_scaler";
    meta.loss_scaler = DynamicLossScaler::State{static_cast<float>(read_double_attribute(scaler.get(), "scale", w)),
                                                read_int_attribute(scaler.get(), "good_steps", w),
                                                static_cast<int>(read_int_attribute(scaler.get(), "hysteresis_left", w))};
  }
  H5Id rng = detail::open_group(f, "rng", path);
  for (int r = 0; r < meta.world_size; ++r) {
    const std::string name = rng_name(r);
    meta.rng_states.push_back(detail::link_exists(rng.get(), name)
                                  ? detail::read_u64_vector(rng.get(), name, path + ":/rng")
                                  : std::vector<std::uint64_t>{});
  }
  H5Id shards = detail::open_group(f, "shards", path);
  meta.shard_file_bytes = detail::read_i64_vector(shards.get(), "file_bytes", path + ":/shards");
  if (shard_ranks < 1 || static_cast<int>(meta.shard_file_bytes.size()) != shard_ranks) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData,
                          path + ": shard_ranks " + std::to_string(shard_ranks) + " but " +
                              std::to_string(meta.shard_file_bytes.size()) + " recorded shard file sizes");
  }
  meta.layout = read_layout(f, shard_ranks, meta.format_version, path);
  return meta;
}

}  // namespace tessera
