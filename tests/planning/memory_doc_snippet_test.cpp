// docs/MEMORY.md's "Planning your own model" snippet, compiled and run as written: the code between
// the markers below is the document's, character for character (the test compares them), with
// MyModel standing for the reader's own (token_mlp_model.hpp's model).
// tessera-test-ranks: 1 2
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tessera/planning/memory_plan.hpp"
#include "tessera/planning/plan_report.hpp"
#include "tessera/planning/preflight.hpp"
#include "tests/planning/token_mlp_model.hpp"

namespace tessera::testing {
namespace {

using MyModel = TokenMlp;

// docs/MEMORY.md snippet: begin
MemoryPlan plan_my_model(Communicator& world, Device& device) {
  CustomModel model;
  model.build = [] { return std::make_unique<MyModel>(/*vocab*/ 11, /*seq*/ 5, /*dim*/ 8, /*hidden*/ 12, /*out*/ 3); };
  model.batch = {{"inputs", {5}, DType::kI32, /*id_bound*/ 11},  // one sample: 5 token ids
                 {"targets", {5, 3}, DType::kF32}};              // and (5,3) f32 targets
  model.loss = std::make_shared<MeanSquaredError>();             // the run's loss (null: token cross-entropy)

  BatchRequest request;  // the run's batch, given once
  request.micro = 4;
  request.accumulation = 2;
  request.data_parallel_ranks = world.size();
  ShardingConfig sharding;  // the engine's settings
  sharding.stage = ZeroStage::kStage3;
  const PlanConfig config = PlanConfig::for_run(model_from_module("my model", model), sharding, plan_batch(request));

  const MemoryPlan plan = plan_memory(config);  // your model, the engine and your loss on the meta device
  if (world.rank() == 0) std::printf("%s", format_plan(plan).c_str());
  // Before the run allocates anything: does it fit what this node gives each of its ranks? (collective)
  const PreflightCheck check = preflight_memory_check(config, device.memory_budget(), world);
  if (!check.fits) throw std::runtime_error(check.report());
  return plan;
}
// docs/MEMORY.md snippet: end

// The lines of `text` strictly between the first line containing `begin` (searched from the first
// line containing `after`) and the next line containing `end`.
std::string between(const std::string& text, const std::string& after, const std::string& begin,
                    const std::string& end) {
  std::istringstream in(text);
  std::string line, out;
  bool seen_after = after.empty(), inside = false;
  while (std::getline(in, line)) {
    if (!seen_after) {
      seen_after = line.find(after) != std::string::npos;
    } else if (!inside) {
      inside = line.find(begin) != std::string::npos;
    } else if (line.find(end) != std::string::npos) {
      return out;
    } else {
      out += line + "\n";
    }
  }
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(MemoryDocSnippet, PlansAndChecksYourOwnModel) {
  MpiCommunicator world(MPI_COMM_WORLD);
  const std::unique_ptr<Device> device = make_cpu_device();
  const MemoryPlan plan = plan_my_model(world, *device);
  EXPECT_TRUE(plan.has_step);
  EXPECT_EQ(plan.config.micro_batch, 4);
  EXPECT_EQ(plan.config.accumulation, 2);
  EXPECT_EQ(plan.config.ranks, world.size());
  EXPECT_GT(plan.peak(MemoryCategory::kActivations), 0);
  EXPECT_GT(plan.peak(MemoryCategory::kCommBuffers), 0) << "ZeRO-3 gathers units";
}

TEST(MemoryDocSnippet, TheDocumentShowsThisCode) {
  const char* source = std::getenv("TESSERA_SOURCE_DIR");
  if (source == nullptr) GTEST_SKIP() << "TESSERA_SOURCE_DIR is not set (ctest sets it)";
  const std::string doc =
      between(read_text(std::string(source) + "/docs/MEMORY.md"), "## Planning your own model", "```cpp", "```");
  const std::string code = between(read_text(std::string(source) + "/tests/planning/memory_doc_snippet_test.cpp"), "",
                                   "// docs/MEMORY.md snippet: begin", "// docs/MEMORY.md snippet: end");
  ASSERT_FALSE(code.empty());
  EXPECT_EQ(doc, code) << "docs/MEMORY.md's snippet and tests/planning/memory_doc_snippet_test.cpp's differ";
}

}  // namespace
}  // namespace tessera::testing
