// Chaos with nothing lost: a ZeRO-3 train_gpt job on two simulated nodes (tests/support/
// node_cluster.hpp) with asynchronous saves every few steps, --keep-last 2 and its optimizer state
// streamed through NVMe offload files, run to its last step by a supervisor that restarts it with
// `--resume auto` whenever it dies (chaos_supervisor.hpp), while a seeded schedule
// (chaos_schedule.hpp) strikes 20 times: a rank killed, a whole node lost, a node's link taken down
// mid-collective, kill -9 during an async save, during retention and during an offload write.
// Restarts come back on both nodes (mapped by slot or by node) or on either node alone.
//  * At 4 ranks throughout, the final weights, optimizer state, data position and generator words
//    are bit-identical to an uninterrupted run's, and so is every logged loss; every checkpoint
//    `latest` named after a failure verified; the metrics file holds each step once, 1 to the last,
//    a resume record for each restart and the loss plot a mark for each.
//  * Restarts at other rank counts (2 and 3 ranks, the global batch kept by the accumulation) end
//    within the documented tolerance of the uninterrupted run (docs/CHECKPOINTS.md).
// Prints a table of the interruptions: kind, count, steps redone, seconds.
// tessera-test-timeout: 480
// tessera-test-cost: 150
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/training/metrics_log.hpp"
#include "tessera/training/metrics_plots.hpp"
#include "tests/multinode/chaos_schedule.hpp"
#include "tests/multinode/chaos_supervisor.hpp"
#include "tests/support/checkpoint_state.hpp"
#include "tests/support/node_cluster.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using testing::ChaosJob;
using testing::ChaosSupervisor;
using testing::Interruption;
using testing::NodeCluster;
using testing::Placement;
using testing::ProcessResult;
using testing::ScratchDir;

constexpr std::uint64_t kSeed = 20261129;
constexpr int kJobSeconds = 150;  // a job's bound: a lost link ends it in seconds, a hang by the watchdog at 10 s

class Chaos : public ::testing::Test {
 protected:
  void SetUp() override {
    train_gpt_ = testing::train_gpt_binary();
    if (train_gpt_.empty()) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
    if (const std::string why = cluster_.start(2); !why.empty()) GTEST_SKIP() << "no simulated nodes here: " << why;
    write_token_file((dir_ / "tokens.bin").string(), testing::random_tokens(60000, 60));
  }

  // The job's line on `placement`, writing into `name`/ (run directory, metrics, offload files).
  std::string command(const Placement& placement, const std::string& name, const std::string& flags) const {
    return cluster_.mpirun(placement.hosts, placement.ranks,
                           "--map-by " + placement.map_by + " -x TESSERA_COLLECTIVE_TIMEOUT=10") +
           train_gpt_ +
           " --data tokens.bin --layers 2 --dim 32 --heads 2 --seq-len 16 --vocab 64 --sample-tokens 0 "
           "--eval-every 0 --log-every 1 --threads 1 --no-memory-check --progress plain --zero 3 "
           "--save-every 5 --keep-last 2 --async-checkpoint --offload-optimizer nvme --resume auto"
           " --checkpoint-dir " +
           (dir_ / name / "run").string() + " --metrics " + (dir_ / name / "metrics.jsonl").string() +
           " --offload-path " + (dir_ / name / "offload").string() + " " + flags;
  }

  ChaosSupervisor supervisor(const std::string& name, const std::string& flags) {
    fs::create_directories(dir_ / name / "offload");
    return ChaosSupervisor(cluster_, dir_.path(), dir_ / name / "run", dir_ / name / "metrics.jsonl",
                           dir_ / name / "offload",
                           [this, name, flags](const Placement& p) { return command(p, name, flags); });
  }

  // Runs `name` once to the end on `placement` (the uninterrupted run).
  ProcessResult uninterrupted(const std::string& name, const Placement& placement, const std::string& flags) {
    fs::create_directories(dir_ / name / "offload");
    return cluster_.launch(dir_.path().string(), command(placement, name, flags), kJobSeconds);
  }

