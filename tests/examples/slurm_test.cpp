// examples/slurm/train_gpt_cpu.sbatch on a real one-node Slurm (tests/support/slurm_cluster.hpp),
// used as written: the test sets only sbatch options (one node, 2 tasks of 1 CPU, its output file)
// and the script's environment variables (TESSERA_BIN, TESSERA_CHECKPOINT_DIR). It checks that
//  * srun --mpi=pmix starts 2 ranks that find each other: both report "rank R/2 ... launched by
//    srun" and train_gpt trains on 2 ranks;
//  * SIGUSR1 to the batch shell (scancel --signal=USR1 --batch, what #SBATCH --signal=B:USR1@120
//    sends before the time limit) reaches every rank through the script: they save a checkpoint at
//    the next step and stop, and the script requeues the job (the cluster has JobRequeue=0: only
//    the script's #SBATCH --requeue allows it);
//  * the requeued job resumes from that checkpoint at the saved step and trains to the end (the
//    end its --config file gives when it starts: the test sets it 20 steps past the saved one).
// Skips, with the daemons' log lines, where a one-node Slurm cannot start (not root, packages
// missing, a container that forbids it).
// tessera-test-timeout: 400
// tessera-test-cost: 12
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "tests/support/scratch_dir.hpp"
#include "tests/support/slurm_cluster.hpp"
#include "tests/support/slurm_requeue_flow.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

using testing::random_tokens;
using testing::ScratchDir;
using testing::SlurmCluster;
using testing::train_gpt_binary;

// The first run's steps: it only has to be still training when the signal, sent after step 20,
// reaches the ranks (steps of about 4 ms: 2 ranks of 32 x 32 tokens), and it never gets near them:
// the requeued run trains kStepsAfterResume past the saved step (tests/support/slurm_requeue_flow.hpp).
constexpr int kSteps = 100000;

class SlurmExample : public ::testing::Test {
 protected:
  void SetUp() override {
    train_gpt_ = train_gpt_binary();
    const char* source = std::getenv("TESSERA_SOURCE_DIR");
    if (train_gpt_.empty() || source == nullptr)
      GTEST_SKIP() << "TESSERA_BIN_DIR/TESSERA_SOURCE_DIR are not set (ctest sets them)";
    script_ = std::string(source) + "/examples/slurm/train_gpt_cpu.sbatch";
    if (const std::string why = cluster_.start(); !why.empty()) GTEST_SKIP() << "no one-node Slurm here: " << why;
    write_token_file((dir_ / "tokens.bin").string(), random_tokens(20000, 40));
  }

  ScratchDir dir_{"slurm"};
  SlurmCluster cluster_{dir_.path()};  // declared after dir_: shut down before the directory goes
  std::string train_gpt_, script_;
};

TEST_F(SlurmExample, TwoRanksTrainSaveOnUsr1RequeueAndResume) {
  // The tiny model of the other process tests; the script adds --checkpoint-dir, --resume auto,
  // --hybrid-group and --threads.
  testing::SlurmRequeueJob job =
      testing::tiny_requeue_job(train_gpt_, script_, dir_.path(), "--nodes=1 --ntasks-per-node=2", 32, kSteps);
  job.expected = {"rank 0/2 (host ", "rank 1/2 (host ",    "launched by srun",
                  "2 rank(s)",       "hybrid groups of 2", "(requeued 0 times)"};
  testing::check_save_requeue_resume(cluster_, job);
}

}  // namespace
}  // namespace tessera
