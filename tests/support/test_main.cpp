// Test entry point: GoogleTest main that also brings MPI up when the test was launched by mpirun,
// and keeps the printed output to rank 0 (every rank's failures still fail the run via its exit code).
// A test executable holds every test file of its folder; --tessera-test-file=<dir>/<name>_test.cpp
// (how ctest runs it, tests/CMakeLists.txt) runs only the tests defined in that file.
#include <fnmatch.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr std::string_view kFileFlag = "--tessera-test-file=";

// Removes --tessera-test-file=PATH from argv and returns PATH ("" when absent).
std::string take_file_flag(int& argc, char** argv) {
  std::string file;
  int kept = 0;
  for (int i = 0; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (i > 0 && arg.substr(0, kFileFlag.size()) == kFileFlag) {
      file = std::string(arg.substr(kFileFlag.size()));
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  return file;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  for (std::size_t end; (end = text.find(separator, begin)) != std::string::npos; begin = end + 1) {
    parts.push_back(text.substr(begin, end - begin));
  }
  parts.push_back(text.substr(begin));
  return parts;
}

bool matches_any(const std::vector<std::string>& patterns, const std::string& name) {
  for (const std::string& p : patterns) {
    if (!p.empty() && fnmatch(p.c_str(), name.c_str(), 0) == 0) return true;
  }
  return false;
}

// GoogleTest's filter syntax (POSITIVE[-NEGATIVE], ':'-separated patterns of * and ?).
bool passes_filter(const std::string& filter, const std::string& name) {
  const std::size_t dash = filter.find('-');
  const std::string positive = dash == std::string::npos ? filter : filter.substr(0, dash);
  const std::string negative = dash == std::string::npos ? "" : filter.substr(dash + 1);
  const bool included = positive.empty() || matches_any(split(positive, ':'), name);
  return included && !matches_any(split(negative, ':'), name);
}

// Narrows the run to the tests whose source file ends with `file` (and that pass any --gtest_filter
// given as well). Returns false, saying so, when the file defines no test in this executable or shares
// a test suite's name with another file.
bool select_file(const std::string& file) {
  const std::string suffix = "/" + file;
  const std::string user_filter = GTEST_FLAG_GET(filter);
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  std::string filter;
  int defined = 0;
  const auto in_file = [&](const std::string& path) {
    return path == file ||
           (path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0);
  };
  for (int s = 0; s < unit.total_test_suite_count(); ++s) {
    const ::testing::TestSuite& suite = *unit.GetTestSuite(s);
    // A suite whose tests live in two files of one executable would run the other file's suite set-up
    // (and mix TEST with TEST_F): each file's suites must be its own.
    std::string here, elsewhere;
    for (int t = 0; t < suite.total_test_count(); ++t) {
      const std::string path = suite.GetTestInfo(t)->file();
      (in_file(path) ? here : elsewhere) = path;
    }
    if (!here.empty() && !elsewhere.empty()) {
      std::fprintf(stderr, "test_main: test suite %s is defined in both %s and %s; rename the suite in one of them\n",
                   suite.name(), here.c_str(), elsewhere.c_str());
      return false;
    }
    for (int t = 0; t < suite.total_test_count(); ++t) {
      const ::testing::TestInfo& info = *suite.GetTestInfo(t);
      if (!in_file(info.file())) continue;
      ++defined;
      const std::string name = std::string(info.test_suite_name()) + "." + info.name();
      if (!passes_filter(user_filter, name)) continue;
      filter += (filter.empty() ? "" : ":") + name;
    }
  }
  if (defined == 0) {
    std::fprintf(stderr, "test_main: --tessera-test-file=%s: no test of this executable is defined in that file\n",
                 file.c_str());
    return false;
  }
  // Nothing selected runs nothing: a pattern that matches no test name.
  GTEST_FLAG_SET(filter, filter.empty() ? "-*" : filter);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string file = take_file_flag(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  if (!file.empty() && !select_file(file)) return 2;
  const bool under_mpi = std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
  int rank = 0;
  if (under_mpi) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
      std::fprintf(stderr, "test_main: MPI provides thread level %d, MPI_THREAD_MULTIPLE needed\n", provided);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank != 0) {
      // Other ranks report failures only (with their rank in the message), not the progress lines.
      auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
      delete listeners.Release(listeners.default_result_printer());
    }
  }
  const int result = RUN_ALL_TESTS();
  if (under_mpi) {
    int local = result, any = 0;
    MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any != 0 && local == 0 && rank == 0) std::fprintf(stderr, "a test failed on another rank\n");
    MPI_Finalize();
    return any != 0 ? 1 : 0;
  }
  return result;
}
