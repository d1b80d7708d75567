// NodeCluster: simulated nodes for the multi-node tests -- one network namespace per node on a
// private bridge, each process entered with its own host name and /etc/hosts (the script
// tests/multinode/netns_cluster.sh does the Linux side). Open MPI launches ranks into the nodes
// through an rsh agent that enters the node named by the host; mpirun itself runs on the first node
// so the other nodes' daemons can call back.
//
// The namespaces are removed by the destructor and, should the test process be killed, by a reaper
// process the script starts that watches it (and ends after kLifetimeSeconds in any case). start()
// returns "" when the nodes are up, else why not (not root, no network namespaces in this
// container, a program missing) for the test to skip with.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/train_gpt_process.hpp"

namespace tessera::testing {

class NodeCluster {
 public:
  static constexpr int kLifetimeSeconds = 900;
  // The nodes' network, as Open MPI's interface filters take it.
  static constexpr const char* kNetwork = "10.251.0.0/24";

  // The nodes share this machine's cores: 4 ranks on 2 nodes of 2 slots may run on 2 cores, where a
  // rank that waits in a collective spinning holds a core from the rank it waits for. Open MPI yields
  // when idle on a node it knows to be oversubscribed; it cannot tell these are. mpirun() says so
  // with --mca; ranks started another way (srun) take this environment.
  static constexpr const char* kYieldWhenIdleEnv = "OMPI_MCA_mpi_yield_when_idle=1";

  explicit NodeCluster(std::filesystem::path root) : root_(std::move(root)) {}
  ~NodeCluster() {
    if (up_) run_bounded(script_ + " down " + root_.string(), 60);
  }
  NodeCluster(const NodeCluster&) = delete;
  NodeCluster& operator=(const NodeCluster&) = delete;

  std::string start(int nodes) {
    const char* source = std::getenv("TESSERA_SOURCE_DIR");
    if (source == nullptr) return "TESSERA_SOURCE_DIR is not set (ctest sets it)";
    script_ = std::string(source) + "/tests/multinode/netns_cluster.sh";
    if (::geteuid() != 0) {
      return "network namespaces need root; this test runs as uid " + std::to_string(::geteuid());
    }
    for (const char* program : {"ip", "nsenter", "unshare", "mpirun", "tc"}) {
      const ProcessResult found =
          run_bounded(std::string("sh -c 'PATH=$PATH:/usr/sbin:/sbin command -v ") + program + "'", 10);
      if (found.exit_code != 0 || found.output.empty()) {
        return std::string(program) + " is not installed (scripts/setup installs iproute2 and util-linux)";
      }
    }
    nodes_ = nodes;
    const ProcessResult up = run_bounded(script_ + " up " + root_.string() + " " + std::to_string(nodes) + " " +
                                             std::to_string(::getpid()) + " " + std::to_string(kLifetimeSeconds),
                                         60);
    up_ = true;  // whatever part came up is taken down
    std::filesystem::create_directories(root_ / "shm");
    if (up.exit_code != 0)
      return "cannot make network namespaces here (a container without CAP_SYS_ADMIN?):\n" + up.output;
    const ProcessResult probe = on("n1", "sh -c 'hostname; grep n2 /etc/hosts'", 20);
    if (probe.exit_code != 0 || probe.output.find("n1") == std::string::npos) {
      return "cannot enter a node (nsenter/unshare --uts --mount refused?):\n" + probe.output;
    }
    return "";
  }

  int nodes() const { return nodes_; }

  // `command` (one shell word list, run by sh -c) on `node` ("n1", ...), bounded in time.
  ProcessResult on(const std::string& node, const std::string& command, int seconds = 120) const {
    return run_bounded(script_ + " enter " + root_.string() + " " + node + " " + command, seconds);
  }