  fs::path final_checkpoint(const std::string& name) const { return dir_ / name / "run" / "latest"; }

  ScratchDir dir_{"chaos"};
  NodeCluster cluster_{dir_ / "cluster"};  // after dir_: taken down before the directory goes
  std::string train_gpt_;
};

const Placement kTwoNodesBySlot{"n1:2,n2:2", 4, "slot"};
const Placement kTwoNodesByNode{"n1:2,n2:2", 4, "node"};
const Placement kFirstNodeAlone{"n1:4", 4, "slot"};
const Placement kSecondNodeAlone{"n2:4", 4, "slot"};
const Placement kTwoRanks{"n1:2", 2, "slot"};
const Placement kThreeRanks{"n1:2,n2:1", 3, "slot"};
const Placement kTwoRanksOnTheSecondNode{"n2:2", 2, "slot"};

// What the jobs did, as the closing table: kind, count, steps redone (total, mean, most), seconds.
std::string interruption_table(const std::vector<ChaosJob>& jobs) {
  struct Row {
    int count = 0, redone = 0, most = 0;
    double seconds = 0;
  };
  std::map<std::string, Row> rows;
  Row all;
  for (std::size_t i = 0; i + 1 < jobs.size(); ++i) {
    const int redone = jobs[i].last_logged - jobs[i + 1].started_at;
    const std::string kind = jobs[i].failed_on_its_own ? "failed on its own (not planned)"
                                                       : testing::interruption_name(jobs[i].interruption->kind);
    for (Row* row : {&rows[kind], &all}) {
      row->count += 1;
      row->redone += redone;
      row->most = std::max(row->most, redone);
      row->seconds += jobs[i].seconds;
    }
  }
  std::ostringstream out;
  char line[200];
  std::snprintf(line, sizeof line, "%-34s %6s %13s %11s %11s %9s\n", "interruption", "count", "steps redone",
                "mean/int.", "most/int.", "job s");
  out << line;
  const auto print = [&](const std::string& name, const Row& r) {
    std::snprintf(line, sizeof line, "%-34s %6d %13d %11.1f %11d %9.1f\n", name.c_str(), r.count, r.redone,
                  r.count ? static_cast<double>(r.redone) / r.count : 0.0, r.most, r.seconds);
    out << line;
  };
  for (const auto& [name, row] : rows) print(name, row);
  print("all", all);
  return out.str();
}

// The resume records the metrics file must hold: (step, steps redone) of every job that resumed
// from a checkpoint, after the last one that started fresh (a fresh start empties the file).
std::vector<std::pair<int, int>> expected_resumes(const std::vector<ChaosJob>& jobs) {
  std::vector<std::pair<int, int>> resumes;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].started_at == 0)
      resumes.clear();
    else
      resumes.emplace_back(jobs[i].started_at, jobs[i - 1].last_logged - jobs[i].started_at);
  }
  return resumes;
}

