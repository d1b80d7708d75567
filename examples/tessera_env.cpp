// tessera_env: prints the environment report — versions, build options, libraries, CUDA and the
// GPUs seen, CPU model and features, OpenMP threads — the first thing to paste into a bug report.
// The same report is recorded in every checkpoint train_gpt saves (`tessera_ckpt info` shows it)
// and printed by `train_gpt --env`.
//
//   tessera_env            the report as text
//   tessera_env --json     the report as JSON (as checkpoints store it)
#include <mpi.h>

#include <cstdio>
#include <exception>
#include <string>

#include "flags/program_environment.hpp"
#include "flags/program_options.hpp"

int main(int argc, char** argv) {
  bool json = false;
  tessera::po::options_description options("Output");
  options.add_options()("json", tessera::po::bool_switch(&json), "print the report as JSON (as checkpoints store it)");
  tessera::ProgramOptions program("tessera_env",
                                  "tessera_env: versions, build options, libraries, CPU and GPUs of this Tessera, "
                                  "for a bug report\nUsage: tessera_env [--json]");
  program.add(options);
  try {
    if (!program.parse(argc, argv)) return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera_env: %s\n", e.what());
    return 2;
  }
  const tessera::EnvironmentReport report = tessera::program_environment_report();  // MPI need not be up
  const std::string text =
      json ? tessera::environment_report_json(report) + "\n" : tessera::environment_report_text(report);
  std::fputs(text.c_str(), stdout);
  return 0;
}
