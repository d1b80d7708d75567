// train_gpt: trains a GPT-2-style model on a token file, on one process or data-parallel across
// the ranks of an mpirun/srun job with ZeRO stages 0-3. The flags become TrainOptions
// (train_options.hpp); run_gpt (gpt_run.hpp) builds the run and hands the loop to the library's
// TrainingRun. Rank 0 prints the effective configuration with --print-config (-v), shows the progress (a live line on a
// terminal; loss, learning rate, gradient norm, tokens/s, MFU against the GEMM ceiling measured at
// start and peak memory per rank every --log-every steps), writes --metrics, and prints a text sample
// at the end.
#include <cstdio>
#include <optional>

#include "flags/program_environment.hpp"
#include "flags/train_gpt_flags.hpp"
#include "gpt_run.hpp"
#include "tessera/launch/run_distributed.hpp"
#include "tessera/runtime/cpu/blas_core.hpp"
#include "train_options.hpp"

namespace tessera {
namespace {

// Parses the options; errors of the run name the flag (SettingNames) and, for a value from the
// --config file, its file and line.
int train(DistributedContext& dist) {
  const SettingNames& names = train_gpt_setting_names();
  return reword_setting_errors(names, [&] {  // the option checks' errors
    const std::optional<TrainOptions> parsed = parse_train_options(dist.argc(), dist.argv(), dist.rank() == 0);
    if (!parsed) return 0;
    if (parsed->env) {
      if (dist.rank() == 0) std::fputs(environment_report_text(program_environment_report()).c_str(), stdout);
      return 0;
    }
    return locate_config_errors(parsed->settings,
                                [&] { return reword_setting_errors(names, [&] { return run_gpt(dist, *parsed); }); });
  });
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::reexec_with_better_blas_core(argv);
  return tessera::run_distributed(argc, argv, tessera::train);
}