  // "mpirun ... " as run on n1, with the rsh agent and the interface filters; `hosts` as --host takes
  // it ("n1:2,n2:2"); `extra` (e.g. "--map-by node -x VAR") goes before the program.
  std::string mpirun(const std::string& hosts, int ranks, const std::string& extra = "") const {
    return "mpirun --oversubscribe --host " + hosts + " -np " + std::to_string(ranks) +
           " --mca plm rsh --mca plm_rsh_agent '" + script_ + " agent " + root_.string() +
           "' --mca plm_rsh_no_tree_spawn 1 --mca oob_tcp_if_include " + kNetwork + " --mca btl_tcp_if_include " +
           kNetwork + keepalive() + teardown() + shared_cores() + shared_memory_files() + preconnect() + " " + extra +
           " ";
  }

  // `command` (a shell line) on n1 in `cwd`, bounded in time: how the tests launch jobs.
  ProcessResult launch(const std::string& cwd, const std::string& command, int seconds = 180) const {
    return on("n1", "sh -c " + quoted("cd " + cwd + " && " + command), seconds);
  }

  // Processes entered on `node` after this call see `source` at `target` (a node-local disk).
  void bind_on(const std::string& node, const std::filesystem::path& source, const std::filesystem::path& target) {
    std::ofstream(root_ / (node + ".binds"), std::ios::app) << source.string() << " " << target.string() << "\n";
  }

  // SIGKILL every process on `node`.
  ProcessResult kill_node(const std::string& node) const {
    return run_bounded(script_ + " kill-node " + root_.string() + " " + node, 20);
  }
  // Takes the node's link to the bridge down (or up again).
  ProcessResult set_link(const std::string& node, bool up) const {
    return run_bounded(script_ + " link " + root_.string() + " " + node + (up ? " up" : " down"), 20);
  }
  // Limits every node link to `rate` ("1gbit"), both directions.
  ProcessResult shape(const std::string& rate) const {
    return run_bounded(script_ + " shape " + root_.string() + " " + rate, 20);
  }
  // Bytes sent and received on `node`'s link so far.
  std::pair<std::int64_t, std::int64_t> link_bytes(const std::string& node) const {
    const ProcessResult r = run_bounded(script_ + " bytes " + root_.string() + " " + node, 20);
    std::int64_t sent = -1, received = -1;
    std::sscanf(r.output.c_str(), "%ld %ld", &sent, &received);
    return {sent, received};
  }

  static std::string quoted(const std::string& text) {
    std::string out = "'";
    for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
  }

 private:
  // A node lost without a word (its link down) is noticed by mpirun's keepalive probes within
  // seconds instead of the kernel's 15-minute retransmission limit (docs/LAUNCH.md).
  static std::string keepalive() {
    return " --mca oob_tcp_keepalive_time 2 --mca oob_tcp_keepalive_intvl 1 --mca oob_tcp_keepalive_probes 3";
  }
  // When a rank fails, mpirun ends the job's other processes with SIGCONT, SIGTERM, SIGKILL, sleeping
  // odls_base_sigkill_timeout (1 s) before each of the last two -- also when they have already
  // exited on their own, as every rank does after an error they agree on. 0: the signals at once.
  static std::string teardown() { return " --mca odls_base_sigkill_timeout 0"; }
  // Every TCP connection between ranks made in MPI_Init. Open MPI 4.1 connects a pair of ranks when
  // it first exchanges a message; a connection first made while two threads of a rank drive MPI at
  // once (the step and an asynchronous save's writer) now and then fails on an overloaded machine
  // ("Open MPI failed to TCP connect to a peer MPI process ... Operation now in progress"), and the
  // collective waiting on it never completes (docs/LAUNCH.md).
  static std::string preconnect() { return " --mca mpi_preconnect_mpi 1"; }
  // kYieldWhenIdleEnv as mpirun takes it.
  static std::string shared_cores() { return " --mca mpi_yield_when_idle 1"; }
  // Open MPI's shared-memory transport keeps its files in the cluster's directory instead of the
  // machine's /dev/shm: a rank killed by a test (a lost node) leaves them where the test's
  // directory removes them, not behind on the machine.
  std::string shared_memory_files() const { return " --mca btl_vader_backing_directory " + (root_ / "shm").string(); }

  std::filesystem::path root_;
  std::string script_;
  int nodes_ = 0;
  bool up_ = false;
};

}  // namespace tessera::testing
