// run_distributed as whole jobs, run as child processes of this test: a lone process (MPI singleton,
// world of 1) runs its body and returns its exit code; a throwing body on one of two ranks prints
// "rank 1/2 (host H): <message>" and aborts the job instead of leaving rank 0 waiting; a body that
// throws on every rank is said once per distinct message, by rank 0, and every rank returns 1; debug mode
// (TESSERA_DEBUG_COLLECTIVES=1) turns a planted mismatch into that abort with both calls named; and
// TESSERA_COLLECTIVE_TIMEOUT makes the watchdog abort a planted hang, on the host path and on the device
// path (the simulated GPU, staged through pinned host memory). The child jobs run at once.
// tessera-test-timeout: 300
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tessera/comm/device_communicator.hpp"
#include "tessera/launch/run_distributed.hpp"
#include "tessera/runtime/device_factory.hpp"
#include "tessera/runtime/storage.hpp"
#include "tests/launch/child_job.hpp"

namespace tessera {
namespace {

using testing::ChildResult;
using testing::is_child;
using testing::mpirun_self;
using testing::run_child_job;
using testing::self_executable;

constexpr int kChildLimitSeconds = 60;

void expect_output_contains(const ChildResult& result, const std::string& part) {
  EXPECT_NE(result.output.find(part), std::string::npos) << "child output lacks \"" << part << "\":\n" << result.output;
}

// ---- the child jobs (skipped unless TESSERA_TEST_CHILD selects them) ----

TEST(RunDistributedChild, Singleton) {
  if (!is_child("singleton")) GTEST_SKIP() << "runs as a child job";
  char name[] = "child";
  char* argv[] = {name, nullptr};
  const int code = run_distributed(1, argv, [](DistributedContext& ctx) {
    EXPECT_EQ(ctx.world_size(), 1);
    EXPECT_EQ(ctx.rank(), 0);
    EXPECT_EQ(ctx.rank_info().launcher, Launcher::kNone);
    std::vector<float> x{2.5f};
    ctx.world().all_reduce(x, DType::kF32, ReduceOp::kSum).wait();
    EXPECT_EQ(x[0], 2.5f);
    std::printf("singleton body ran with a world of %d\n", ctx.world_size());
    return 3;
  });
  EXPECT_EQ(code, 3);
  int finalized = 0;
  MPI_Finalized(&finalized);
  EXPECT_TRUE(finalized) << "run_distributed initialised MPI, so it finalises it";
}

TEST(RunDistributedChild, SingletonThrows) {
  if (!is_child("singleton_throws")) GTEST_SKIP() << "runs as a child job";
  char name[] = "child";
  char* argv[] = {name, nullptr};
  const int code = run_distributed(
      1, argv, [](DistributedContext&) -> int { throw std::runtime_error("planted single-rank failure"); });
  EXPECT_EQ(code, 1);
}

TEST(RunDistributedChild, RankOneThrows) {
  if (!is_child("rank_one_throws")) GTEST_SKIP() << "runs as a child job";
  char name[] = "child";
  char* argv[] = {name, nullptr};
  run_distributed(1, argv, [](DistributedContext& ctx) {
    if (ctx.rank() == 1) throw std::runtime_error("planted failure on rank 1");
    ctx.world().barrier().wait();  // would wait forever for rank 1
    return 0;
  });
  ADD_FAILURE() << "got past a collective that rank 1 never joined";
}

TEST(RunDistributedChild, EveryRankThrows) {
  if (!is_child("every_rank_throws")) GTEST_SKIP() << "runs as a child job";
  char name[] = "child";
  char* argv[] = {name, nullptr};
  const int code = run_distributed(1, argv, [](DistributedContext& ctx) -> int {
    ctx.world().barrier().wait();  // the ranks decide together, then all refuse
    throw std::runtime_error(ctx.rank() < 2 ? "planted refusal" : "another planted refusal");
  });
  EXPECT_EQ(code, 1);
}

TEST(RunDistributedChild, MismatchInDebugMode) {
  if (!is_child("mismatch")) GTEST_SKIP() << "runs as a child job";
  char name[] = "child";
  char* argv[] = {name, nullptr};
  run_distributed(1, argv, [](DistributedContext& ctx) {
    std::vector<float> buf(16, 1.0f), gathered(16 * ctx.world_size());
    if (ctx.rank() == 1) {
      ctx.world().all_gather(buf, gathered, DType::kF32).wait();
    } else {
      ctx.world().all_reduce(buf, DType::kF32, ReduceOp::kSum).wait();
    }
    return 0;
  });
  ADD_FAILURE() << "mismatched collectives completed";
}

TEST(RunDistributedChild, HangCaughtByTheWatchdog) {
  if (!is_child("hang")) GTEST_SKIP() << "runs as a child job";
  char name[] = "child";
  char* argv[] = {name, nullptr};
  run_distributed(1, argv, [](DistributedContext& ctx) {
    if (ctx.rank() == 1) {
      std::this_thread::sleep_for(std::chrono::seconds(2 * kChildLimitSeconds));  // never joins
      return 0;
    }
    std::vector<float> buf(8, 1.0f);
    ctx.world().all_reduce(buf, DType::kF32, ReduceOp::kSum).wait();
    return 0;
  });
  ADD_FAILURE() << "a collective without its peer completed";
}

TEST(RunDistributedChild, DeviceHangCaughtByTheWatchdog) {
  if (!is_child("device_hang")) GTEST_SKIP() << "runs as a child job";
  char name[] = "child";
  char* argv[] = {name, nullptr};
  run_distributed(1, argv, [](DistributedContext& ctx) {
    // The device path: a collective on the simulated GPU's memory, staged through pinned host memory.
    const std::unique_ptr<Device> device = make_device(DeviceChoice::kSimulatedGpu);
    const std::unique_ptr<Communicator> device_world = make_device_world(*device, ctx.world(), ctx.comm_options());
    if (ctx.rank() == 1) {
      std::this_thread::sleep_for(std::chrono::seconds(2 * kChildLimitSeconds));  // never joins
      return 0;
    }
    const auto buf = Storage::allocate(*device, 8 * sizeof(float), MemoryCategory::kWorkspace);
    device->fill_zero(buf->data(), 8 * sizeof(float));
    device_world->all_reduce(Span(buf->data(), 8), DType::kF32, ReduceOp::kSum).wait();
    return 0;
  });
  ADD_FAILURE() << "a device collective without its peer completed";
}

TEST(RunDistributedChild, ThreadLevelTooLow) {
  if (!is_child("thread_level")) GTEST_SKIP() << "runs as a child job";
  int argc = 1;
  char name[] = "child";
  char* args[] = {name, nullptr};
  char** argv = args;
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
  if (provided >= MPI_THREAD_MULTIPLE) {
    std::printf("thread level check not reachable: MPI provided MPI_THREAD_MULTIPLE anyway\n");
  } else {
    const int code = run_distributed(argc, argv, [](DistributedContext&) { return 0; });
    EXPECT_EQ(code, 1);
  }
  MPI_Finalize();
}

// ---- the parent tests ----

// A job of the children above, launched by the parent suite.
struct ChildJob {
  std::string command;
  ChildResult result;
  double seconds = 0.0;  // from its start to its end
};

// The parent tests: every child job is independent of the others, so the suite starts them all at
// once (most of their time is waiting: for MPI's start-up, a failing rank's grace for the others, a
// watchdog's timeout) and each test checks its own job's result.
class RunDistributedJobs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // A job that ends with a failing rank also skips mpirun's wait after a non-zero exit (the
    // processes and their output are the same).
    const std::string fast_failure = "--mca odls_base_sigkill_timeout 0";
    const std::map<std::string, std::string> commands = {
        {"singleton",
         "env TESSERA_TEST_CHILD=singleton " + self_executable() + " --gtest_filter=RunDistributedChild.Singleton"},
        {"singleton_throws", "env TESSERA_TEST_CHILD=singleton_throws " + self_executable() +
                                 " --gtest_filter=RunDistributedChild.SingletonThrows"},
        {"thread_level", "env TESSERA_TEST_CHILD=thread_level " + self_executable() +
                             " --gtest_filter=RunDistributedChild.ThreadLevelTooLow"},
        {"rank_one_throws", mpirun_self(2, "rank_one_throws", "RunDistributedChild.RankOneThrows", fast_failure)},
        {"every_rank_throws", mpirun_self(3, "every_rank_throws", "RunDistributedChild.EveryRankThrows")},
        {"mismatch", mpirun_self(2, "mismatch", "RunDistributedChild.MismatchInDebugMode",
                                 fast_failure + " -x TESSERA_DEBUG_COLLECTIVES=1")},
        {"hang", mpirun_self(2, "hang", "RunDistributedChild.HangCaughtByTheWatchdog",
                             fast_failure + " -x TESSERA_COLLECTIVE_TIMEOUT=2")},
        {"device_hang", mpirun_self(2, "device_hang", "RunDistributedChild.DeviceHangCaughtByTheWatchdog",
                                    fast_failure + " -x TESSERA_COLLECTIVE_TIMEOUT=2")},
    };
    std::map<std::string, std::future<ChildJob>> running;
    for (const auto& [name, command] : commands) {
      running[name] = std::async(std::launch::async, [command] {
        const auto start = std::chrono::steady_clock::now();
        ChildJob job{command, run_child_job(command, kChildLimitSeconds)};
        job.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return job;
      });
    }
    for (auto& [name, job] : running) jobs_[name] = job.get();
  }
  // The job of the child `name`.
  static const ChildJob& job(const std::string& name) { return jobs_.at(name); }

