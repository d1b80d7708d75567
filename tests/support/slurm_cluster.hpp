// SlurmCluster: a Slurm brought up inside a test's scratch directory -- munged with a generated key
// and its own socket, slurmctld and slurmd with a generated slurm.conf (no cgroups:
// proctrack/linuxproc, task/none; SlurmUser root; ports of its own; state, spool, pid files and
// logs in the directory), so it cannot meet a system Slurm. Either this host is the only node
// (127.0.0.1, two free ports), or -- given a NodeCluster (tests/support/node_cluster.hpp) -- each
// simulated node n1, n2, ... runs a slurmd of its own in its network namespace under its own host
// name, slurmctld runs on n1, and the client commands run there too. Every client command (sbatch, srun, scontrol, ...)
// the test runs through command() reads that slurm.conf through SLURM_CONF, and the jobs it submits inherit it.
//
// The daemons run in the foreground under `timeout`, so they end within kLifetimeSeconds even when
// the test process is killed; the destructor cancels the jobs and shuts them down (also when the
// test failed). start() returns "" once the node is idle and `srun --mpi=pmix` runs on it, else why
// not -- not root, a package missing, a daemon that did not start, with the lines of its log -- for
// the test to skip with.
#pragma once

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/node_cluster.hpp"
#include "tests/support/train_gpt_process.hpp"

namespace tessera::testing {

class SlurmCluster {
 public:
  static constexpr int kLifetimeSeconds = 900;

