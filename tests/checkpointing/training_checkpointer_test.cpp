// End-to-end: a small training driver (the loop train_gpt runs: TrainingCheckpointer::resume,
// train_step, after_step, finish) launched as mpirun jobs of this test binary.
//  * SIGKILL at every phase of a save (a shard half written, shards written, meta written, renamed,
//    latest updated, an old checkpoint renamed away by --keep-last retention) leaves `latest`
//    pointing at a whole checkpoint and no half-deleted step_* directory; resuming from it continues
//    exactly like the run that never stopped (losses, parameters and RNG bit for bit).
//  * SIGTERM on one rank: every rank saves at the next step boundary and stops with exit 0; the
//    resumed run equals the uninterrupted one (sync and async saves).
//  * Async saves with --keep-last 2 leave exactly 2 checkpoints.
//  * A truncated shard makes the resume fail with a message and a non-zero exit, changing nothing.
//  * train_gpt itself: --checkpoint-dir/--save-every, then --resume on the same and on another rank
//    count and stage log the losses of the run that never stopped.
// The run that never stops is computed once for the suite. The jobs of one test that share no
// directory (each kill, each save mode, each resume of train_gpt) run at once: they mostly wait on
// MPI's start-up and on the kills, and each is checked exactly as before.
// tessera-test-timeout: 600
// tessera-test-cost: 13
#include "tessera/checkpointing/training_checkpointer.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

#include "checkpoint_test_support.hpp"
#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/format/checksum.hpp"
#include "tessera/text/data/token_file.hpp"
#include "tests/launch/child_job.hpp"
#include "tests/support/concurrent_runs.hpp"

namespace fs = std::filesystem;

namespace tessera::testing {
namespace {

constexpr int kRanks = 2;
constexpr int kDriverSteps = 6;
constexpr int kChildSeconds = 120;

// ---- the driver (runs in the child jobs) ----------------------------------------------------------

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : fallback;
}

std::string hex(std::uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}

std::string bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return hex(u);
}

// Trains the tiny GPT with a TrainingCheckpointer configured from TESSERA_DRIVER_* variables and
// writes (rank 0) what happened to TESSERA_DRIVER_OUT: "resumed S", "loss S BITS", "stopped S",
// "rng WORDS", "param NAME XXH64". Returns the exit code.
int run_driver() {
  MpiCommunicator world(MPI_COMM_WORLD);
  const int steps = std::stoi(env_or("TESSERA_DRIVER_STEPS", std::to_string(kDriverSteps)));
  CheckpointOptions options;
  options.dir = env_or("TESSERA_DRIVER_DIR", "");
  options.save_every = std::stoll(env_or("TESSERA_DRIVER_SAVE_EVERY", "0"));
  options.keep_last = std::stoi(env_or("TESSERA_DRIVER_KEEP_LAST", "0"));
  options.mode = env_or("TESSERA_DRIVER_MODE", "sync") == "async" ? SaveMode::kAsync : SaveMode::kSync;
  options.resume = env_or("TESSERA_DRIVER_RESUME", "");
  // "PHASE:STEP:RANK": SIGKILL this rank when the save of STEP reaches PHASE.
  int kill_phase = -1, kill_step = -1, kill_rank = -1;
  std::sscanf(env_or("TESSERA_DRIVER_KILL", "").c_str(), "%d:%d:%d", &kill_phase, &kill_step, &kill_rank);
  options.phase_hook = [=](SavePhase phase, std::int64_t step) {
    if (static_cast<int>(phase) == kill_phase && step == kill_step && world_rank() == kill_rank) std::raise(SIGKILL);
  };
  // "STEP:RANK": this rank gets SIGTERM after training step STEP.
  int term_step = -1, term_rank = -1;
  std::sscanf(env_or("TESSERA_DRIVER_SIGTERM", "").c_str(), "%d:%d", &term_step, &term_rank);
  const ZeroStage stage = parse_zero_stage(std::stoi(env_or("TESSERA_DRIVER_STAGE", "3")));

  std::ostringstream log;
  TrainedEngine run(world, RunSetup(stage));
  Rng rng(kSeed + static_cast<std::uint64_t>(world.rank()));
  try {
    TrainingCheckpointer checkpointer(options, *run.engine, world, tiny_run_config());
    TrainingProgress progress = checkpointer.resume();
    if (checkpointer.resumed_from()) {
      log << "resumed " << progress.step << "\n";
      Rng::State state{};
      std::copy(progress.rng_state.begin(), progress.rng_state.end(), state.words);
      rng.set_state(state);
    }
    for (std::int64_t step = progress.step; step < steps; ++step) {
      const float loss = run.train(static_cast<int>(step), static_cast<int>(step) + 1)[0];
      rng.next_u64();  // the program's own randomness, one draw per step
      log << "loss " << step << " " << bits(loss) << "\n";
      progress = run.progress(static_cast<int>(step) + 1);
      const Rng::State st = rng.state();
      progress.rng_state.assign(st.words, st.words + 4);
      if (step + 1 == term_step && world.rank() == term_rank) std::raise(SIGTERM);
      if (checkpointer.after_step(progress)) {
        log << "stopped " << progress.step << "\n";
        break;
      }
    }
    checkpointer.finish();
  } catch (const CheckpointError& e) {
    std::fprintf(stderr, "driver: error (%s): %s\n", checkpoint_error_kind_name(e.kind()), e.what());
    return 1;
  }
  const Rng::State st = rng.state();
  log << "rng " << hex(st.words[0]) << hex(st.words[1]) << hex(st.words[2]) << hex(st.words[3]) << "\n";
  for (const auto& [name, values] : gather_state(*run.engine, 0)) {
    log << "param " << name << " " << hex(xxh64(values.data(), values.size() * sizeof(float))) << "\n";
  }
  if (world.rank() == 0) std::ofstream(env_or("TESSERA_DRIVER_OUT", "/dev/null")) << log.str();
  return 0;
}

