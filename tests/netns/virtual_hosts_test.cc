// The harness itself: each host is a host of its own (name, address, process table, shared
// memory, name resolution), and nothing outlives the process that made the hosts, even when that
// process is SIGKILLed.
#include "tests/netns/virtual_hosts.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

std::string sh(VirtualHosts& hosts, int host, const std::string& script) {
  return hosts.check(host, {"/bin/sh", "-c", script});
}

TEST(VirtualHosts, EachHostHasItsOwnNameAddressProcessesAndShm) {
  C10D_SKIP_WITHOUT_NETNS();
  VirtualHosts hosts(3);
  char mine[256] = {0};
  gethostname(mine, sizeof(mine) - 1);
  for (int i = 0; i < hosts.size(); ++i) {
    SCOPED_TRACE(VirtualHosts::hostname(i));
    EXPECT_EQ(sh(hosts, i, "cat /proc/sys/kernel/hostname"), VirtualHosts::hostname(i) + "\n");
    const std::string addrs = sh(hosts, i, "ip -o -4 addr show");
    EXPECT_NE(addrs.find("eth0    inet " + VirtualHosts::address(i) + "/24"), std::string::npos)
        << addrs;
    EXPECT_NE(addrs.find("lo    inet 127.0.0.1/8"), std::string::npos) << addrs;
    // Its own pid namespace (the shell is a low pid, pid 1 is the host's init) and /dev/shm.
    EXPECT_LT(std::stoi(sh(hosts, i, "echo $$")), 100);
    EXPECT_EQ(sh(hosts, i, "ls /dev/shm | wc -l"), "0\n");
    // Names resolve to the hosts' addresses, as a cluster's DNS or /etc/hosts would.
    for (int j = 0; j < hosts.size(); ++j) {
      EXPECT_EQ(sh(hosts, i,
                   "getent ahostsv4 " + VirtualHosts::hostname(j) + " | head -1 | cut -d' ' -f1"),
                VirtualHosts::address(j) + "\n");
    }
  }
  // The machine's own hostname is untouched.
  char after[256] = {0};
  gethostname(after, sizeof(after) - 1);
  EXPECT_STREQ(mine, after);
}

