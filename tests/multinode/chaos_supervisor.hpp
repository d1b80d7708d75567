// ChaosSupervisor: runs one train_gpt job on the simulated nodes to its last step through a chaos
// schedule (chaos_schedule.hpp), as a cluster's scheduler with automatic requeue would: it starts
// the job, strikes when the planned interruption's trigger is seen (the steps its log printed, then
// a save in progress, `latest` moving, an offload file written), waits for the job to end,
// clears what is left on the nodes (as a scheduler ends a failed job's processes) and brings the
// link back, checks that the checkpoint `latest` names verifies, and starts the job again with
// `--resume auto` on the next placement. Each job's record says what struck, the last step it
// logged, the step its successor resumed from and the seconds it took.
#pragma once

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/multinode/chaos_schedule.hpp"
#include "tests/support/node_cluster.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera::testing {

struct ChaosJob {
  Placement placement;
  std::optional<PlannedInterruption> interruption;  // none: the job that ran to the end
  bool struck = false;                              // the interruption was carried out (its trigger was seen)
  bool failed_on_its_own = false;  // ended non-zero before its trigger (its interruption moves to the next job)
  int struck_at = 0;               // the last step logged when it struck
  std::string strike_output;       // what the strike's command printed (a node's kill, a link)
  int started_at = 0;              // the step it resumed from (0: a fresh start)
  int last_logged = 0;             // the last step in the metrics file when it ended
  int exit_code = 0;
  double seconds = 0.0;
  std::string verify_output;  // tessera_ckpt verify of `latest` after it ended ("" when none)
  int verify_exit = 0;
  std::string output;
};

class ChaosSupervisor {
 public:
  using Clock = std::chrono::steady_clock;

  // `command(placement)`: the job's shell line (mpirun ... train_gpt ... --resume auto) for a
  // placement; `cwd`, `run_dir` (--checkpoint-dir), `metrics` (--metrics) and `offload_dir`
  // (--offload-path, "" for none) as the command uses them.
  ChaosSupervisor(NodeCluster& cluster, std::filesystem::path cwd, std::filesystem::path run_dir,
                  std::filesystem::path metrics, std::filesystem::path offload_dir,
                  std::function<std::string(const Placement&)> command)
      : cluster_(cluster),
        cwd_(std::move(cwd)),
        run_dir_(std::move(run_dir)),
        metrics_(std::move(metrics)),
        offload_dir_(std::move(offload_dir)),
        command_(std::move(command)) {}

  // Runs the plan's jobs, then one on `final_placement` to the end. A job that fails on its own
  // before its trigger (a hang the watchdog ended, say) is restarted like any other, its
  // interruption left for the next job, at most `max_unplanned` times. Stops early (the last record
  // says why) when a job ends well before it was struck or a job exceeds `job_seconds`.
  std::vector<ChaosJob> run(const std::vector<PlannedInterruption>& plan, const Placement& final_placement,
                            int job_seconds, int max_unplanned = 10) {
    std::vector<ChaosJob> jobs;
    int unplanned = 0;
    for (std::size_t i = 0, next = 0; next <= plan.size(); ++i) {
      ChaosJob job;
      job.placement = next < plan.size() ? plan[next].placement : final_placement;
      if (next < plan.size()) job.interruption = plan[next];
      job.started_at = latest_step();
      const auto started = Clock::now();
      // The job's output goes to a log of its own, which the triggers read (the metrics file still
      // holds the previous job's records until the new job has started and rewritten it).
      const std::filesystem::path log = run_dir_.parent_path() / ("job_" + std::to_string(i) + ".log");
      const std::string line = command_(job.placement) + " > " + log.string() + " 2>&1";
      std::future<ProcessResult> running =
          std::async(std::launch::async, [&] { return cluster_.launch(cwd_.string(), line, job_seconds); });
      if (job.interruption) job.struck = strike(*job.interruption, job, log, running);
      const ProcessResult result = running.get();
      job.seconds = std::chrono::duration<double>(Clock::now() - started).count();
      job.exit_code = result.exit_code;
      std::ifstream log_file(log);
      job.output =
          result.output + std::string(std::istreambuf_iterator<char>(log_file), std::istreambuf_iterator<char>());
      job.last_logged = last_logged_step();
      clear_nodes(job);
      if (std::filesystem::exists(run_dir_ / "latest")) {
        const ProcessResult verify = run_bounded(tool("tessera_ckpt") + " verify " + run_dir_.string(), 60);
        job.verify_exit = verify.exit_code;
        job.verify_output = verify.output;
      }
      job.failed_on_its_own = !job.struck && job.exit_code != 0;
      jobs.push_back(job);
      if (job.failed_on_its_own) {
        if (++unplanned > max_unplanned) break;
        continue;
      }
      if (job.interruption && !job.struck) break;  // ended well before its trigger: the caller fails
      if (!job.interruption || job.exit_code == 0) break;
      ++next;
    }
    return jobs;
  }