TEST(TrainingCheckpointerChild, Driver) {
  if (!is_child("driver")) GTEST_SKIP() << "runs as a child job";
  const int code = run_driver();
  EXPECT_EQ(code, 0) << "driver failed on rank " << world_rank();
}

// ---- the parent tests ----------------------------------------------------------------------------

struct DriverLog {
  std::int64_t resumed = -1, stopped = -1;
  std::map<std::int64_t, std::string> losses;
  std::string rng;
  std::map<std::string, std::string> params;
};

DriverLog read_log(const fs::path& path) {
  DriverLog log;
  std::ifstream in(path);
  std::string kind;
  while (in >> kind) {
    if (kind == "resumed") in >> log.resumed;
    if (kind == "stopped") in >> log.stopped;
    if (kind == "rng") in >> log.rng;
    if (kind == "loss") {
      std::int64_t step;
      in >> step;
      in >> log.losses[step];
    }
    if (kind == "param") {
      std::string name;
      in >> name;
      in >> log.params[name];
    }
  }
  return log;
}

// Runs the driver on kRanks ranks with the given TESSERA_DRIVER_* settings.
ChildResult driver(const std::map<std::string, std::string>& settings, const fs::path& out) {
  std::string env = "-x OMP_NUM_THREADS=1 -x TESSERA_DRIVER_OUT=" + out.string();
  for (const auto& [key, value] : settings) env += " -x TESSERA_DRIVER_" + key + "=" + value;
  return run_child_job(mpirun_self(kRanks, "driver", "TrainingCheckpointerChild.Driver", env), kChildSeconds);
}

// A fresh directory under the system's temporary directory.
fs::path make_temp_dir(const std::string& name) {
  std::string pattern = (fs::temp_directory_path() / ("tessera_" + name + "_XXXXXX")).string();
  return mkdtemp(pattern.data()) != nullptr ? fs::path(pattern) : fs::path();
}

// The run that never stops, with what its job printed.
struct Reference {
  ChildResult job;
  DriverLog log;
};