TEST(VirtualHosts, HostsReachEachOtherAndOnlyThroughTheirLinks) {
  C10D_SKIP_WITHOUT_NETNS();
  VirtualHosts hosts(2);
  // A listener on host0 (bash's /dev/tcp as the client needs no tool beyond the shell).
  HostCommand server;
  server.host = 0;
  server.tag = "listener";
  server.argv = {"/usr/bin/python3", "-c",
                 "import socket;s=socket.socket();s.setsockopt(socket.SOL_SOCKET,"
                 "socket.SO_REUSEADDR,1);s.bind(('0.0.0.0',7777));s.listen();c,a=s.accept();"
                 "print('from',a[0]);c.sendall(b'hello');c.close()"};
  if (access(server.argv[0].c_str(), X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
  auto listener = hosts.start(server);
  const std::string client =
      "import socket,time\n"
      "for i in range(200):\n"
      "  try:\n"
      "    s=socket.create_connection(('host0',7777),timeout=5);break\n"
      "  except ConnectionRefusedError: time.sleep(0.02)\n"
      "print(s.recv(16).decode())\n";
  EXPECT_EQ(hosts.check(1, {"/usr/bin/python3", "-c", client}), "hello\n");
  auto r = hosts.wait(listener, std::chrono::steady_clock::now() + std::chrono::seconds(10));
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.output, "from " + VirtualHosts::address(1) + "\n");
  // With host1's link down, host0 cannot be reached from it.
  hosts.setLink(1, false);
  HostCommand probe;
  probe.host = 1;
  probe.argv = {"/usr/bin/python3", "-c",
                "import socket\ntry:\n  socket.create_connection(('host0',7777),timeout=1)\n"
                "except OSError as e: print(type(e).__name__)\n"};
  auto down = hosts.runAll({probe}, std::chrono::seconds(10));
  ASSERT_TRUE(down[0].ok()) << down[0].describe();
  EXPECT_NE(down[0].output.find("Error"), std::string::npos) << down[0].output;
}

bool gone(pid_t pid) {
  if (kill(pid, 0) != 0) return true;
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(f, line);
  const auto close = line.rfind(')');
  return close == std::string::npos || line.substr(close + 2, 1) == "Z";
}

// The owner of the hosts SIGKILLed with a command running on a host: the hosts' init processes
// and the command are gone within a few seconds.
TEST(VirtualHosts, NothingOutlivesAKilledOwner) {
  C10D_SKIP_WITHOUT_NETNS();
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t owner = fork();
  ASSERT_GE(owner, 0);
  if (owner == 0) {
    close(fds[0]);
    try {
      VirtualHosts hosts(2);
      HostCommand c;
      c.host = 1;
      c.argv = {"/bin/sh", "-c", "echo $$ > /dev/null; exec sleep 1000"};
      auto p = hosts.start(c);
      // The command's pid, as we number it: the only child of our helper.
      std::string kids;
      for (int i = 0; i < 500 && kids.empty(); ++i) {
        std::ifstream f("/proc/" + std::to_string(p.pid) + "/task/" + std::to_string(p.pid) +
                        "/children");
        std::getline(f, kids);
        if (kids.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      std::string msg = std::to_string(hosts.holderPid(0)) + " " +
                        std::to_string(hosts.holderPid(1)) + " " + kids + "\n";
      (void)!write(fds[1], msg.data(), msg.size());
      pause();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "owner: %s\n", e.what());
    }
    _exit(1);
  }
  close(fds[1]);
  std::string got;
  char buf[256];
  ssize_t n;
  while (got.find('\n') == std::string::npos && (n = read(fds[0], buf, sizeof(buf))) > 0)
    got.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  std::istringstream in(got);
  pid_t init0 = 0, init1 = 0, cmd = 0;
  in >> init0 >> init1 >> cmd;
  ASSERT_GT(init0, 0) << "owner said: " << got;
  ASSERT_GT(cmd, 0) << "owner said: " << got;
  EXPECT_FALSE(gone(init0));
  EXPECT_FALSE(gone(cmd));
  kill(owner, SIGKILL);
  waitpid(owner, nullptr, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!(gone(init0) && gone(init1) && gone(cmd)) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone(init0)) << "host0's init (pid " << init0 << ") outlived its owner";
  EXPECT_TRUE(gone(init1)) << "host1's init (pid " << init1 << ") outlived its owner";
  EXPECT_TRUE(gone(cmd)) << "a command on host1 (pid " << cmd << ") outlived its owner";
}

TEST(VirtualHosts, CommandsEndAtTheirDeadline) {
  C10D_SKIP_WITHOUT_NETNS();
  VirtualHosts hosts(1);
  HostCommand c;
  c.argv = {"/bin/sh", "-c", "echo started; exec sleep 100"};
  c.tag = "sleeper";
  const auto start = std::chrono::steady_clock::now();
  auto r = hosts.runAll({c}, std::chrono::milliseconds(300));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(r[0].timedOut);
  EXPECT_LT(s, 5.0);
  EXPECT_EQ(r[0].output, "started\n");
  EXPECT_NE(r[0].describe().find("host0 sleeper: hung"), std::string::npos) << r[0].describe();
  HostCommand bad;
  bad.argv = {"/nonexistent/binary"};
  auto b = hosts.runAll({bad}, std::chrono::seconds(5));
  EXPECT_EQ(b[0].exitCode, 127) << b[0].describe();
  EXPECT_NE(b[0].output.find("cannot execute /nonexistent/binary"), std::string::npos)
      << b[0].output;
}

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