  // The step `latest` names (0 when there is none).
  int latest_step() const {
    std::error_code ec;
    const std::filesystem::path target = std::filesystem::read_symlink(run_dir_ / "latest", ec);
    if (ec) return 0;
    const std::string name = target.filename().string();
    return std::stoi(name.substr(name.find('_') + 1));
  }

  // The last step a job's log printed ("... step   17/320  loss ..." lines; 0 when none).
  static int last_step_printed(const std::filesystem::path& log) {
    const std::string text = tail_of(log);
    int step = 0;
    for (std::size_t at = text.find(" step "); at != std::string::npos; at = text.find(" step ", at + 1)) {
      const std::size_t slash = text.find('/', at);
      const std::size_t end = text.find('\n', at);
      if (slash == std::string::npos || end == std::string::npos || slash > end) continue;
      const std::string number = text.substr(at + 6, slash - at - 6);
      const std::size_t digits = number.find_first_not_of(' ');
      if (digits == std::string::npos || number.find_first_not_of("0123456789", digits) != std::string::npos) continue;
      step = std::stoi(number.substr(digits));
    }
    return step;
  }

  // The step of the last whole train record in the metrics file (0 when none).
  int last_logged_step() const {
    const std::string text = tail_of(metrics_);
    int step = 0;
    std::size_t at = 0;
    while ((at = text.find("{\"kind\":\"train\"", at)) != std::string::npos) {
      const std::size_t end = text.find('\n', at);
      if (end == std::string::npos) break;  // a line still being written
      const std::size_t key = text.find("\"step\":", at);
      if (key != std::string::npos && key < end) step = std::stoi(text.substr(key + 7));
      at = end;
    }
    return step;
  }

 private:
  static constexpr std::chrono::microseconds kStepPoll{2000}, kPhasePoll{300};

  // The last 4 KiB of a file ("" when it cannot be read).
  static std::string tail_of(const std::filesystem::path& path) {
    std::ifstream in(path);
    if (!in) return "";
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    const std::streamoff tail = std::min<std::streamoff>(size, 4096);
    in.seekg(size - tail);
    std::string text(static_cast<std::size_t>(tail), '\0');
    in.read(text.data(), tail);
    return text;
  }

  static std::string tool(const std::string& name) { return std::string(std::getenv("TESSERA_BIN_DIR")) + "/" + name; }

  // Polls `seen` every `interval` until it holds (true) or the job ends (false; the job's own time
  // bound ends a hung one). Steps are polled every 2 ms; the short phases of a step (a save being
  // written, `latest` moving, an offload write) every 0.3 ms — only for the few steps until one
  // comes, as the polling takes from the ranks' cores.
  static bool wait_for(const std::function<bool()>& seen, std::future<ProcessResult>& running,
                       std::chrono::microseconds interval) {
    while (true) {
      if (seen()) return true;
      if (running.wait_for(interval) == std::future_status::ready) return false;
    }
  }

