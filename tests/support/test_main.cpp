// Test entry point: GoogleTest main that also brings MPI up when the test was launched by mpirun,
// and keeps the printed output to rank 0 (every rank's failures still fail the run via its exit code).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
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