  static inline std::map<std::string, ChildJob> jobs_;
};

TEST_F(RunDistributedJobs, LoneProcessRunsAsASingleton) {
  const ChildResult& result = job("singleton").result;
  EXPECT_EQ(result.exit_code, 0) << result.output;
  expect_output_contains(result, "singleton body ran with a world of 1");
}

TEST_F(RunDistributedJobs, LoneProcessThatThrowsReturnsOneWithItsMessage) {
  const ChildResult& result = job("singleton_throws").result;
  EXPECT_EQ(result.exit_code, 0) << result.output;
  // A lone process names the program, not a rank (the prefix is for jobs of several ranks).
  expect_output_contains(result, "child: planted single-rank failure");
  EXPECT_EQ(result.output.find("rank 0/1"), std::string::npos) << result.output;
}

TEST_F(RunDistributedJobs, TooLowMpiThreadLevelFailsWithAMessage) {
  const ChildResult& result = job("thread_level").result;
  EXPECT_EQ(result.exit_code, 0) << result.output;
  if (result.output.find("not reachable") != std::string::npos) GTEST_SKIP() << "this MPI always provides MULTIPLE";
  expect_output_contains(result, "child: ");
  expect_output_contains(
      result, "MPI was initialised with MPI_THREAD_SINGLE but the MPI communicator needs MPI_THREAD_MULTIPLE");
}

