// RunDirectoryLock: a second holder is refused with the first one's host and PID; a clean release
// frees it silently; a holder that dies without releasing (a crash) leaves a lock the next one takes,
// naming the one that is gone.
#include "tessera/checkpointing/run_directory_lock.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera {
namespace {

std::string refusal(const std::filesystem::path& dir) {
  try {
    RunDirectoryLock second(dir);
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "(taken)";
}

TEST(RunDirectoryLock, ASecondHolderIsRefusedNamingTheFirst) {
  testing::ScratchDir scratch("run_lock");
  const auto dir = scratch / "run";
  {
    RunDirectoryLock first(dir);
    EXPECT_FALSE(first.previous_holder());
    const std::string message = refusal(dir);
    EXPECT_NE(message.find(dir.string() + " is in use by another job (host "), std::string::npos) << message;
    EXPECT_NE(message.find(", PID " + std::to_string(::getpid()) + ", started "), std::string::npos) << message;
    EXPECT_NE(message.find("choose another directory"), std::string::npos) << message;
  }
  RunDirectoryLock again(dir);  // released cleanly: free, and nobody crashed
  EXPECT_FALSE(again.previous_holder());
}

TEST(RunDirectoryLock, ALockLeftByADeadProcessIsTakenOver) {
  testing::ScratchDir scratch("run_lock_dead");
  const auto dir = scratch / "run";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    new RunDirectoryLock(dir);  // never released: the process ends as a crash would end it
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  RunDirectoryLock taken(dir);
  ASSERT_TRUE(taken.previous_holder());
  std::string pid = " ";  // built by appends: GCC 12 warns (-Wrestrict) about " " + to_string(...) + " "
  pid += std::to_string(child);
  pid += ' ';
  EXPECT_NE(taken.previous_holder()->find(pid), std::string::npos) << *taken.previous_holder();
}

TEST(RunDirectoryLock, AnUnwritableDirectoryIsNamed) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes anywhere";
  testing::ScratchDir scratch("run_lock_ro");
  std::filesystem::permissions(scratch.path(), std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  EXPECT_NE(refusal(scratch / "run").find("cannot create the checkpoint directory"), std::string::npos);
  std::filesystem::permissions(scratch.path(), std::filesystem::perms::owner_all);
}

}  // namespace
}  // namespace tessera