  explicit SlurmCluster(std::filesystem::path root, const NodeCluster* nodes = nullptr)
      : root_(std::move(root)), nodes_(nodes) {}
  ~SlurmCluster() { stop(); }
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  std::string start() {
    if (::geteuid() != 0) {
      return "slurmd must run as root to start jobs (SlurmdUser=root); this test runs as uid " +
             std::to_string(::geteuid());
    }
    for (const char* program : {"munged", "slurmctld", "slurmd", "sbatch", "srun", "scontrol", "scancel", "sinfo"}) {
      const ProcessResult found =
          run_bounded(std::string("sh -c 'PATH=$PATH:/usr/sbin:/sbin command -v ") + program + "'", 10);
      if (found.exit_code != 0 || found.output.empty()) {
        return std::string(program) +
               " is not installed (scripts/setup installs slurmctld, slurmd, slurm-client "
               "and munge)";
      }
      paths_[program] = found.output.substr(0, found.output.find('\n'));
    }
    namespace fs = std::filesystem;
    // munged wants every directory above its socket searchable by all, and its key private.
    fs::permissions(root_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
    for (const char* dir : {"munge", "run", "state", "spool", "log", "tmp"}) fs::create_directories(root_ / dir);
    fs::permissions(root_ / "munge", fs::perms::owner_all);
    if (const std::string error = write_munge_key(); !error.empty()) return error;

    const std::string socket = (root_ / "run" / "munge.socket").string();
    munged_ = start_daemon(paths_["munged"] + " -F --key-file=" + (root_ / "munge" / "munge.key").string() +
                               " --socket=" + socket + " --pid-file=" + (root_ / "run" / "munged.pid").string() +
                               " --log-file=" + (root_ / "munge" / "munged.log").string() +
                               " --seed-file=" + (root_ / "munge" / "munged.seed").string(),
                           root_ / "log" / "munged.out");
    if (!wait_for([&] { return fs::exists(socket) || !alive(munged_); }, 15) || !fs::exists(socket)) {
      return "munged did not start:\n" + tail(root_ / "munge" / "munged.log") + tail(root_ / "log" / "munged.out");
    }
    write_config(socket);
    slurmctld_ = start_daemon(paths_["slurmctld"] + " -D -c -f " + conf(), root_ / "log" / "slurmctld.out", "n1");
    for (const std::string& node : node_names()) {
      fs::create_directories(root_ / ("spool-" + node));
      fs::create_directories(root_ / ("tmp-" + node));
      slurmd_.push_back(
          start_daemon(paths_["slurmd"] + " -D -f " + conf(), root_ / "log" / ("slurmd-" + node + ".out"), node));
    }
    std::string state;
    const bool idle = wait_for(
        [&] {
          state = command("sinfo -h -N -o %T", 10).output;
          return idle_nodes(state) == node_names().size() || !alive(slurmctld_) || !all_slurmd_alive();
        },
        60);
    if (!idle || idle_nodes(state) != node_names().size()) {
      return "the Slurm node did not come up (sinfo: " + state + "):\n" + logs();
    }
    const std::string spread =
        " -N " + std::to_string(node_names().size()) + " -n " + std::to_string(2 * node_names().size());
    const ProcessResult probe = command("srun --mpi=pmix" + spread + " -t 1 true", 60);
    if (probe.exit_code != 0) {
      return "srun --mpi=pmix" + spread + " does not run here (exit " + std::to_string(probe.exit_code) + "):\n" +
             probe.output + logs();
    }
    return "";
  }

  // `line` with SLURM_CONF pointing at this cluster (on n1 with simulated nodes), under a time bound.
  ProcessResult command(const std::string& line, int seconds = 60) const {
    if (nodes_ != nullptr) return nodes_->on("n1", "env SLURM_CONF=" + conf() + " " + line, seconds);
    return run_bounded("env SLURM_CONF=" + conf() + " " + line, seconds);
  }

  // Field `name` of `scontrol show job -o <job>` ("JobState", "Restarts", ...), or "" when absent.
  std::string job_field(const std::string& job, const std::string& name) const {
    const std::string text = command("scontrol show job -o " + job, 20).output;
    const std::size_t at = text.find(" " + name + "=");
    if (at == std::string::npos) return "";
    const std::size_t begin = at + name.size() + 2;
    return text.substr(begin, text.find_first_of(" \n", begin) - begin);
  }

  // Polls `done` every 100 ms for up to `seconds`; true once it holds.
  static bool wait_for(const std::function<bool()>& done, int seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (!done()) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return true;
  }

  // The last lines of every daemon's log, for failure messages.
  std::string logs() const {
    std::string text;
    std::vector<std::string> logs{"log/slurmctld.log", "log/slurmctld.out", "munge/munged.log"};
    for (const std::string& node : node_names()) {
      logs.push_back("log/slurmd-" + node + ".log");
      logs.push_back("log/slurmd-" + node + ".out");
    }
    for (const std::string& log : logs) text += tail(root_ / log);
    return text;
  }

  std::string conf() const { return (root_ / "slurm.conf").string(); }

 private:
  // A daemon that has ended but is not reaped yet (its parent is init, which reaps when it gets to
  // it) is a zombie: ended.
  static bool alive(pid_t pid) {
    if (pid <= 0 || ::kill(pid, 0) != 0) return false;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const std::size_t after_name = text.rfind(')');
    return after_name == std::string::npos || after_name + 2 >= text.size() || text[after_name + 2] != 'Z';
  }
  static bool none_alive(const std::vector<pid_t>& pids) {
    for (const pid_t pid : pids) {
      if (alive(pid)) return false;
    }
    return true;
  }

  // The nodes' names: this host's (short) name, or n1, n2, ... on simulated nodes.
  std::vector<std::string> node_names() const {
    if (nodes_ != nullptr) {
      std::vector<std::string> names;
      for (int k = 1; k <= nodes_->nodes(); ++k) names.push_back(std::string("n").append(std::to_string(k)));
      return names;
    }
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    const std::string host = name;
    return {host.substr(0, host.find('.'))};
  }

  static std::size_t idle_nodes(const std::string& sinfo) {
    std::size_t idle = 0;
    for (std::size_t at = sinfo.find("idle"); at != std::string::npos; at = sinfo.find("idle", at + 4)) ++idle;
    return idle;
  }

  bool all_slurmd_alive() const {
    for (const pid_t pid : slurmd_) {
      if (!alive(pid)) return false;
    }
    return true;
  }

  // Runs `command` in the background under `timeout` (on `node` with simulated nodes); returns
  // timeout's pid (it passes TERM on).
  pid_t start_daemon(const std::string& command, const std::filesystem::path& log, const std::string& node = "n1") {
    const std::string line = "env SLURM_CONF=" + conf() + " timeout -k 10 " + std::to_string(kLifetimeSeconds) + " " +
                             command + " > " + log.string() + " 2>&1 < /dev/null & echo $!";
    const ProcessResult r = nodes_ != nullptr ? nodes_->on(node, "sh -c " + NodeCluster::quoted(line), 10)
                                              : run_bounded("sh -c '" + line + "'", 10);
    try {
      return static_cast<pid_t>(std::stol(r.output));
    } catch (...) {
      return -1;
    }
  }

  static void end(pid_t pid) {
    if (!alive(pid)) return;
    ::kill(pid, SIGTERM);
    if (!wait_for([&] { return !alive(pid); }, 15)) ::kill(pid, SIGKILL);
  }

  void stop() {
    if (alive(slurmctld_)) {
      command("scancel --full --user=root", 20);
      wait_for([&] { return command("squeue -h", 10).output.empty(); }, 30);
      command("scontrol shutdown", 20);
      wait_for([&] { return !alive(slurmctld_) && none_alive(slurmd_); }, 20);
    }
    for (const pid_t pid : slurmd_) end(pid);
    end(slurmctld_);
    end(munged_);
    slurmd_.clear();
    slurmctld_ = munged_ = -1;
  }

  std::string write_munge_key() {
    const std::filesystem::path key = root_ / "munge" / "munge.key";
    std::ifstream random("/dev/urandom", std::ios::binary);
    std::string bytes(1024, '\0');
    if (!random.read(bytes.data(), static_cast<std::streamsize>(bytes.size()))) return "cannot read /dev/urandom";
    std::ofstream(key, std::ios::binary) << bytes;
    std::filesystem::permissions(key, std::filesystem::perms::owner_read);
    return "";
  }

  // A TCP port nobody listens on now (the kernel's pick for port 0).
  static int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    int port = -1;
    if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      port = ntohs(address.sin_port);
    }
    if (fd >= 0) ::close(fd);
    return port;
  }

