// run_distributed: the entry point of every Tessera program.
//
//   int main(int argc, char** argv) {
//     return tessera::run_distributed(argc, argv, [](tessera::DistributedContext& ctx) {
//       ... ctx.world().all_reduce(...) ...
//       return 0;
//     });
//   }
//
// Works under mpirun, srun, any PMI/PMIx launcher, and as a lone process (world of 1). It
//  1. initialises MPI with MPI_THREAD_MULTIPLE (checked: a lower level fails with a message),
//  2. stops (check_launch, launch_check.hpp) when the launcher's variables say several processes
//     were started but MPI reports a world of 1, unless TESSERA_ALLOW_SINGLETON=1,
//  3. reads the launcher's variables and TESSERA_DEBUG_COLLECTIVES / TESSERA_COLLECTIVE_TIMEOUT,
//  4. builds the world communicator (MPI), discovers RankInfo and the node groups; with
//     TESSERA_SHOW_RANKS=1 every rank prints RankInfo::describe() to stdout,
//  5. runs body and returns its exit code (ranks may return different codes),
//  6. destroys the communicators and finalises MPI (if it initialised MPI).
// An exception escaping body (or the steps before it) on any rank of a job of N > 1 ranks prints
//   rank R/N (host H): <message>
// to stderr and calls MPI_Abort so the other ranks do not wait for it forever; a lone process
// (N == 1) prints `<program>: <message>` (a usage error needs no rank) and returns 1.
#pragma once

#include <functional>

#include "tessera/launch/distributed_context.hpp"

namespace tessera {

using DistributedBody = std::function<int(DistributedContext&)>;

int run_distributed(int argc, char** argv, const DistributedBody& body);

}  // namespace tessera
