// meta.h5 reading and writing.
#include "tessera/checkpointing/format/checkpoint_meta.hpp"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <type_traits>

#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/format/hdf5_util.hpp"
#include "tessera/checkpointing/format/meta_digests.hpp"
#include "tessera/checkpointing/format/virtual_datasets.hpp"
#include "tessera/checkpointing/save/disk_space.hpp"
#include "tessera/checkpointing/save/shard_file_writer.hpp"

namespace tessera {
namespace {

using detail::H5Id;
using detail::MetaDigests;
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

// Writes a table and records its digest as "<section>.<name>".
template <typename T>
void write_table(hid_t group, const std::string& section, const std::string& name, const std::vector<T>& values,
                 MetaDigests& digests) {
  if constexpr (std::is_same_v<T, std::string>) {
    detail::write_strings(group, name, values);
  } else {
    detail::write_vector(group, name, values);
  }
  digests.record(section + "." + name, values);
}

// Format 5's tables of a tensor-parallel layout: each unit's group rank, each parameter's piece
// (split: dim, parts, index, segment count; then the segments of all of them in one table).
void write_tensor_parallel_layout(hid_t g, const CheckpointLayout& layout, MetaDigests& digests) {
  const std::int64_t tp = layout.tp;
  detail::write_attribute(g, "tensor_parallel", tp);
  digests.record("layout.tensor_parallel", &tp, sizeof tp);
  std::vector<std::int32_t> unit_tp_rank, param_split;
  std::vector<std::int64_t> param_segments;
  for (const UnitRecord& u : layout.units) unit_tp_rank.push_back(u.tp_rank);
  for (const ParamRecord& p : layout.params) {
    param_split.insert(param_split.end(),
                       {p.slice.dim, p.slice.parts, p.slice.index, static_cast<std::int32_t>(p.slice.segments.size())});
    param_segments.insert(param_segments.end(), p.slice.segments.begin(), p.slice.segments.end());
  }
  write_table(g, "layout", "unit_tp_rank", unit_tp_rank, digests);
  write_table(g, "layout", "param_split", param_split, digests);
  write_table(g, "layout", "param_segments", param_segments, digests);
}

void write_layout(hid_t file, const CheckpointLayout& layout, const std::string& where, MetaDigests& digests) {
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
  const hid_t g = group.get();
  write_table(g, "layout", "unit_names", unit_names, digests);
  write_table(g, "layout", "unit_numel", unit_numel, digests);
  write_table(g, "layout", "unit_shard_numel", unit_shard, digests);
  write_table(g, "layout", "param_names", param_names, digests);
  write_table(g, "layout", "param_unit", param_unit, digests);
  write_table(g, "layout", "param_offset", param_offset, digests);
  write_table(g, "layout", "param_ndim", param_ndim, digests);
  write_table(g, "layout", "param_dims", param_dims, digests);
  std::vector<std::string> state_names, state_dtypes;
  std::vector<std::int64_t> state_elements_per_value;
  for (const StateSpec& spec : layout.states) {
    state_names.push_back(spec.name);
    state_dtypes.push_back(dtype_name(spec.dtype));
    state_elements_per_value.push_back(spec.elements_per_value);
  }
  write_table(g, "layout", "state_names", state_names, digests);
  write_table(g, "layout", "state_dtypes", state_dtypes, digests);
  write_table(g, "layout", "state_elements_per_value", state_elements_per_value, digests);
  detail::write_attribute(g, "state_alignment", layout.state_alignment);
  digests.record("layout.state_alignment", &layout.state_alignment, sizeof layout.state_alignment);
  if (layout.tp > 1) write_tensor_parallel_layout(g, layout, digests);
}

// The state tensors of a format-1 checkpoint, which did not list them.
// Reads a table of /layout and checks it against its recorded digest.
std::vector<std::string> read_string_table(hid_t group, const std::string& name, const std::string& w,
                                           const MetaDigests& digests, const std::string& file) {
  auto values = detail::read_strings(group, name, w);
  digests.check("layout." + name, values, file);
  return values;
}
template <typename T>
std::vector<T> read_number_table(hid_t group, const std::string& name, const std::string& w, const MetaDigests& digests,
                                 const std::string& file) {
  std::vector<T> values;
  if constexpr (std::is_same_v<T, std::int32_t>) {
    values = detail::read_i32_vector(group, name, w);
  } else {
    values = detail::read_i64_vector(group, name, w);
  }
  digests.check("layout." + name, values, file);
  return values;
}

std::vector<StateSpec> read_states(hid_t layout_group, std::int64_t alignment, const std::string& w,
                                   const MetaDigests& digests, const std::string& file) {
  const auto names = read_string_table(layout_group, "state_names", w, digests, file);
  const auto dtypes = read_string_table(layout_group, "state_dtypes", w, digests, file);
  const auto per_value = read_number_table<std::int64_t>(layout_group, "state_elements_per_value", w, digests, file);
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
                                " elements per value, which does not divide the alignment " +
                                std::to_string(alignment));
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

// Format 5's tensor-parallel tables into `layout` (units and parameters read already).
void read_tensor_parallel_layout(hid_t g, CheckpointLayout& layout, const std::string& w, const MetaDigests& digests,
                                 const std::string& where) {
  const std::int64_t tp = read_int_attribute(g, "tensor_parallel", w);
  digests.check("layout.tensor_parallel", &tp, sizeof tp, where);
  const auto unit_tp_rank = read_number_table<std::int32_t>(g, "unit_tp_rank", w, digests, where);
  const auto param_split = read_number_table<std::int32_t>(g, "param_split", w, digests, where);
  const auto param_segments = read_number_table<std::int64_t>(g, "param_segments", w, digests, where);
  if (tp < 1 || tp > layout.shard_ranks || unit_tp_rank.size() != layout.units.size() ||
      param_split.size() != 4 * layout.params.size()) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData, w + ": tensor-parallel tables have inconsistent lengths");
  }
  layout.tp = static_cast<int>(tp);
  for (std::size_t u = 0; u < layout.units.size(); ++u) layout.units[u].tp_rank = unit_tp_rank[u];
  std::size_t at = 0;
  for (std::size_t i = 0; i < layout.params.size(); ++i) {
    TensorSlice& slice = layout.params[i].slice;
    slice.dim = param_split[4 * i];
    slice.parts = param_split[4 * i + 1];
    slice.index = param_split[4 * i + 2];
    const auto count = static_cast<std::size_t>(std::max(0, param_split[4 * i + 3]));
    if (at + count > param_segments.size()) {
      throw CheckpointError(CheckpointErrorKind::kCorruptData,
                            w + ": the pieces of parameter '" + layout.params[i].name + "' are invalid");
    }
    slice.segments.assign(param_segments.begin() + static_cast<std::ptrdiff_t>(at),
                          param_segments.begin() + static_cast<std::ptrdiff_t>(at + count));
    at += count;
  }
}