class TrainingCheckpointerJob : public ::testing::Test {
 protected:
  // The run that never stops, started once for the suite while the first test starts its own jobs.
  static void SetUpTestSuite() {
    reference_dir_ = make_temp_dir("driver_reference");
    reference_ = std::async(std::launch::async, [] {
                   Reference ref;
                   ref.job = driver({}, reference_dir_ / "reference.log");
                   ref.log = read_log(reference_dir_ / "reference.log");
                   return ref;
                 }).share();
  }
  static void TearDownTestSuite() {
    if (reference_.valid()) reference_.wait();
    if (!reference_dir_.empty()) fs::remove_all(reference_dir_);
  }

  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "tessera_driver_test_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override { fs::remove_all(root_); }

  // The run that never stops (computed once for the suite).
  static const DriverLog& reference() {
    const Reference& ref = reference_.get();
    EXPECT_EQ(ref.job.exit_code, 0) << ref.job.output;
    EXPECT_EQ(ref.log.losses.size(), static_cast<std::size_t>(kDriverSteps));
    return ref.log;
  }

  // A resumed run's log equals the reference from its resume step on.
  static void expect_matches_reference(const DriverLog& resumed, std::int64_t from, const std::string& what) {
    const DriverLog& ref = reference();
    EXPECT_EQ(resumed.resumed, from) << what;
    for (std::int64_t s = from; s < kDriverSteps; ++s) {
      EXPECT_EQ(resumed.losses.count(s) ? resumed.losses.at(s) : "missing", ref.losses.at(s))
          << what << ": loss bits at step " << s;
    }
    EXPECT_EQ(resumed.rng, ref.rng) << what << ": rank 0's RNG state";
    EXPECT_EQ(resumed.params, ref.params) << what << ": parameters (xxh64 per tensor)";
  }

  fs::path root_;
  static fs::path reference_dir_;
  static std::shared_future<Reference> reference_;
};

fs::path TrainingCheckpointerJob::reference_dir_;
std::shared_future<Reference> TrainingCheckpointerJob::reference_;

TEST_F(TrainingCheckpointerJob, KillDuringSaveLeavesLatestLoadable) {
  // Which rank dies matters only for determinism: once meta.h5 is agreed, rank 0 commits whether or
  // not another rank is still alive, so the phases from kMetaWritten on kill rank 0 (the committer).
  struct Kill {
    SavePhase phase;
    int rank;
    std::int64_t latest_after;  // the step `latest` must point at after the kill
    std::string mode;
    std::string keep_last = "0";
    std::string save_every = "2";
  };
  const Kill kills[] = {{SavePhase::kShardPartlyWritten, 1, 2, "sync"},
                        {SavePhase::kShardsWritten, 1, 2, "sync"},
                        {SavePhase::kMetaWritten, 0, 2, "sync"},
                        {SavePhase::kCommitted, 0, 2, "sync"},
                        {SavePhase::kLatestUpdated, 0, 4, "sync"},
                        {SavePhase::kShardPartlyWritten, 0, 2, "async"},
                        // --keep-last 1 keeps the newest healthy checkpoint before the newest too (its health is not
                        // confirmed yet): saving every step, step 4's retention deletes steps 1 and 2.
                        {SavePhase::kRetentionRenamed, 0, 4, "sync", "1", "1"}};
  std::vector<std::function<void()>> checks;
  for (const Kill& k : kills)
    checks.push_back([this, &k, &kills] {
      const std::string what = "SIGKILL of rank " + std::to_string(k.rank) + " at save phase " +
                               std::to_string(static_cast<int>(k.phase)) + " of step 4 (" + k.mode + ")";
      const fs::path dir = root_ / ("kill_" + std::to_string(&k - kills));
      const auto start = std::chrono::steady_clock::now();
      const ChildResult killed =
          driver({{"DIR", dir.string()},
                  {"SAVE_EVERY", k.save_every},
                  {"MODE", k.mode},
                  {"KEEP_LAST", k.keep_last},
                  {"KILL", std::to_string(static_cast<int>(k.phase)) + ":4:" + std::to_string(k.rank)}},
                 dir.string() + ".killed.log");
      EXPECT_NE(killed.exit_code, 0) << what << ": the job was not killed:\n" << killed.output;
      // (mpirun reports the killed rank as exit status 137, which run_child_job also uses for a timeout.)
      EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(kChildSeconds / 2))
          << what << ": the job hung instead of ending:\n"
          << killed.output;
      const auto latest = resolve_checkpoint(dir);
      ASSERT_TRUE(latest.has_value()) << what;
      for (const CommittedCheckpoint& c : list_checkpoints(dir)) {
        EXPECT_TRUE(fs::exists(c.path / kMetaFileName)) << what << ": a half-deleted checkpoint " << c.path;
      }
      EXPECT_EQ(latest->filename(), step_dir_name(k.latest_after)) << what;
      const ChildResult verify = run_child_job(tessera_ckpt() + " verify " + dir.string(), 60);
      EXPECT_EQ(verify.exit_code, 0) << what << ": latest does not verify:\n" << verify.output;

      const ChildResult resumed =
          driver({{"DIR", dir.string()}, {"SAVE_EVERY", "2"}, {"RESUME", "auto"}}, dir.string() + ".resumed.log");
      ASSERT_EQ(resumed.exit_code, 0) << what << ":\n" << resumed.output;
      expect_matches_reference(read_log(dir.string() + ".resumed.log"), k.latest_after, what);
      for (const auto& entry : fs::directory_iterator(dir)) {
        EXPECT_EQ(entry.path().extension(), "") << what << ": crash remains left behind: " << entry.path();
        EXPECT_NE(entry.path().filename().string().rfind(kDeletedPrefix, 0), 0u)
            << what << ": a checkpoint being deleted was left behind: " << entry.path();
      }
    });
  all_at_once(checks);
}