TEST_F(RunDistributedJobs, ThrowingRankAbortsTheJobWithItsMessage) {
  const ChildResult& result = job("rank_one_throws").result;
  EXPECT_FALSE(result.timed_out) << "the job hung instead of aborting:\n" << result.output;
  EXPECT_NE(result.exit_code, 0) << result.output;
  expect_output_contains(result, "rank 1/2 (host ");
  expect_output_contains(result, "): planted failure on rank 1");
}

TEST_F(RunDistributedJobs, EveryRankFailingIsSaidOnceAndEndsNormally) {
  const ChildResult& result = job("every_rank_throws").result;
  EXPECT_FALSE(result.timed_out) << result.output;
  EXPECT_EQ(result.exit_code, 0) << "every rank's run_distributed returned 1:\n" << result.output;
  expect_output_contains(result, "child: ranks 0, 1: planted refusal\n");
  expect_output_contains(result, "child: rank 2: another planted refusal\n");
  const std::string first = ": planted refusal";
  EXPECT_EQ(result.output.find(first), result.output.rfind(first)) << "each message once:\n" << result.output;
  EXPECT_EQ(result.output.find("MPI_ABORT"), std::string::npos) << "no rank aborted:\n" << result.output;
}

TEST_F(RunDistributedJobs, DebugModeTurnsAMismatchIntoAnAbortNamingBothCalls) {
  const ChildResult& result = job("mismatch").result;
  EXPECT_FALSE(result.timed_out) << "the job hung instead of aborting:\n" << result.output;
  EXPECT_NE(result.exit_code, 0) << result.output;
  expect_output_contains(result, "collective mismatch on communicator 'world'");
  expect_output_contains(result, "all_reduce(count=16, f32, sum) but rank 1 called");
  expect_output_contains(result, "all_gather(count=16, f32)");
}

TEST_F(RunDistributedJobs, WatchdogTimeoutFromTheEnvironmentAbortsAPlantedHang) {
  const ChildJob& hang = job("hang");
  const ChildResult& result = hang.result;
  EXPECT_FALSE(result.timed_out) << "the job hung instead of aborting:\n" << result.output;
  EXPECT_NE(result.exit_code, 0) << result.output;
  expect_output_contains(result, "tessera watchdog: rank 0/2 (host ");
  expect_output_contains(result, "all_reduce(count=8, f32, sum) on communicator 'world'");
  std::printf("planted hang aborted after %.1f s (watchdog timeout 2 s)\n", hang.seconds);
}

TEST_F(RunDistributedJobs, WatchdogAbortsAPlantedHangOnTheDevicePath) {
  const ChildJob& hang = job("device_hang");
  const ChildResult& result = hang.result;
  EXPECT_FALSE(result.timed_out) << "the job hung instead of aborting:\n" << result.output;
  EXPECT_NE(result.exit_code, 0) << result.output;
  expect_output_contains(result, "tessera watchdog: rank 0/2 (host ");
  expect_output_contains(result, "all_reduce(count=8, f32, sum)");
  std::printf("planted device-path hang aborted after %.1f s (watchdog timeout 2 s)\n", hang.seconds);
}

}  // namespace
}  // namespace tessera