  // The train_gpt processes of this job (their command line names the run directory), with their
  // world rank (OMPI_COMM_WORLD_RANK in their environment); zombies (ended, not yet reaped) left out.
  std::vector<std::pair<pid_t, int>> job_processes() const {
    std::vector<std::pair<pid_t, int>> found;
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
      const std::string pid = entry.path().filename().string();
      if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream comm(entry.path() / "comm");
      std::string name;
      if (!std::getline(comm, name) || name != "train_gpt") continue;
      std::ifstream stat(entry.path() / "stat");
      std::string stat_line;
      std::getline(stat, stat_line);
      const std::size_t close = stat_line.rfind(')');
      if (close == std::string::npos || close + 2 >= stat_line.size() || stat_line[close + 2] == 'Z') continue;
      std::ifstream cmdline_file(entry.path() / "cmdline");
      const std::string cmdline((std::istreambuf_iterator<char>(cmdline_file)), std::istreambuf_iterator<char>());
      if (cmdline.find(run_dir_.string()) == std::string::npos) continue;
      std::ifstream environ_file(entry.path() / "environ");
      const std::string environ((std::istreambuf_iterator<char>(environ_file)), std::istreambuf_iterator<char>());
      const std::string key = std::string("OMPI_COMM_WORLD_RANK=");
      const std::size_t at = environ.find(key);
      if (at == std::string::npos) continue;
      found.emplace_back(static_cast<pid_t>(std::stoi(pid)), std::stoi(environ.substr(at + key.size())));
    }
    return found;
  }

  // kill -9 of `rank` (-1: every rank of the job at once).
  void kill_rank(int rank) const {
    for (const auto& [pid, r] : job_processes()) {
      if (rank < 0 || r == rank) ::kill(pid, SIGKILL);
    }
  }

  std::filesystem::file_time_type offload_write_time(int rank) const {
    std::error_code ec;
    const auto time =
        std::filesystem::last_write_time(offload_dir_ / ("tessera-offload-rank" + std::to_string(rank) + ".bin"), ec);
    return ec ? std::filesystem::file_time_type::min() : time;
  }

  bool save_in_progress() const {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(run_dir_, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.starts_with("step_") && name.ends_with(".tmp")) return true;
    }
    return false;
  }

  // Waits for the plan's trigger, then strikes. Returns whether it struck.
  bool strike(const PlannedInterruption& p, ChaosJob& job, const std::filesystem::path& log,
              std::future<ProcessResult>& running) {
    if (!wait_for([&] { return last_step_printed(log) >= job.started_at + p.min_steps; }, running, kStepPoll)) {
      return false;
    }
    job.struck_at = last_step_printed(log);
    switch (p.kind) {
      case Interruption::kRankKill: kill_rank(p.rank); return true;
      case Interruption::kNodeKill: job.strike_output = cluster_.kill_node(p.node).output; return true;
      case Interruption::kLinkDown:
        job.strike_output = cluster_.set_link(p.node, false).output;
        link_down_ = p.node;
        return true;
      case Interruption::kDuringSave:
        if (!wait_for([&] { return save_in_progress(); }, running, kPhasePoll)) return false;
        kill_rank(p.rank);
        return true;
      case Interruption::kDuringRetention: {
        const int before = latest_step();
        if (!wait_for([&] { return latest_step() != before; }, running, kPhasePoll)) return false;
        kill_rank(p.rank);
        return true;
      }
      case Interruption::kDuringOffloadWrite: {
        const auto before = offload_write_time(p.rank);
        if (!wait_for([&] { return offload_write_time(p.rank) != before; }, running, kPhasePoll)) return false;
        kill_rank(p.rank);
        return true;
      }
    }
    return false;
  }

  // What a scheduler does after a failed job: every process left on the nodes ended, links back up.
  void clear_nodes(const ChaosJob&) {
    for (int n = 1; n <= cluster_.nodes(); ++n) cluster_.kill_node("n" + std::to_string(n));
    if (!link_down_.empty()) cluster_.set_link(link_down_, true);
    link_down_.clear();
    // The killed processes' locks and files are released once they are gone.
    const auto give_up = Clock::now() + std::chrono::seconds(20);
    while (!job_processes().empty() && Clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }

  NodeCluster& cluster_;
  std::filesystem::path cwd_, run_dir_, metrics_, offload_dir_;
  std::function<std::string(const Placement&)> command_;
  std::string link_down_;
};

}  // namespace tessera::testing