TEST_F(TrainingCheckpointerJob, StopSignalSavesAtTheStepBoundary) {
  std::vector<std::function<void()>> checks;
  for (const std::string mode : {"sync", "async"})
    checks.push_back([this, mode] {
      const std::string what = std::string("SIGTERM on rank 1 after step 3, ") + mode + " saves";
      const fs::path dir = root_ / (std::string("term_") + mode);
      const ChildResult stopped =
          driver({{"DIR", dir.string()}, {"MODE", mode}, {"SIGTERM", "3:1"}}, dir.string() + ".stopped.log");
      ASSERT_EQ(stopped.exit_code, 0) << what << ":\n" << stopped.output;
      const DriverLog log = read_log(dir.string() + ".stopped.log");
      EXPECT_EQ(log.stopped, 3) << what;
      EXPECT_EQ(log.losses.size(), 3u) << what << ": trained past the signal";
      EXPECT_EQ(resolve_checkpoint(dir)->filename(), step_dir_name(3)) << what;

      const ChildResult resumed =
          driver({{"DIR", dir.string()}, {"MODE", mode}, {"RESUME", dir.string()}}, dir.string() + ".resumed.log");
      ASSERT_EQ(resumed.exit_code, 0) << what << ":\n" << resumed.output;
      expect_matches_reference(read_log(dir.string() + ".resumed.log"), 3, what);
    });
  all_at_once(checks);
}

TEST_F(TrainingCheckpointerJob, AsyncSavesKeepExactlyTheLastK) {
  const fs::path dir = root_ / "async";
  const ChildResult r = driver({{"DIR", dir.string()}, {"MODE", "async"}, {"SAVE_EVERY", "1"}, {"KEEP_LAST", "2"}},
                               dir.string() + ".log");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::int64_t> kept;
  for (const auto& c : list_checkpoints(dir)) kept.push_back(c.step);
  EXPECT_EQ(kept, (std::vector<std::int64_t>{5, 6}));
  EXPECT_EQ(fs::read_symlink(dir / kLatestName), step_dir_name(6));
  // Saving in the background does not change training.
  const DriverLog log = read_log(dir.string() + ".log");
  EXPECT_EQ(log.losses, reference().losses);
  EXPECT_EQ(log.params, reference().params);
}

