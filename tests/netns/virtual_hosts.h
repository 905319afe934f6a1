// Test harness: 1-8 "hosts" on one machine, each a set of Linux namespaces of its own, joined by a
// virtual Ethernet switch. Used by the multi-host tests (tests/netns/) to run launchers and ranks
// on real, separate network stacks instead of faking hosts with C10D_HOST_ID.
//
// Topology (everything below lives in namespaces this object made; nothing in the machine's own
// namespaces is touched, no name is visible outside them):
//
//     host0 (10.213.0.1)   host1 (10.213.0.2)  ...        each: net + uts + pid + mount + ipc ns
//       eth0 ─┐              eth0 ─┐                      hostname "host<i>", lo up
//             └─ p0 ─ br0 ─ p1 ─────┘   in the "switch"   /etc/hosts names every host
//                                      namespace          /proc, /dev/shm of its own
//
// Each host is held by a pid-1 process (the host's "init") in a fresh pid namespace; every command
// run on the host is a process of that namespace. The holders die with the process that made
// them (PR_SET_PDEATHSIG on a chain that ends at the creating thread), and when a pid-1 dies the
// kernel kills every process of its namespace and frees the network namespace with its veth ends
// (deleting a veth end deletes its peer). So teardown needs no names and no sweep: a test that
// fails, throws, or is SIGKILLed leaves no namespace, link, process or server behind. The
// destructor does the same at once (SIGKILL the holders, wait for them).
//
// Because the namespaces are anonymous, several test processes can build identical topologies
// (same addresses, same port numbers) at the same time without seeing each other.
//
// Threads: none. The object must be created and destroyed on one thread, and that thread must
// outlive it (the holders' PR_SET_PDEATHSIG follows the creating thread, as the kernel defines it).
//
// Errors: the constructor throws std::runtime_error naming the step that failed (which host,
// which command and its output). netnsUnavailableReason() says why hosts cannot be made here (not
// root, no `ip`, namespaces or veth pairs refused): tests skip with that reason. Where all of
// that is there but a trial set of hosts still fails, that is the harness's own error and the
// tests fail with it (C10D_SKIP_WITHOUT_NETNS does both).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

// Why virtual hosts cannot be made on this machine (a missing capability: not root, no `ip`,
// namespaces or veth pairs refused, probed in a forked child); empty when they can. Probed once
// per process.
std::string netnsUnavailableReason();
// Where the capabilities are there: why a trial set of one host still failed; empty if it worked.
std::string netnsHarnessError();

// In a gtest body: skips the test where virtual hosts cannot be made, fails it where the harness
// itself fails.
#define C10D_SKIP_WITHOUT_NETNS()                                              \
  do {                                                                         \
    const std::string c10d_netns_why = ::c10d::test::netnsUnavailableReason(); \
    if (!c10d_netns_why.empty()) GTEST_SKIP() << c10d_netns_why;               \
    const std::string c10d_netns_err = ::c10d::test::netnsHarnessError();      \
    if (!c10d_netns_err.empty()) FAIL() << c10d_netns_err;                     \
  } while (0)

// One command on one host.
struct HostCommand {
  int host = 0;
  std::vector<std::string> argv;           // argv[0] is looked up in PATH
  std::map<std::string, std::string> env;  // added to (overriding) the caller's environment
  std::string tag;                         // names it in describe() ("rank 3"); default argv[0]
};

// How a command ended, with everything it wrote to stdout and stderr (merged, in order).
struct HostResult {
  int host = -1;
  std::string tag;
  bool exited = false;    // exited normally (else: killed by a signal)
  int exitCode = -1;      // when exited
  int signal = 0;         // when killed
  bool timedOut = false;  // still running at the deadline: killed by the harness
  double seconds = 0;     // from start to end
  std::string output;
  bool ok() const { return exited && exitCode == 0 && !timedOut; }
  // "host1 rank 3: exited with code 1" and the output's last lines.
  std::string describe() const;
};

class VirtualHosts {
 public:
  // Makes `hosts` hosts (1..8) on 10.213.0.0/24 and waits until each can reach the others.
  explicit VirtualHosts(int hosts);
  ~VirtualHosts();
  VirtualHosts(const VirtualHosts&) = delete;
  VirtualHosts& operator=(const VirtualHosts&) = delete;

  int size() const { return static_cast<int>(hosts_.size()); }
  static std::string hostname(int host);  // "host<i>"
  static std::string address(int host);   // "10.213.0.<i+1>"
  // The host's pid-1 process, as the caller's pid namespace numbers it.
  pid_t holderPid(int host) const;

  // A command started on a host (see start()); end it with wait() or kill().
  struct Process {
    pid_t pid = -1;  // our child that entered the host's namespaces (the command is its child)
    int host = -1;
    std::string tag;
    std::string outputPath;
    std::chrono::steady_clock::time_point started;
  };
  // Starts cmd on its host: a new process in the host's namespaces, cwd and environment the
  // caller's (plus cmd.env), stdin /dev/null, stdout+stderr to a file read back by wait().
  Process start(const HostCommand& cmd);
  // Waits for p until `deadline`; at the deadline kills it (timedOut).
  HostResult wait(Process& p, std::chrono::steady_clock::time_point deadline);
  // SIGKILLs the command (and, through PR_SET_PDEATHSIG, what it started with the same habit).
  void kill(const Process& p);

  // Starts every command, then waits for all of them, up to `timeout` in all.
  std::vector<HostResult> runAll(const std::vector<HostCommand>& cmds,
                                 std::chrono::milliseconds timeout);
  // Runs one command on a host and throws unless it exits 0 within `timeout`.
  std::string check(int host, const std::vector<std::string>& argv,
                    std::chrono::milliseconds timeout = std::chrono::seconds(10));

  // Sets the host's eth0 up or down (as `ip link set eth0 down` run on that host would).
  void setLink(int host, bool up);

 private:
  struct Holder {
    pid_t pid = -1;      // the forked process that made the namespaces (waits for pid 1)
    pid_t initPid = -1;  // pid 1 of the host's pid namespace, in our numbering
    std::string name;
  };
  Holder makeHolder(const std::string& name, const std::string& hostsFile);
  Process startIn(const Holder& h, int host, const HostCommand& cmd, bool netOnly);
  std::string checkIn(const Holder& h, const std::vector<std::string>& argv, bool netOnly,
                      std::chrono::milliseconds timeout);
  void teardown();

  std::string dir_;          // temp dir: hosts file, command outputs
  std::vector<pid_t> live_;  // started, not yet waited for: killed and reaped by teardown
  Holder switch_;
  std::vector<Holder> hosts_;
  int outputs_ = 0;
};

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
