// examples/slurm/train_gpt_cpu.sbatch as written on a two-node Slurm: slurmctld and one slurmd on
// each simulated node (tests/support/node_cluster.hpp: network namespaces with their own host
// names), `sbatch -N 2 --ntasks-per-node=2`: srun --mpi=pmix starts 4 ranks on n1 and n2 that find
// each other and train with one hybrid group per node; SIGUSR1 to the batch shell makes every rank
// save and stop and the script requeue the job; the requeued job resumes on both nodes and trains to
// the end (20 steps past the saved one, from its --config file: tests/support/slurm_requeue_flow.hpp).
// Skips, saying why, where network namespaces or Slurm are not available.
// tessera-test-timeout: 400
// tessera-test-cost: 12
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/support/node_cluster.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/slurm_cluster.hpp"
#include "tests/support/slurm_requeue_flow.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

using testing::NodeCluster;
using testing::random_tokens;
using testing::ScratchDir;
using testing::SlurmCluster;
using testing::train_gpt_binary;

// The first run's steps: it only has to be still training when the signal, sent after step 20, comes.
constexpr int kSteps = 100000;

class TwoNodeSlurm : public ::testing::Test {
 protected:
  void SetUp() override {
    train_gpt_ = train_gpt_binary();
    const char* source = std::getenv("TESSERA_SOURCE_DIR");
    if (train_gpt_.empty() || source == nullptr)
      GTEST_SKIP() << "TESSERA_BIN_DIR/TESSERA_SOURCE_DIR are not set (ctest sets them)";
    script_ = std::string(source) + "/examples/slurm/train_gpt_cpu.sbatch";
    if (const std::string why = nodes_.start(2); !why.empty()) GTEST_SKIP() << "no simulated nodes here: " << why;
    if (const std::string why = slurm_.start(); !why.empty()) GTEST_SKIP() << "no two-node Slurm here: " << why;
    write_token_file((dir_ / "tokens.bin").string(), random_tokens(20000, 40));
  }

  ScratchDir dir_{"two_node_slurm"};
  NodeCluster nodes_{dir_ / "nodes"};         // after dir_: taken down before the directory goes
  SlurmCluster slurm_{dir_.path(), &nodes_};  // after nodes_: its daemons end before the nodes go
  std::string train_gpt_, script_;
};

TEST_F(TwoNodeSlurm, FourRanksOnTwoNodesTrainSaveOnUsr1RequeueAndResume) {
  testing::SlurmRequeueJob job =
      testing::tiny_requeue_job(train_gpt_, script_, dir_.path(), "--nodes=2 --ntasks-per-node=2", 16, kSteps);
  job.expected = {"rank 0/4 (host n1)",
                  "rank 3/4 (host n2)",
                  "launched by srun",
                  "4 rank(s)",
                  "nodes: 2; n1: ranks 0, 1; n2: ranks 2, 3",
                  "hybrid groups of 2",
                  "(requeued 0 times)"};
  job.environment = NodeCluster::kYieldWhenIdleEnv;
  testing::check_save_requeue_resume(slurm_, job);
}

}  // namespace
}  // namespace tessera
