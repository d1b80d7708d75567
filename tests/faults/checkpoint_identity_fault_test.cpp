// Every file of a checkpoint proves it belongs to the same save, and meta.h5 proves its own values:
//  * a shard file copied in from another save of the same step, or from another step, is refused
//    on load (on every rank) and by `tessera_ckpt verify`, naming the file and both ids and steps;
//  * a flipped value in meta.h5's layout tables (a parameter's offset) or in a stored setting or
//    config field is refused naming meta.h5 and the value, never loaded as another layout;
//  * a layout that is inconsistent in itself (overlapping parameters, one outside its unit) is
//    refused by structure, also where the digests would not tell;
//  * a format-2 checkpoint (no save ids, no digests) is refused by version, on load and by
//    `tessera_ckpt verify`, naming the file and the version.
// The engine is untouched by every refused load.
// tessera-test-ranks: 2
// tessera-test-timeout: 240
#include <gtest/gtest.h>

#include <functional>

#include "checkpoint_fault_support.hpp"
#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/checkpointing/format/checkpoint_meta.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/load/checkpoint_loader.hpp"
#include "tessera/checkpointing/save/checkpoint_saver.hpp"
#include "tests/checkpointing/checkpoint_test_support.hpp"

namespace fs = std::filesystem;

namespace tessera::testing {
namespace {

struct DamageCase {
  std::string name;
  std::function<void(const fs::path& ckpt)> damage;  // runs on rank 0
  std::vector<std::string> message_parts;            // in the load error and in `tessera_ckpt verify`
};

// Saves the tiny GPT's state after `steps` steps into run directory `dir`; returns its checkpoint.
fs::path save_after(Communicator& world, const fs::path& dir, int steps) {
  TrainedEngine run(world, RunSetup(ZeroStage::kStage2));
  run.train(0, steps);
  return save_checkpoint(*run.engine, world, dir, run.progress(steps), tiny_run_config()).path;
}

std::string fingerprint(ShardedEngine& engine) {
  std::string out;
  for (const auto& [name, values] : gather_state(engine, 0)) {
    out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  }
  return out + std::to_string(engine.optimizer_steps());
}

void set_string_attribute(const fs::path& file, const std::string& object, const std::string& name,
                          const std::string& value) {
  detail::Hdf5Guard guard;
  detail::H5Id f = detail::open_file_readwrite(file.string());
  detail::H5Id o(H5Oopen(f.get(), object.c_str(), H5P_DEFAULT), H5Oclose);
  detail::write_attribute(o.get(), name, value);
}

void set_int_attribute(const fs::path& file, const std::string& name, std::int64_t value) {
  detail::Hdf5Guard guard;
  detail::H5Id f = detail::open_file_readwrite(file.string());
  detail::write_attribute(f.get(), name, value);
}

// Turns a format-3 checkpoint into the format-2 files of the same state: no save ids, no healthy
// flag, no digests.
void downgrade_to_format2(const fs::path& ckpt) {
  detail::Hdf5Guard guard;
  for (const auto& entry : fs::directory_iterator(ckpt)) {
    detail::H5Id f = detail::open_file_readwrite(entry.path().string());
    H5Adelete(f.get(), "save_id");
    if (detail::has_attribute(f.get(), "healthy")) H5Adelete(f.get(), "healthy");
    if (detail::link_exists(f.get(), "xxh64")) H5Ldelete(f.get(), "xxh64", H5P_DEFAULT);
    detail::write_attribute(f.get(), "tessera_checkpoint_format", std::int64_t{2});
  }
}

TEST(CheckpointIdentity, ForeignShardFilesAndDamagedMetaAreRefusedByName) {
  MpiCommunicator world(MPI_COMM_WORLD);
  SharedTempDir tmp;
  const fs::path good = save_after(world, tmp.path() / "good", 2);
  const fs::path other_save = save_after(world, tmp.path() / "other_save", 2);  // same step, another save
  const fs::path other_step = save_after(world, tmp.path() / "other_step", 1);
  const std::string shard1 = shard_file_name(1);
  const std::vector<std::int64_t> offsets = read_i64_table(good / kMetaFileName, "/layout/param_offset");

  const std::vector<DamageCase> cases = {
      {"shard file of another save of the same step",
       [&](const fs::path& c) { fs::copy_file(other_save / shard1, c / shard1, fs::copy_options::overwrite_existing); },
       {shard1, "does not belong to this checkpoint", "of step 2, but", "meta.h5 describes save"}},
      {"shard file of another step",
       [&](const fs::path& c) { fs::copy_file(other_step / shard1, c / shard1, fs::copy_options::overwrite_existing); },
       {shard1, "does not belong to this checkpoint", "of step 1, but", "of step 2"}},
      {"flipped bit in a parameter offset (on disk)",
       [&](const fs::path& c) {
         // Bit 3 of the last parameter's offset (i64, little-endian): the parameter would move by 8.
         flip_stored_bit(c / kMetaFileName, "/layout/param_offset", (offsets.size() - 1) * 8, 0x08);
       },
       {"meta.h5 is corrupted", "layout.param_offset", "xxh64"}},
      {"flipped bit in a shard file size (rewritten through HDF5)",
       [&](const fs::path& c) {
         std::vector<std::int64_t> sizes = read_i64_table(c / kMetaFileName, "/shards/file_bytes");
         sizes[0] ^= 1 << 20;
         rewrite_i64_table(c / kMetaFileName, "/shards/file_bytes", sizes);
       },
       {"meta.h5 is corrupted", "shards.file_bytes"}},
      {"corrupt stored setting (zero_stage 7)",
       [](const fs::path& c) { set_int_attribute(c / kMetaFileName, "zero_stage", 7); },
       {"meta.h5 is corrupted", "zero_stage"}},
      {"corrupt config field",
       [](const fs::path& c) { set_string_attribute(c / kMetaFileName, "/config/model", "layers", "3"); },
       {"meta.h5 is corrupted", "config.model.layers"}},
  };

  TrainedEngine victim(world, RunSetup(ZeroStage::kStage2), /*seed=*/999);
  victim.train(0, 1);
  const std::string before = fingerprint(*victim.engine);
  for (const DamageCase& c : cases) {
    const fs::path ckpt = tmp.path() / ("case_" + std::to_string(&c - cases.data())) / step_dir_name(2);
    if (world.rank() == 0) {
      fs::create_directories(ckpt.parent_path());
      fs::copy(good, ckpt, fs::copy_options::recursive);
      c.damage(ckpt);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    try {
      load_checkpoint(*victim.engine, world, ckpt, tiny_run_config());
      ADD_FAILURE() << c.name << ": loaded, rank " << world.rank();
    } catch (const CheckpointError& e) {
      EXPECT_EQ(e.kind(), CheckpointErrorKind::kCorruptData) << c.name << ": " << e.what();
      for (const std::string& part : c.message_parts) {
        EXPECT_TRUE(contains(e.what(), part)) << c.name << ": no \"" << part << "\" in: " << e.what();
      }
    }
    EXPECT_EQ(fingerprint(*victim.engine), before) << c.name << ": the engine changed";
    if (world.rank() == 0) {
      const ChildResult verify = run_child_job(tessera_ckpt_bin() + " verify " + ckpt.string(), 60);
      EXPECT_EQ(verify.exit_code, 1) << c.name << ":\n" << verify.output;
      EXPECT_TRUE(contains(verify.output, "corrupt data")) << c.name << ":\n" << verify.output;
      for (const std::string& part : c.message_parts) {
        EXPECT_TRUE(contains(verify.output, part)) << c.name << ": no \"" << part << "\" in:\n" << verify.output;
      }
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  // The untouched checkpoint verifies and names its save.
  if (world.rank() == 0) {
    const ChildResult verify = run_child_job(tessera_ckpt_bin() + " verify " + good.string(), 60);
    EXPECT_EQ(verify.exit_code, 0) << verify.output;
    EXPECT_TRUE(contains(verify.output, "2 shard file(s) belong to this save")) << verify.output;
    EXPECT_TRUE(contains(verify.output, "save id ")) << verify.output;
    // A stored setting that does not parse is a corrupt checkpoint, not a usage error (exit 2).
    const fs::path bad = tmp.path() / "bad_setting" / step_dir_name(2);
    fs::create_directories(bad.parent_path());
    fs::copy(good, bad, fs::copy_options::recursive);
    set_string_attribute(bad / kMetaFileName, "/", "param_dtype", "f8");
    const ChildResult info = run_child_job(tessera_ckpt_bin() + " info " + bad.string(), 60);
    EXPECT_EQ(info.exit_code, 1) << info.output;
    EXPECT_TRUE(contains(info.output, "meta.h5 is corrupted")) << info.output;
    EXPECT_TRUE(contains(info.output, "param_dtype")) << info.output;
  }
}

TEST(CheckpointIdentity, InconsistentLayoutsAreRefusedByStructure) {
  CheckpointLayout layout;
  layout.shard_ranks = 2;
  layout.units = {{"h.0", 100, 50}};
  layout.params = {{"h.0.a", {10, 5}, 0, 0}, {"h.0.b", {40}, 0, 50}};
  EXPECT_NO_THROW(check_layout_structure(layout, "ckpt/meta.h5:/layout"));
  struct Broken {
    std::string name;
    std::function<void(CheckpointLayout&)> change;
    std::string message;
  };
  const std::vector<Broken> broken = {
      {"overlap", [](CheckpointLayout& l) { l.params[1].offset = 40; }, "'h.0.a' [0, 50) and 'h.0.b' [40, 80) overlap"},
      {"out of range", [](CheckpointLayout& l) { l.params[1].offset = 70; },
       "'h.0.b' at elements [70, 110) lies outside"},
      {"unit index", [](CheckpointLayout& l) { l.params[1].unit = 3; }, "'h.0.b' names unit 3 of 1"},
      {"shards too small", [](CheckpointLayout& l) { l.units[0].shard_numel = 40; }, "do not hold them"},
      {"duplicate name", [](CheckpointLayout& l) { l.params[1].name = "h.0.a"; }, "'h.0.a' is listed twice"},
  };
  for (const Broken& b : broken) {
    CheckpointLayout changed = layout;
    b.change(changed);
    try {
      check_layout_structure(changed, "ckpt/meta.h5:/layout");
      ADD_FAILURE() << b.name << " was accepted";
    } catch (const CheckpointError& e) {
      EXPECT_EQ(e.kind(), CheckpointErrorKind::kCorruptData) << b.name;
      EXPECT_TRUE(contains(e.what(), "ckpt/meta.h5:/layout is corrupted")) << b.name << ": " << e.what();
      EXPECT_TRUE(contains(e.what(), b.message)) << b.name << ": " << e.what();
    }
  }
}

TEST(CheckpointIdentity, Format2CheckpointsAreRefusedByVersion) {
  MpiCommunicator world(MPI_COMM_WORLD);
  SharedTempDir tmp;
  const fs::path ckpt = save_after(world, tmp.path() / "run", 2);
  if (world.rank() == 0) downgrade_to_format2(ckpt);
  MPI_Barrier(MPI_COMM_WORLD);
  const std::string meta_file = (ckpt / kMetaFileName).string();
  TrainedEngine resumed(world, RunSetup(ZeroStage::kStage3), /*seed=*/999);
  const auto before = gather_state(*resumed.engine, 0);
  try {
    load_checkpoint(*resumed.engine, world, ckpt, tiny_run_config());
    ADD_FAILURE() << "a format-2 checkpoint was loaded";
  } catch (const CheckpointError& e) {
    EXPECT_EQ(e.kind(), CheckpointErrorKind::kUnknownFormat) << e.what();
    EXPECT_TRUE(contains(e.what(), meta_file + " has checkpoint format version 2; this build reads versions 3 to 5"))
        << e.what();
  }
  EXPECT_EQ(compare_states(gather_state(*resumed.engine, 0), before), "") << "a refused load changed the engine";
  if (world.rank() == 0) {
    const ChildResult verify = run_child_job(tessera_ckpt_bin() + " verify " + ckpt.string(), 60);
    EXPECT_NE(verify.exit_code, 0) << verify.output;
    EXPECT_TRUE(contains(verify.output, "format version 2")) << verify.output;
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace
}  // namespace tessera::testing
