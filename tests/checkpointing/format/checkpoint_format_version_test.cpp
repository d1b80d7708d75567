// Checkpoint format versions: this build reads formats 3 to 5 only. A format-1 checkpoint (kept under
// tests/checkpointing/data/, written by an early 2-rank ZeRO-2 run) and a version this build does not
// know are refused naming the file and its version, before anything is loaded; the engine keeps its
// state. A checkpoint of another optimizer's state is refused naming both state lists.
// tessera-test-ranks: 2
#include <gtest/gtest.h>

#include <cstdlib>

#include "tessera/checkpointing/export/gpt_model_fields.hpp"
#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/checkpointing/format/checkpoint_meta.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/format/hdf5_util.hpp"
#include "tessera/checkpointing/load/checkpoint_loader.hpp"
#include "tests/checkpointing/checkpoint_test_support.hpp"

namespace tessera::testing {
namespace {

namespace fs = std::filesystem;

// The model the fixture was trained with (train_gpt --layers 1 --dim 16 --heads 2 --seq-len 16
// --vocab 264, 2 ranks, ZeRO-2, 3 steps).
GptConfig fixture_gpt() { return {/*vocab*/ 264, /*seq*/ 16, /*layers*/ 1, /*heads*/ 2, /*dim*/ 16}; }

fs::path fixture_dir() {
  const char* source = std::getenv("TESSERA_SOURCE_DIR");
  return fs::path(source != nullptr ? source : ".") / "tests/checkpointing/data/format1_zero2_2ranks";
}

// A copy of the fixture in a fresh directory (tests never touch the source tree).
fs::path copy_fixture(const SharedTempDir& tmp) {
  const fs::path dir = tmp.path() / "step_0000003";
  if (world_rank() == 0) fs::copy(fixture_dir(), dir, fs::copy_options::recursive);
  MPI_Barrier(MPI_COMM_WORLD);
  return dir;
}

void expect_refused(const std::function<void()>& read, const std::string& file, std::int64_t version) {
  try {
    read();
    ADD_FAILURE() << "format " << version << " was read";
  } catch (const CheckpointError& e) {
    EXPECT_EQ(e.kind(), CheckpointErrorKind::kUnknownFormat) << e.what();
    const std::string text = e.what();
    for (const std::string& part :
         {file, "format version " + std::to_string(version), std::string("this build reads versions 3 to 5"),
          std::string("resume it with the Tessera version that wrote it")}) {
      EXPECT_NE(text.find(part), std::string::npos) << "missing '" << part << "' in: " << text;
    }
  }
}

TEST(CheckpointFormatVersion, Format1IsRefusedByVersionAndTheEngineKeepsItsState) {
  ASSERT_TRUE(fs::exists(fixture_dir() / "meta.h5")) << fixture_dir() << " (set TESSERA_SOURCE_DIR)";
  SharedTempDir tmp;
  const fs::path dir = copy_fixture(tmp);
  const std::string meta_file = (dir / kMetaFileName).string();
  expect_refused([&] { read_meta_file(meta_file); }, meta_file, 1);

  MpiCommunicator world(MPI_COMM_WORLD);
  auto device = make_cpu_device();
  Gpt model(fixture_gpt());
  ShardedEngine engine(model, *device, world, ShardingConfig{}, 99);
  const auto before = gather_state(engine, 0);
  RunConfig expected;
  add_gpt_config(expected, fixture_gpt());
  expect_refused([&] { load_checkpoint(engine, world, dir, expected); }, meta_file, 1);
  EXPECT_EQ(compare_states(gather_state(engine, 0), before), "") << "a refused load changed the engine";
  EXPECT_EQ(engine.optimizer_steps(), 0);
}

TEST(CheckpointFormatVersion, UnknownVersionIsRefusedByNumber) {
  SharedTempDir tmp;
  const fs::path dir = copy_fixture(tmp);
  const std::string meta_file = (dir / kMetaFileName).string();
  if (world_rank() == 0) {
    detail::Hdf5Guard guard;
    detail::H5Id file = detail::open_file_readwrite(meta_file);
    H5Adelete(file.get(), "tessera_checkpoint_format");
    detail::write_attribute(file.get(), "tessera_checkpoint_format", std::int64_t{99});
  }
  MPI_Barrier(MPI_COMM_WORLD);
  expect_refused([&] { read_meta_file(meta_file); }, meta_file, 99);
}

TEST(CheckpointFormatVersion, AnotherOptimizersStateIsRefusedByName) {
  CheckpointLayout stored, current;
  stored.states = {{"master", DType::kF32}, {"exp_avg", DType::kF32}, {"exp_avg_sq", DType::kF32}};
  current.states = {{"master", DType::kF32}, {"exp_avg_q", DType::kI32}};
  try {
    check_same_states(stored, current, "ckpt/meta.h5");
    FAIL() << "different state lists were accepted";
  } catch (const CheckpointError& e) {
    EXPECT_EQ(e.kind(), CheckpointErrorKind::kConfigMismatch);
    const std::string text = e.what();
    EXPECT_NE(text.find("master f32, exp_avg f32, exp_avg_sq f32"), std::string::npos) << text;
    EXPECT_NE(text.find("exp_avg_q i32"), std::string::npos) << text;
  }
  EXPECT_NO_THROW(check_same_states(stored, stored, "ckpt/meta.h5"));
}

}  // namespace
}  // namespace tessera::testing
