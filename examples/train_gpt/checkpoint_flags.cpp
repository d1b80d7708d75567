// check_checkpoint_flags: --save-every, --resume auto and long runs against --checkpoint-dir.
#include "checkpoint_flags.hpp"

#include <stdexcept>
#include <string>

namespace tessera {

void check_checkpoint_flags(const TrainOptions& o) {
  if (!o.checkpoint_dir.empty()) return;
  if (o.save_every > 0) {
    throw std::invalid_argument("--save-every " + std::to_string(o.save_every) + " asks for a checkpoint every " +
                                std::to_string(o.save_every) +
                                " steps, but there is no --checkpoint-dir to save "
                                "them in: add --checkpoint-dir DIR, or drop --save-every");
  }
  if (o.resume == "auto") {
    throw std::invalid_argument(
        "--resume auto continues from the latest checkpoint of --checkpoint-dir, but there is "
        "no --checkpoint-dir: add --checkpoint-dir DIR (the run directory to resume and "
        "save in), or name a checkpoint with --resume PATH");
  }
  if (o.steps > kLongRunSteps && !o.allow_no_checkpoint_dir) {
    throw std::invalid_argument(
        "--steps " + std::to_string(o.steps) + " without --checkpoint-dir: a run of more than " +
        std::to_string(kLongRunSteps) +
        " steps would save nothing, so a crash, a node failure or a stop signal "
        "(SIGTERM/SIGUSR1, e.g. a Slurm time limit or preemption) would lose all of it. Add --checkpoint-dir DIR "
        "(saves on stop signals; with --save-every N also every N steps), or pass --allow-no-checkpoint-dir to run "
        "without checkpoints");
  }
}

}  // namespace tessera
