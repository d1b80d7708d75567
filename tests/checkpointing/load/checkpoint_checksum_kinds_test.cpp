// Both chunk checksums through whole checkpoints: a format-3 checkpoint (XXH64 chunk sums, kept under
// tests/checkpointing/data/, written by the format-3 build: 2 ranks ZeRO-2, chunks of 1024, every
// state value a closed-form function of its unit, state and position) loads at 1 and 2 ranks, and
// one damaged chunk in it is refused on every rank naming the chunk and XXH64; a new save is
// format 4, records xxh3_64 in every shard file, loads, and refuses a damaged chunk the same way.
// tessera-test-ranks: 2
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "tessera/checkpointing/export/gpt_model_fields.hpp"
#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/format/hdf5_util.hpp"
#include "tessera/checkpointing/load/checkpoint_loader.hpp"
#include "tessera/checkpointing/save/checkpoint_saver.hpp"
#include "tests/checkpointing/checkpoint_test_support.hpp"

namespace tessera::testing {
namespace {

namespace fs = std::filesystem;

// The fixture's model (vocab 264, 16 positions, 1 block, 2 heads, 16 channels).
GptConfig fixture_gpt() { return {/*vocab*/ 264, /*seq*/ 16, /*layers*/ 1, /*heads*/ 2, /*dim*/ 16}; }

fs::path fixture_dir() {
  const char* source = std::getenv("TESSERA_SOURCE_DIR");
  return fs::path(source != nullptr ? source : ".") / "tests/checkpointing/data/format3_zero2_2ranks";
}

// The value the fixture stores for state k of unit u at flat position p (exact in f32).
float fixture_value(std::size_t u, std::size_t k, std::int64_t p) {
  return static_cast<float>(p % 251) * 0.25f + static_cast<float>(k) * 100.0f + static_cast<float>(u);
}

struct Engine {
  std::unique_ptr<Device> device = make_cpu_device();
  Gpt model{fixture_gpt()};
  std::unique_ptr<ShardedEngine> engine;
  explicit Engine(Communicator& comm) {
    ShardingConfig config;
    config.stage = ZeroStage::kStage2;
    engine = std::make_unique<ShardedEngine>(model, *device, comm, config, 99);
  }
};

RunConfig fixture_config() {
  RunConfig config;
  add_gpt_config(config, fixture_gpt());
  return config;
}

// Sets every state value of the engine to fixture_value (what the fixture was written with).
void fill_fixture_values(ShardedEngine& engine) {
  const auto& units = engine.units();
  for (std::size_t u = 0; u < units.size(); ++u) {
    const FlatRange r = units[u]->optimizer_range();
    for (std::size_t k = 0; k < units[u]->state().size(); ++k) {
      std::vector<float> v(static_cast<std::size_t>(r.count));
      for (std::int64_t i = 0; i < r.count; ++i) {
        const std::int64_t p = r.begin + i;
        v[static_cast<std::size_t>(i)] = p < units[u]->layout().numel() ? fixture_value(u, k, p) : 0.0f;
      }
      units[u]->write_state(k, 0, r.count, v.data());
    }
  }
}

// "" when every state value of this rank's ranges is fixture_value, else the first that is not.
std::string check_fixture_values(const ShardedEngine& engine) {
  const auto& units = engine.units();
  for (std::size_t u = 0; u < units.size(); ++u) {
    const FlatRange r = units[u]->optimizer_range();
    for (std::size_t k = 0; k < units[u]->state().size(); ++k) {
      std::vector<float> v(static_cast<std::size_t>(r.count));
      units[u]->read_state(k, 0, r.count, v.data());
      for (std::int64_t i = 0; i < r.count && r.begin + i < units[u]->layout().numel(); ++i) {
        const float expected = fixture_value(u, k, r.begin + i);
        if (v[static_cast<std::size_t>(i)] != expected) {
          return "unit " + units[u]->name() + " state " + std::to_string(k) + " position " +
                 std::to_string(r.begin + i) + ": expected " + std::to_string(expected) + ", got " +
                 std::to_string(v[static_cast<std::size_t>(i)]);
        }
      }
    }
  }
  return "";
}

fs::path copy_fixture(const SharedTempDir& tmp, const std::string& name) {
  const fs::path dir = tmp.path() / name;
  if (world_rank() == 0) fs::copy(fixture_dir(), dir, fs::copy_options::recursive);
  MPI_Barrier(MPI_COMM_WORLD);
  return dir;
}

// Flips a byte inside chunk `c` of `dataset` ("/units/h.0/exp_avg") of the file `path` (rank 0 only).
void damage_chunk(const fs::path& path, const std::string& dataset, std::int64_t first_element) {
  if (world_rank() == 0) {
    std::int64_t address = 0;
    {
      detail::Hdf5Guard guard;
      detail::H5Id f = detail::open_file_read(path.string());
      detail::H5Id d = detail::open_dataset(f.get(), dataset, path.string());
      const hsize_t offset[1] = {static_cast<hsize_t>(first_element)};
      unsigned mask = 0;
      haddr_t addr = 0;
      hsize_t size = 0;
      EXPECT_GE(H5Dget_chunk_info_by_coord(d.get(), offset, &mask, &addr, &size), 0);
      address = static_cast<std::int64_t>(addr);
    }
    std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
    io.seekg(address + 17);
    const char old = static_cast<char>(io.get());
    io.seekp(address + 17);
    io.put(static_cast<char>(old ^ 0x10));
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// The CheckpointError text of a refused load ("" when it loaded), checked to be corrupt data.
std::string refusal(const std::function<void()>& load) {
  try {
    load();
  } catch (const CheckpointError& e) {
    EXPECT_EQ(e.kind(), CheckpointErrorKind::kCorruptData) << e.what();
    return e.what();
  }
  return "";
}

TEST(CheckpointChecksumKinds, AFormat3CheckpointLoadsAtOneAndTwoRanks) {
  ASSERT_TRUE(fs::exists(fixture_dir() / "meta.h5")) << fixture_dir() << " (set TESSERA_SOURCE_DIR)";
  SharedTempDir tmp;
  const fs::path dir = copy_fixture(tmp, "step_0000003");
  for (int ranks : {2, 1}) {
    if (auto comm = first_ranks(ranks)) {
      Engine e(*comm);
      const LoadResult loaded = load_checkpoint(*e.engine, *comm, dir, fixture_config());
      EXPECT_EQ(loaded.meta.format_version, 3);
      EXPECT_EQ(loaded.meta.optimizer_steps, 3);
      EXPECT_EQ(check_fixture_values(*e.engine), "") << ranks << " ranks, rank " << comm->rank();
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

TEST(CheckpointChecksumKinds, ADamagedChunkOfAFormat3CheckpointIsRefusedNamingXxh64) {
  SharedTempDir tmp;
  const fs::path dir = copy_fixture(tmp, "step_0000003");
  const fs::path shard = dir / shard_file_name(1);
  damage_chunk(shard, "/units/embed/exp_avg", 1024);
  MpiCommunicator world(MPI_COMM_WORLD);
  Engine e(world);
  const std::string text = refusal([&] { load_checkpoint(*e.engine, world, dir, fixture_config()); });
  EXPECT_NE(text.find(shard.string() + ":/units/embed/exp_avg is corrupted: chunk 1 (elements 1024..2047) has xxh64 "),
            std::string::npos)
      << "rank " << world.rank() << ": " << text;
}

TEST(CheckpointChecksumKinds, ANewSaveRecordsXxh3AndRefusesADamagedChunk) {
  SharedTempDir tmp;
  MpiCommunicator world(MPI_COMM_WORLD);
  Engine saved(world);
  fill_fixture_values(*saved.engine);
  TrainingProgress progress;
  progress.step = 5;
  SaveOptions options;
  options.chunk_elements = 1024;
  const SaveResult result = save_checkpoint(*saved.engine, world, tmp.path() / "run", progress, fixture_config(), options);
  for (int s = 0; s < 2; ++s) {
    const std::string file = (result.path / shard_file_name(s)).string();
    detail::Hdf5Guard guard;
    detail::H5Id f = detail::open_file_read(file);
    EXPECT_EQ(detail::read_int_attribute(f.get(), "tessera_checkpoint_format", file), kPlainFormat);
    EXPECT_EQ(detail::read_string_attribute(f.get(), "chunk_checksum", file), "xxh3_64") << file;
    EXPECT_TRUE(detail::link_exists(f.get(), "/units/h.0/master_xxh3_64")) << file;
  }
  {
    Engine loaded(world);
    EXPECT_EQ(refusal([&] { load_checkpoint(*loaded.engine, world, result.path, fixture_config()); }), "");
    EXPECT_EQ(check_fixture_values(*loaded.engine), "") << "rank " << world.rank();
  }
  const fs::path shard = result.path / shard_file_name(0);
  damage_chunk(shard, "/units/embed/master", 2048);
  Engine loaded(world);
  const std::string text = refusal([&] { load_checkpoint(*loaded.engine, world, result.path, fixture_config()); });
  EXPECT_NE(text.find(shard.string() + ":/units/embed/master is corrupted: chunk 2 (elements 2048..2239) has xxh3_64 "),
            std::string::npos)
      << "rank " << world.rank() << ": " << text;
}

}  // namespace
}  // namespace tessera::testing
