// meta.h5's virtual datasets, read with the plain HDF5 C API (and with h5dump from another working
// directory), give the same full tensors as `export` and as the engine; bf16 export rounds to
// nearest even and reads back as f32 through HDF5's conversion; --init-from sets a fresh engine at
// another rank count and stage to the exported weights with zero Adam moments.
// tessera-test-ranks: 2 4
// tessera-test-timeout: 300
#include "tessera/checkpointing/export/checkpoint_export.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdio>
#include <sstream>

#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/save/checkpoint_saver.hpp"
#include "tessera/precision/float_bits.hpp"
#include "tests/checkpointing/checkpoint_test_support.hpp"

namespace tessera::testing {
namespace {

constexpr int kSaveAt = 2;

std::string run_command(const std::string& command, int* status) {
  std::string out;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  char buffer[4096];
  while (pipe != nullptr && std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
  *status = pipe != nullptr ? pclose(pipe) : -1;
  return out;
}

// Values in h5dump's DATA block, in order (lines "(row,col): v, v, ...").
std::vector<double> h5dump_values(const std::string& output) {
  std::vector<double> values;
  const std::size_t data = output.find("DATA {");
  if (data == std::string::npos) return values;
  std::istringstream lines(output.substr(data));
  std::string line;
  while (std::getline(lines, line) && line.find('}') == std::string::npos) {  // the block ends at "}"
    const std::size_t colon = line.find("):");
    if (colon == std::string::npos) continue;
    std::istringstream items(line.substr(colon + 2));
    std::string item;
    while (std::getline(items, item, ',')) {
      if (item.find_first_not_of(" \t\r") == std::string::npos) continue;
      try {
        values.push_back(std::stod(item));
      } catch (const std::exception&) {
        ADD_FAILURE() << "h5dump printed '" << item << "' in:\n" << output;
        return {};
      }
    }
  }
  return values;
}

// Rank 0's checks of one saved checkpoint (a function, so an ASSERT leaves only it).
void check_files(const std::filesystem::path& dir, Module& model,
                 const std::map<std::string, std::vector<float>>& params,
                 const std::map<std::string, std::vector<float>>& m,
                 const std::map<std::string, std::vector<float>>& v) {
  const std::filesystem::path ckpt = dir / step_dir_name(kSaveAt);
  const std::string meta = (ckpt / kMetaFileName).string();
  const std::string f32 = (dir / "weights.h5").string(), bf16 = (dir / "weights_bf16.h5").string();
  const ExportSummary s = export_checkpoint(dir, f32, DType::kF32);
  export_checkpoint(ckpt, bf16, DType::kBF16);
  EXPECT_EQ(s.step, kSaveAt);
  EXPECT_EQ(s.parameters, static_cast<std::int64_t>(params.size()));
  for (const NamedParameter& np : model.named_parameters()) {
    Shape vds_shape, export_shape;
    const auto from_vds = h5_read(meta, "/model/" + np.name, &vds_shape);
    const auto exported = h5_read(f32, "/model/" + np.name, &export_shape);
    EXPECT_EQ(vds_shape, np.parameter->shape) << np.name << ": virtual dataset shape";
    EXPECT_EQ(export_shape, np.parameter->shape) << np.name << ": exported shape";
    EXPECT_EQ(compare_states({{np.name, from_vds}}, {{np.name, params.at(np.name)}}), "") << "meta.h5 /model vs engine";
    EXPECT_EQ(compare_states({{np.name, exported}}, {{np.name, from_vds}}), "") << "export vs meta.h5 /model";
    EXPECT_EQ(compare_states({{np.name, h5_read(meta, "/optimizer/exp_avg/" + np.name)}}, {{np.name, m.at(np.name)}}),
              "")
        << "meta.h5 /optimizer/exp_avg vs engine";
    EXPECT_EQ(
        compare_states({{np.name, h5_read(meta, "/optimizer/exp_avg_sq/" + np.name)}}, {{np.name, v.at(np.name)}}), "")
        << "meta.h5 /optimizer/exp_avg_sq vs engine";
    // bf16: rounded to nearest even, widened back to f32 by HDF5.
    const auto rounded = h5_read(bf16, "/model/" + np.name);
    std::vector<float> expected;
    for (float x : params.at(np.name)) expected.push_back(bf16_to_f32(f32_to_bf16(x)));
    EXPECT_EQ(compare_states({{np.name, rounded}}, {{np.name, expected}}), "") << "bf16 export";
  }
  // h5dump, from another working directory: the relative source file names resolve against meta.h5.
  int status = 0;
  const std::string out = run_command("cd / && h5dump -d /model/h.1.mlp.fc.weight " + meta, &status);
  EXPECT_EQ(status, 0) << out;
  const auto dumped = h5dump_values(out);
  const auto& expected = params.at("h.1.mlp.fc.weight");
  ASSERT_EQ(dumped.size(), expected.size()) << "unexpected h5dump output:\n" << out;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(dumped[i], expected[i], 1e-5 * std::abs(expected[i]) + 1e-9) << "h5dump value " << i;
  }
}

TEST(CheckpointExport, VirtualDatasetsEqualExportAndEngine) {
  MpiCommunicator world(MPI_COMM_WORLD);
  SharedTempDir dir;
  TrainedEngine run(world, RunSetup(ZeroStage::kStage3));
  run.train(0, kSaveAt);
  SaveOptions options;
  options.chunk_elements = 16;  // several chunks per dataset
  save_checkpoint(*run.engine, world, dir.path(), run.progress(kSaveAt), tiny_run_config(), options);
  const auto params = gather_state(*run.engine, 0);
  const auto m = gather_state(*run.engine, 1);
  const auto v = gather_state(*run.engine, 2);
  if (world.rank() == 0) {
    try {
      check_files(dir.path(), *run.model, params, m, v);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "rank 0: " << e.what();
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(CheckpointExport, InitFromSetsWeightsAtAnotherRankCount) {
  MpiCommunicator world(MPI_COMM_WORLD);
  SharedTempDir dir;
  const std::string weights = (dir.path() / "weights.h5").string();
  std::map<std::string, std::vector<float>> saved;
  {
    TrainedEngine run(world, RunSetup(ZeroStage::kStage2));
    run.train(0, kSaveAt);
    save_checkpoint(*run.engine, world, dir.path(), run.progress(kSaveAt), tiny_run_config());
    saved = gather_state(*run.engine, 0);
    if (world.rank() == 0) {
      try {
        export_checkpoint(dir.path(), weights, DType::kF32);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rank 0: " << e.what();
      }
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  // Fine-tune on fewer ranks, stage 3.
  if (auto comm = first_ranks(world.size() - 1)) {
    TrainedEngine tuned(*comm, RunSetup(ZeroStage::kStage3), /*seed=*/999);
    load_exported_weights(*tuned.engine, *comm, weights, tiny_run_config());
    EXPECT_EQ(compare_states(gather_state(*tuned.engine, 0), saved), "") << "weights after --init-from";
    for (const auto& [name, values] : gather_state(*tuned.engine, 1)) {
      for (float x : values) ASSERT_EQ(x, 0.0f) << name << ": Adam m not reset";
    }
    EXPECT_EQ(tuned.engine->optimizer_steps(), 0);
    const auto losses = tuned.train(0, 1);
    EXPECT_TRUE(std::isfinite(losses[0]));
    // A model of another shape refuses the file, naming the parameter and both shapes.
    GptConfig wider = tiny_gpt();
    wider.channels = 12;
    TrainedEngine other(*comm, RunSetup(ZeroStage::kStage1), kSeed, wider);
    try {
      load_exported_weights(*other.engine, *comm, weights);
      ADD_FAILURE() << "a model of another shape accepted the exported weights";
    } catch (const CheckpointError& e) {
      EXPECT_EQ(e.kind(), CheckpointErrorKind::kConfigMismatch);
      EXPECT_NE(std::string(e.what()).find("(13, 9)"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("(13, 12)"), std::string::npos) << e.what();
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace
}  // namespace tessera::testing