CheckpointLayout read_layout(hid_t file, int shard_ranks, const std::string& where, const MetaDigests& digests) {
  H5Id group = detail::open_group(file, "layout", where);
  const hid_t g = group.get();
  const std::string w = where + ":/layout";
  CheckpointLayout layout;
  layout.shard_ranks = shard_ranks;
  const auto unit_names = read_string_table(g, "unit_names", w, digests, where);
  const auto unit_numel = read_number_table<std::int64_t>(g, "unit_numel", w, digests, where);
  const auto unit_shard = read_number_table<std::int64_t>(g, "unit_shard_numel", w, digests, where);
  const auto param_names = read_string_table(g, "param_names", w, digests, where);
  const auto param_unit = read_number_table<std::int32_t>(g, "param_unit", w, digests, where);
  const auto param_offset = read_number_table<std::int64_t>(g, "param_offset", w, digests, where);
  const auto param_ndim = read_number_table<std::int32_t>(g, "param_ndim", w, digests, where);
  const auto param_dims = read_number_table<std::int64_t>(g, "param_dims", w, digests, where);
  layout.state_alignment = read_int_attribute(g, "state_alignment", w);
  digests.check("layout.state_alignment", &layout.state_alignment, sizeof layout.state_alignment, where);
  if (layout.state_alignment < 1) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData,
                          w + ": state_alignment " + std::to_string(layout.state_alignment) + " is not positive");
  }
  layout.states = read_states(g, layout.state_alignment, w, digests, where);
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
    if (param_ndim[i] < 0 || at + nd > param_dims.size() || p.unit < 0 || static_cast<std::size_t>(p.unit) >= nu) {
      throw CheckpointError(CheckpointErrorKind::kCorruptData, w + ": layout of parameter '" + p.name + "' is invalid");
    }
    p.shape.assign(param_dims.begin() + static_cast<std::ptrdiff_t>(at),
                   param_dims.begin() + static_cast<std::ptrdiff_t>(at + nd));
    at += nd;
    layout.params.push_back(std::move(p));
  }
  if (at != param_dims.size()) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData, w + ": param_ndim adds up to " + std::to_string(at) +
                                                                 " dims but param_dims holds " +
                                                                 std::to_string(param_dims.size()));
  }
  if (detail::has_attribute(g, "tensor_parallel")) read_tensor_parallel_layout(g, layout, w, digests, where);
  check_layout_structure(layout, w);  // ranges, overlaps, names
  return layout;
}