  void write_config(const std::string& munge_socket) {
    const std::vector<std::string> nodes = node_names();
    // Simulated nodes have ports to themselves (a network namespace each); this host needs free ones.
    const int controller_port = nodes_ != nullptr ? 6817 : free_port();
    int node_port = nodes_ != nullptr ? 6818 : free_port();
    while (node_port == controller_port) node_port = free_port();
    const std::string dir = root_.string();
    const std::string controller = nodes_ != nullptr ? "n1(10.251.0.1)" : nodes.front() + "(127.0.0.1)";
    std::ofstream out(root_ / "slurm.conf");
    out << "# Test cluster (tests/support/slurm_cluster.hpp)\n"
        << "ClusterName=tessera-test\n"
        << "SlurmctldHost=" << controller << "\n"
        << "SlurmctldPort=" << controller_port << "\n"
        << "SlurmdPort=" << node_port
        << "\n"
        // cred_expire: also how long a requeued job waits before it may start again (cred_expire + 1 s;
        // default 120 s). 5 is the least Slurm takes.
        << "AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket=" << munge_socket << ",cred_expire=5\n"
        << "SlurmUser=root\nSlurmdUser=root\n"
        // %n: each node's slurmd its own spool, temporary directory, pid file and log.
        << "StateSaveLocation=" << dir << "/state\nSlurmdSpoolDir=" << dir
        << (nodes_ != nullptr ? "/spool-%n" : "/spool") << "\nTmpFS=" << dir << (nodes_ != nullptr ? "/tmp-%n" : "/tmp")
        << "\n"
        // Job ids of their own: srun --mpi=pmix names its directories after them.
        << "FirstJobId=" << 1000 + ::getpid() % 1000000 << "\n"
        << "SlurmctldPidFile=" << dir << "/run/slurmctld.pid\nSlurmdPidFile=" << dir << "/run/slurmd-%n.pid\n"
        << "SlurmctldLogFile=" << dir << "/log/slurmctld.log\nSlurmdLogFile=" << dir << "/log/slurmd-%n.log\n"
        << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n"
        << "AccountingStorageType=accounting_storage/none\nJobCompType=jobcomp/none\nSwitchType=switch/none\n"
        << "MpiDefault=none\nSelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
        // The main scheduling pass, which starts a requeued job once it is eligible: every second (the
        // controller's loop), not every 60 s; a submitted batch job at the next pass, not 3 s after the
        // last. Slurm reads both at its first pass, 3 s after it starts: the first job waits for that.
        << "SchedulerType=sched/builtin\nSchedulerParameters=sched_interval=1,batch_sched_delay=0\n"
        << "SlurmdParameters=config_overrides\nReturnToService=2\nKillWait=10\nMinJobAge=600\n"
        // Jobs are not requeued unless they ask for it (#SBATCH --requeue), as on many clusters.
        << "JobRequeue=0\n";
    std::string list;
    for (std::size_t k = 0; k < nodes.size(); ++k) {
      const std::string address = nodes_ != nullptr ? "10.251.0." + std::to_string(k + 1) : "127.0.0.1";
      out << "NodeName=" << nodes[k] << " NodeAddr=" << address << " CPUs=2 State=UNKNOWN\n";
      list += (k > 0 ? "," : "") + nodes[k];
    }
    out << "PartitionName=test Nodes=" << list << " Default=YES MaxTime=INFINITE State=UP\n";
  }

  static std::string tail(const std::filesystem::path& file, int lines = 15) {
    if (!std::filesystem::exists(file)) return "";
    return "--- " + file.filename().string() + ":\n" +
           run_bounded("tail -n " + std::to_string(lines) + " " + file.string(), 10).output;
  }

  std::filesystem::path root_;
  std::map<std::string, std::string> paths_;  // program -> its path
  const NodeCluster* nodes_;
  pid_t munged_ = -1, slurmctld_ = -1;
  std::vector<pid_t> slurmd_;  // one per node
};

}  // namespace tessera::testing