// Every planned interruption struck, and each job it struck ended non-zero; the last job ended
// well; a job that failed on its own said why (the watchdog, Open MPI or a rank named the failure,
// no silent end); after every job `latest` verified; no job went back past a committed checkpoint.
void expect_every_job_as_planned(const std::vector<ChaosJob>& jobs, std::size_t planned) {
  std::size_t struck = 0;
  for (const ChaosJob& job : jobs) struck += job.struck ? 1 : 0;
  const ChaosJob& last = jobs.back();
  ASSERT_TRUE(struck == planned && !last.interruption && last.exit_code == 0)
      << "the chaos run stopped early at job " << jobs.size() - 1 << " ("
      << (last.interruption ? interruption_name(last.interruption->kind) : "none")
      << (last.struck ? ", struck after step " + std::to_string(last.struck_at) : ", not struck") << ", exit "
      << last.exit_code << "): " << last.strike_output << "\n"
      << last.output;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const ChaosJob& job = jobs[i];
    if (job.failed_on_its_own) {
      std::printf("job %zu (%s) failed on its own before its trigger; its end:\n%s\n", i, job.placement.label().c_str(),
                  job.output.substr(job.output.size() - std::min<std::size_t>(job.output.size(), 1500)).c_str());
      EXPECT_TRUE(job.output.find("tessera watchdog") != std::string::npos ||
                  job.output.find("Open MPI") != std::string::npos || job.output.find("rank ") != std::string::npos)
          << "job " << i << " ended without a message:\n"
          << job.output;
    } else if (job.interruption) {
      EXPECT_NE(job.exit_code, 0) << "job " << i << " ended well despite " << interruption_name(job.interruption->kind)
                                  << ":\n"
                                  << job.output;
    }
    EXPECT_EQ(job.verify_exit, 0) << "after job " << i << " (" << job.placement.label()
                                  << "), latest does not verify:\n"
                                  << job.verify_output;
    if (i > 0) {
      EXPECT_LE(job.started_at, jobs[i - 1].last_logged) << "job " << i << " resumed past the steps logged";
      EXPECT_GE(job.started_at, jobs[i - 1].started_at) << "job " << i << " went back past a committed checkpoint";
    }
  }
}

// The metrics file holds steps 1..last once each, with the losses of `reference`, the restarts'
// resume records, and the loss plot marks each.
void expect_metrics_continuous(const fs::path& metrics, const fs::path& reference, const std::vector<ChaosJob>& jobs,
                               int last_step, bool same_losses) {
  const MetricsSeries series = read_metrics_file(metrics.string());
  ASSERT_EQ(series.train_step.size(), static_cast<std::size_t>(last_step));
  for (int s = 0; s < last_step; ++s) ASSERT_EQ(series.train_step[s], s + 1) << "the loss curve repeats or skips";
  if (same_losses) {
    EXPECT_EQ(testing::losses_of(metrics), testing::losses_of(reference)) << "a logged loss differs";
  }
  std::vector<std::pair<int, int>> resumed;
  for (const ResumeRecord& r : series.resumes) {
    resumed.emplace_back(static_cast<int>(r.step), static_cast<int>(r.steps_redone));
  }
  EXPECT_EQ(resumed, expected_resumes(jobs)) << "(step resumed from, steps redone) of each restart";
  std::ifstream plot(metrics_plot_files(metrics.string()).loss);
  const std::string svg((std::istreambuf_iterator<char>(plot)), std::istreambuf_iterator<char>());
  for (const auto& [step, redone] : resumed) {
    EXPECT_NE(svg.find("resumed at step " + std::to_string(step)), std::string::npos) << step;
  }
}

TEST_F(Chaos, TwentyInterruptionsAtFourRanksEndBitIdentical) {
  const std::string flags = "--micro-batch 4 --steps 320";
  // The uninterrupted run on one node (4 ranks over shared memory): the same losses bit for bit as on
  // two (tests/multinode/two_node_training_test.cpp).
  const ProcessResult reference = uninterrupted("reference", kFirstNodeAlone, flags);
  ASSERT_EQ(reference.exit_code, 0) << reference.output;

  const std::vector<testing::PlannedInterruption> plan =
      testing::chaos_schedule(kSeed,
                              {{Interruption::kRankKill, 4},
                               {Interruption::kNodeKill, 4},
                               {Interruption::kLinkDown, 2},
                               {Interruption::kDuringSave, 4},
                               {Interruption::kDuringRetention, 3},
                               {Interruption::kDuringOffloadWrite, 3}},
                              {kTwoNodesBySlot, kTwoNodesByNode, kFirstNodeAlone, kSecondNodeAlone});
  ASSERT_GE(plan.size(), 20u);
  ChaosSupervisor chaos = supervisor("chaos", flags);
  const auto started = ChaosSupervisor::Clock::now();
  const std::vector<ChaosJob> jobs = chaos.run(plan, kTwoNodesBySlot, kJobSeconds);
  const double seconds = std::chrono::duration<double>(ChaosSupervisor::Clock::now() - started).count();
  std::printf("%zu interruptions at 4 ranks in %.1f s (seed %llu):\n%s", jobs.size() - 1, seconds,
              static_cast<unsigned long long>(kSeed), interruption_table(jobs).c_str());

  expect_every_job_as_planned(jobs, plan.size());
  if (HasFailure()) return;
  const testing::CheckpointState ended = testing::read_checkpoint_state(final_checkpoint("chaos"));
  const testing::CheckpointState expected = testing::read_checkpoint_state(final_checkpoint("reference"));
  EXPECT_EQ(ended.progress.step, 320);
  EXPECT_EQ(testing::first_difference(ended, expected), "") << "the end state differs from the uninterrupted run's";
  expect_metrics_continuous(dir_ / "chaos" / "metrics.jsonl", dir_ / "reference" / "metrics.jsonl", jobs, 320, true);
}