TEST_F(TrainingCheckpointerJob, CorruptCheckpointRefusesToResume) {
  const fs::path dir = root_ / "corrupt";
  ASSERT_EQ(driver({{"DIR", dir.string()}, {"SAVE_EVERY", "3"}}, dir.string() + ".log").exit_code, 0);
  const fs::path shard = dir / step_dir_name(6) / shard_file_name(1);
  fs::resize_file(shard, fs::file_size(shard) - 100);
  const auto truncated_size = fs::file_size(shard);
  const ChildResult r = driver({{"DIR", dir.string()}, {"SAVE_EVERY", "3"}, {"RESUME", "auto"}, {"STEPS", "8"}},
                               dir.string() + ".resumed.log");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("shard_00001.h5 has"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("truncated"), std::string::npos) << r.output;
  // Nothing was overwritten or saved.
  EXPECT_EQ(fs::file_size(shard), truncated_size);
  EXPECT_EQ(fs::read_symlink(dir / kLatestName), step_dir_name(6));
  EXPECT_FALSE(fs::exists(dir / step_dir_name(7)));
}

// "step     3/4  loss 5.7350" lines of a train_gpt log: step -> loss text.
std::map<int, std::string> logged_losses(const std::string& output) {
  std::map<int, std::string> losses;
  const std::regex line(R"(step +([0-9]+)/[0-9]+  loss ([0-9.]+))");
  for (auto it = std::sregex_iterator(output.begin(), output.end(), line); it != std::sregex_iterator(); ++it) {
    losses[std::stoi((*it)[1])] = (*it)[2];
  }
  return losses;
}

TEST_F(TrainingCheckpointerJob, TrainGptResumesOnAnyRankCount) {
  const char* bin = std::getenv("TESSERA_BIN_DIR");
  if (bin == nullptr) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (ctest sets it)";
  std::vector<std::int32_t> tokens(20000);
  Rng rng(3);
  for (auto& t : tokens) t = static_cast<std::int32_t>(rng.below(40));
  const std::string data = (root_ / "tokens.bin").string(), ckpt = (root_ / "ckpt").string();
  write_token_file(data, tokens);
  const std::string train_gpt = std::string(bin) + "/train_gpt --data " + data +
                                " --layers 2 --dim 32 --heads 2 --seq-len 16 --vocab 64 --global-batch 8 --steps 4"
                                " --sample-tokens 0 --eval-every 0 --log-every 1 --threads 1";
  const std::string mpirun = "mpirun --oversubscribe -x OMP_NUM_THREADS=1 -np ";
  const ChildResult full = run_child_job(
      mpirun + "2 " + train_gpt + " --zero 3 --checkpoint-dir " + ckpt + " --save-every 2 --async-checkpoint",
      kChildSeconds);
  ASSERT_EQ(full.exit_code, 0) << full.output;
  const auto expected = logged_losses(full.output);
  ASSERT_EQ(expected.size(), 4u) << full.output;
  const std::vector<std::string> resumes = {"2 " + train_gpt + " --zero 3", "1 " + train_gpt + " --zero 1",
                                            "2 " + train_gpt + " --zero 2 --param-dtype f32"};
  std::vector<std::string> commands;
  for (const std::string& resume : resumes) commands.push_back(mpirun + resume + " --resume " + ckpt + "/step_0000002");
  const std::vector<ChildResult> results = run_child_jobs(commands, kChildSeconds);  // they only read it
  for (std::size_t i = 0; i < resumes.size(); ++i) {
    const std::string& resume = resumes[i];
    const ChildResult& resumed = results[i];
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    EXPECT_NE(resumed.output.find("resumed from"), std::string::npos) << resumed.output;
    const auto losses = logged_losses(resumed.output);
    EXPECT_EQ(losses.count(1) + losses.count(2), 0u) << "steps before the checkpoint ran again:\n" << resumed.output;
    for (int s = 3; s <= 4; ++s) {
      // Printed to 4 decimals: equal within 1e-6 relative shows as the same text.
      EXPECT_EQ(losses.count(s) ? losses.at(s) : "missing", expected.at(s))
          << "mpirun -np " << resume << ": step " << s;
    }
  }
}

}  // namespace
}  // namespace tessera::testing