// Writes root-level and group attributes of meta.h5, recording each value's digest by name.
class DigestedWriter {
 public:
  explicit DigestedWriter(MetaDigests& digests) : digests_(digests) {}
  void attribute(hid_t loc, const std::string& prefix, const std::string& name, std::int64_t value) {
    write_attribute(loc, name, value);
    digests_.record(prefix + name, &value, sizeof value);
  }
  void attribute(hid_t loc, const std::string& prefix, const std::string& name, double value) {
    write_attribute(loc, name, value);
    digests_.record(prefix + name, &value, sizeof value);
  }
  void attribute(hid_t loc, const std::string& prefix, const std::string& name, const std::string& value) {
    write_attribute(loc, name, value);
    digests_.record(prefix + name, value);
  }

 private:
  MetaDigests& digests_;
};

// Reads attributes and checks each against its recorded digest (format 3).
class DigestedReader {
 public:
  DigestedReader(const MetaDigests& digests, std::string file) : digests_(digests), file_(std::move(file)) {}
  std::int64_t integer(hid_t loc, const std::string& prefix, const std::string& name, const std::string& where) const {
    const std::int64_t value = read_int_attribute(loc, name, where);
    digests_.check(prefix + name, &value, sizeof value, file_);
    return value;
  }
  double real(hid_t loc, const std::string& prefix, const std::string& name, const std::string& where) const {
    const double value = read_double_attribute(loc, name, where);
    digests_.check(prefix + name, &value, sizeof value, file_);
    return value;
  }
  std::string text(hid_t loc, const std::string& prefix, const std::string& name, const std::string& where) const {
    std::string value = read_string_attribute(loc, name, where);
    digests_.check(prefix + name, value, file_);
    return value;
  }

 private:
  const MetaDigests& digests_;
  std::string file_;
};

// A stored setting outside what a checkpoint can hold: the checkpoint is corrupt.
void require_stored(bool ok, const std::string& path, const std::string& field, const std::string& value,
                    const std::string& expected) {
  if (ok) return;
  throw CheckpointError(CheckpointErrorKind::kCorruptData, path + " is corrupted: its stored " + field + " is " +
                                                               value + ", but " + expected +
                                                               "; resume from an earlier checkpoint");
}

}  // namespace