TEST_F(Chaos, RestartsAtOtherRankCountsEndWithinTolerance) {
  // Global batch 24 = micro 2 x 4 ranks x accumulation 3; kept at 2 ranks (accumulation 6) and 3
  // (accumulation 4), where the gradients are summed in another order.
  const std::string flags = "--micro-batch 2 --global-batch 24 --steps 100";
  const ProcessResult reference = uninterrupted("reference_counts", kFirstNodeAlone, flags);
  ASSERT_EQ(reference.exit_code, 0) << reference.output;
  const std::vector<testing::PlannedInterruption> plan = testing::chaos_schedule(
      kSeed + 1, {{Interruption::kRankKill, 2}, {Interruption::kNodeKill, 1}, {Interruption::kDuringSave, 1}},
      {kTwoNodesBySlot, kTwoRanks, kThreeRanks, kTwoRanksOnTheSecondNode}, /*in_turn=*/true);
  ChaosSupervisor chaos = supervisor("counts", flags);
  const std::vector<ChaosJob> jobs = chaos.run(plan, kTwoNodesBySlot, kJobSeconds);
  std::printf("%zu interruptions, restarts at other rank counts:\n%s", jobs.size() - 1,
              interruption_table(jobs).c_str());
  for (const ChaosJob& job : jobs)
    std::printf("  job on %s from step %d\n", job.placement.label().c_str(), job.started_at);

  expect_every_job_as_planned(jobs, plan.size());
  if (HasFailure()) return;
  const testing::CheckpointState ended = testing::read_checkpoint_state(final_checkpoint("counts"));
  const testing::CheckpointState expected = testing::read_checkpoint_state(final_checkpoint("reference_counts"));
  EXPECT_EQ(ended.progress.step, 100);
  EXPECT_EQ(ended.progress.samples_seen, expected.progress.samples_seen) << "the data position";
  EXPECT_EQ(ended.progress.tokens_seen, expected.progress.tokens_seen);
  EXPECT_EQ(ended.optimizer_steps, expected.optimizer_steps);
  const double weights = testing::max_relative_difference(ended, expected, 1e-2);
  const std::vector<std::string> losses = testing::losses_of(dir_ / "counts" / "metrics.jsonl");
  const std::vector<std::string> reference_losses = testing::losses_of(dir_ / "reference_counts" / "metrics.jsonl");
  ASSERT_EQ(losses.size(), reference_losses.size());
  double worst_loss = 0.0;
  for (std::size_t i = 0; i < losses.size(); ++i) {
    worst_loss = std::max(worst_loss, std::abs(std::stod(losses[i]) / std::stod(reference_losses[i]) - 1.0));
  }
  std::printf(
      "largest difference from the uninterrupted run: weights and optimizer state %.3g (relative, floor "
      "0.01), loss %.3g (relative)\n",
      weights, worst_loss);
  EXPECT_LT(weights, 5e-3);
  EXPECT_LT(worst_loss, 1e-4);
  expect_metrics_continuous(dir_ / "counts" / "metrics.jsonl", dir_ / "reference_counts" / "metrics.jsonl", jobs, 100,
                            false);
}

}  // namespace
}  // namespace tessera