void write_meta_file(const std::string& path, const CheckpointMeta& meta) {
  try {
    detail::Hdf5Guard guard;
    H5Id file = detail::create_file(path);
    const hid_t f = file.get();
    MetaDigests digests;
    DigestedWriter w(digests);
    // Format 5 only where its tables are needed: a checkpoint without tensor parallelism stays
    // readable by builds that read 4.
    w.attribute(f, "", "tessera_checkpoint_format", meta.layout.tp > 1 ? kTensorParallelFormat : kPlainFormat);
    w.attribute(f, "", "kind", std::string("meta"));
    w.attribute(f, "", "save_id", detail::hex64(meta.save_id));
    w.attribute(f, "", "healthy", std::int64_t{meta.health == StateHealth::kHealthy ? 1 : 0});
    w.attribute(f, "", "step", meta.progress.step);
    w.attribute(f, "", "tokens_seen", meta.progress.tokens_seen);
    w.attribute(f, "", "samples_seen", meta.progress.samples_seen);
    w.attribute(f, "", "data_seed", static_cast<std::int64_t>(meta.progress.data_seed));
    w.attribute(f, "", "optimizer_steps", meta.optimizer_steps);
    w.attribute(f, "", "world_size", static_cast<std::int64_t>(meta.world_size));
    w.attribute(f, "", "shard_ranks", static_cast<std::int64_t>(meta.layout.shard_ranks));
    w.attribute(f, "", "hybrid_group", static_cast<std::int64_t>(meta.hybrid_group));
    w.attribute(f, "", "zero_stage", static_cast<std::int64_t>(zero_stage_number(meta.stage)));
    w.attribute(f, "", "param_dtype", std::string(dtype_name(meta.precision.param_dtype)));
    w.attribute(f, "", "reduce_dtype", std::string(dtype_name(meta.precision.reduce_dtype)));
    w.attribute(f, "", "compute_dtype", std::string(dtype_name(meta.precision.compute_dtype)));
    w.attribute(f, "", "optimizer", std::string(optimizer_kind_name(meta.optimizer.kind)));
    w.attribute(f, "", "adamw_beta1", static_cast<double>(meta.optimizer.adamw.beta1));
    w.attribute(f, "", "adamw_beta2", static_cast<double>(meta.optimizer.adamw.beta2));
    w.attribute(f, "", "adamw_eps", static_cast<double>(meta.optimizer.adamw.eps));
    w.attribute(f, "", "adamw_weight_decay", static_cast<double>(meta.optimizer.adamw.weight_decay));
    w.attribute(f, "", "grad_clip", static_cast<double>(meta.grad_clip));
    w.attribute(f, "", "created", meta.created.empty() ? utc_now() : meta.created);

    H5Id config = detail::create_group(f, "config", path);
    for (const char* section : {"model", "run"}) {
      H5Id group = detail::create_group(config.get(), section, path);
      const auto& fields = std::string(section) == "model" ? meta.config.model() : meta.config.run();
      for (const auto& [key, value] : fields)
        w.attribute(group.get(), std::string("config.") + section + ".", key, value);
    }
    if (!meta.config.effective_config().empty()) {
      w.attribute(config.get(), "config.", "effective", meta.config.effective_config());
    }
    if (!meta.config.environment_report().empty()) {
      w.attribute(config.get(), "config.", "environment", meta.config.environment_report());
    }
    if (meta.loss_scaler) {
      H5Id scaler = detail::create_group(f, "loss_scaler", path);
      w.attribute(scaler.get(), "loss_scaler.", "scale", static_cast<double>(meta.loss_scaler->scale));
      w.attribute(scaler.get(), "loss_scaler.", "good_steps", meta.loss_scaler->good_steps);
      w.attribute(scaler.get(), "loss_scaler.", "hysteresis_left",
                  static_cast<std::int64_t>(meta.loss_scaler->hysteresis_left));
    }
    H5Id rng = detail::create_group(f, "rng", path);
    for (std::size_t r = 0; r < meta.rng_states.size(); ++r) {
      write_table(rng.get(), "rng", rng_name(static_cast<int>(r)), meta.rng_states[r], digests);
    }
    H5Id shards = detail::create_group(f, "shards", path);
    write_table(shards.get(), "shards", "file_bytes", meta.shard_file_bytes, digests);
    write_layout(f, meta.layout, path, digests);
    write_virtual_datasets(f, meta.layout, path);
    digests.write(f, path);
    config.reset();
    rng.reset();
    shards.reset();
    detail::check_status(file.close(), CheckpointErrorKind::kIo, "closing " + path);
    fsync_path(path);
  } catch (const CheckpointError& e) {
    // What meta.h5 needs: a few KiB of settings plus the tables and virtual datasets per parameter.
    const auto estimate = static_cast<std::int64_t>(65536 + 512 * meta.layout.params.size());
    throw explain_write_failure(e, path, estimate);
  }
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
  const MetaDigests digests = MetaDigests::read(f, path);
  digests.check("tessera_checkpoint_format", &meta.format_version, sizeof meta.format_version, path);
  const DigestedReader r(digests, path);
  const std::string id = r.text(f, "", "save_id", path);
  require_stored(detail::parse_hex64(id, meta.save_id) && meta.save_id != 0, path, "save_id", "'" + id + "'",
                 "a save id is 16 hex digits, not all zero");
  const std::int64_t healthy = r.integer(f, "", "healthy", path);
  require_stored(healthy == 0 || healthy == 1, path, "healthy", std::to_string(healthy), "it is 0 or 1");
  meta.health = healthy == 1 ? StateHealth::kHealthy : StateHealth::kNonFinite;
  // Counters must be >= 0 and counts >= 1: anything else is damage, named by field.
  auto counter = [&](const char* name, std::int64_t least) {
    const std::int64_t value = r.integer(f, "", name, path);
    require_stored(value >= least, path, name, std::to_string(value), "it is at least " + std::to_string(least));
    return value;
  };
  meta.progress.step = counter("step", 0);
  meta.progress.tokens_seen = counter("tokens_seen", 0);
  meta.progress.samples_seen = counter("samples_seen", 0);
  meta.progress.data_seed = static_cast<std::uint64_t>(r.integer(f, "", "data_seed", path));
  meta.optimizer_steps = counter("optimizer_steps", 0);
  meta.world_size = static_cast<int>(counter("world_size", 1));
  const auto shard_ranks = static_cast<int>(counter("shard_ranks", 1));
  meta.hybrid_group = static_cast<int>(counter("hybrid_group", 0));
  // A stored setting that does not parse is a damaged checkpoint, not a usage error.
  auto stored = [&path](const char* attribute, auto parse) {
    try {
      return parse();
    } catch (const std::invalid_argument& e) {
      throw CheckpointError(CheckpointErrorKind::kCorruptData, path + " is corrupted: its stored " + attribute +
                                                                   " is not valid (" + e.what() +
                                                                   "); resume from an earlier checkpoint");
    }
  };
  meta.stage =
      stored("zero_stage", [&] { return parse_zero_stage(static_cast<int>(r.integer(f, "", "zero_stage", path))); });
  meta.precision.param_dtype =
      stored("param_dtype", [&] { return parse_dtype(r.text(f, "", "param_dtype", path), "param_dtype"); });
  meta.precision.reduce_dtype =
      stored("reduce_dtype", [&] { return parse_dtype(r.text(f, "", "reduce_dtype", path), "reduce_dtype"); });
  if (detail::has_attribute(f, "compute_dtype")) {  // checkpoints from before bf16 compute computed in f32
    meta.precision.compute_dtype =
        stored("compute_dtype", [&] { return parse_dtype(r.text(f, "", "compute_dtype", path), "compute_dtype"); });
  }
  const std::string optimizer = r.text(f, "", "optimizer", path);
  try {
    meta.optimizer.kind = parse_optimizer_kind(optimizer);
  } catch (const std::invalid_argument&) {
    throw CheckpointError(CheckpointErrorKind::kUnknownFormat,
                          path + " was written by the optimizer '" + optimizer + "', which this build does not have");
  }
  meta.optimizer.adamw.beta1 = static_cast<float>(r.real(f, "", "adamw_beta1", path));
  meta.optimizer.adamw.beta2 = static_cast<float>(r.real(f, "", "adamw_beta2", path));
  meta.optimizer.adamw.eps = static_cast<float>(r.real(f, "", "adamw_eps", path));
  meta.optimizer.adamw.weight_decay = static_cast<float>(r.real(f, "", "adamw_weight_decay", path));
  meta.grad_clip = static_cast<float>(r.real(f, "", "grad_clip", path));
  meta.created = r.text(f, "", "created", path);

  H5Id config = detail::open_group(f, "config", path);
  for (const char* section : {"model", "run"}) {
    H5Id group = detail::open_group(config.get(), section, path);
    const std::string where = path + ":/config/" + section, prefix = std::string("config.") + section + ".";
    for (const std::string& key : detail::attribute_names(group.get())) {
      const std::string value = r.text(group.get(), prefix, key, where);
      if (std::string(section) == "model") {
        meta.config.set_model(key, value);
      } else {
        meta.config.set_run(key, value);
      }
    }
  }
  if (detail::has_attribute(config.get(), "effective")) {
    meta.config.set_effective_config(r.text(config.get(), "config.", "effective", path + ":/config"));
  }
  if (detail::has_attribute(config.get(), "environment")) {
    meta.config.set_environment_report(r.text(config.get(), "config.", "environment", path + ":/config"));
  }
  if (detail::link_exists(f, "loss_scaler")) {
    H5Id scaler = detail::open_group(f, "loss_scaler", path);
    const std::string w = path + ":/loss_scaler";
    meta.loss_scaler =
        DynamicLossScaler::State{static_cast<float>(r.real(scaler.get(), "loss_scaler.", "scale", w)),
                                 r.integer(scaler.get(), "loss_scaler.", "good_steps", w),
                                 static_cast<int>(r.integer(scaler.get(), "loss_scaler.", "hysteresis_left", w))};
    require_stored(std::isfinite(meta.loss_scaler->scale) && meta.loss_scaler->scale > 0.0f, path, "loss_scaler.scale",
                   std::to_string(meta.loss_scaler->scale), "a loss scale is finite and positive");
  }
  H5Id rng = detail::open_group(f, "rng", path);
  for (int rank = 0; rank < meta.world_size; ++rank) {
    const std::string name = rng_name(rank);
    std::vector<std::uint64_t> words;
    if (detail::link_exists(rng.get(), name)) {
      words = detail::read_u64_vector(rng.get(), name, path + ":/rng");
      digests.check("rng." + name, words, path);
    }
    meta.rng_states.push_back(std::move(words));
  }
  H5Id shards = detail::open_group(f, "shards", path);
  meta.shard_file_bytes = detail::read_i64_vector(shards.get(), "file_bytes", path + ":/shards");
  digests.check("shards.file_bytes", meta.shard_file_bytes, path);
  if (static_cast<int>(meta.shard_file_bytes.size()) != shard_ranks) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData,
                          path + ": shard_ranks " + std::to_string(shard_ranks) + " but " +
                              std::to_string(meta.shard_file_bytes.size()) + " recorded shard file sizes");
  }
  meta.layout = read_layout(f, shard_ranks, path, digests);
  return meta;
}

std::optional<StateHealth> read_checkpoint_health(const std::string& path) {
  try {
    detail::Hdf5Guard guard;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
    H5Id file = detail::open_file_read(path);
    const std::int64_t format = read_int_attribute(file.get(), "tessera_checkpoint_format", path);
    if (format < kOldestReadableFormat || format > kCheckpointFormatVersion) return std::nullopt;
    return read_int_attribute(file.get(), "healthy", path) == 1 ? StateHealth::kHealthy : StateHealth::kNonFinite;
  } catch (const CheckpointError&) {
    return std::nullopt;
  }
}

}  // namespace tessera
