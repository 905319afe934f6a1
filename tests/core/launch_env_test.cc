// Tests for c10d/base/launch_env.h: the Slurm node list parser, which launcher's variables win,
// where rank 0's store is said to be, and init() (env://) over Open MPI's and Slurm's variables
// with 3 real processes.
#include "c10d/base/launch_env.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/bootstrap/init.h"
#include "c10d/store/store.h"
#include "tests/common/multiproc.h"
#include "tests/core/fake_backend.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace {

using std::chrono::milliseconds;
using Hosts = std::vector<std::string>;

// Every variable detectLaunchEnv reads, unset for the scope (restored after), so that the
// environment ctest runs in cannot leak into a case.
class CleanLaunchEnv {
 public:
  CleanLaunchEnv() {
    for (const char* name :
         {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
          "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
          "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
          "SLURM_NNODES", "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
      const char* v = std::getenv(name);
      saved_.emplace_back(name, v != nullptr ? std::string(v) : std::string("\x01"));
      unsetenv(name);
    }
  }
  ~CleanLaunchEnv() {
    for (const auto& [name, value] : saved_) {
      if (value == "\x01") {
        unsetenv(name.c_str());
      } else {
        setenv(name.c_str(), value.c_str(), 1);
      }
    }
  }

 private:
  std::vector<std::pair<std::string, std::string>> saved_;
};

void expectBadList(const std::string& list, const std::string& problem) {
  try {
    expandSlurmNodelist(list);
    ADD_FAILURE() << "expected InvalidArgument for " << list;
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'" + list + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(problem), std::string::npos) << "'" << problem << "' not in: " << msg;
  }
}

TEST(SlurmNodelist, Expands) {
  EXPECT_EQ(expandSlurmNodelist("node1"), (Hosts{"node1"}));
  EXPECT_EQ(expandSlurmNodelist("node[01-03,07],other"),
            (Hosts{"node01", "node02", "node03", "node07", "other"}));
  EXPECT_EQ(expandSlurmNodelist("a,b[9-11],c"), (Hosts{"a", "b9", "b10", "b11", "c"}));
  // The padding of the low end is kept, also past a power of ten.
  EXPECT_EQ(expandSlurmNodelist("n[098-101]"), (Hosts{"n098", "n099", "n100", "n101"}));
  // A suffix after the bracket, and two brackets multiplying out.
  EXPECT_EQ(expandSlurmNodelist("login-[1-2]b"), (Hosts{"login-1b", "login-2b"}));
  EXPECT_EQ(expandSlurmNodelist("r[1-2]n[3,5]"), (Hosts{"r1n3", "r1n5", "r2n3", "r2n5"}));
  EXPECT_EQ(expandSlurmNodelist("gpu[7]"), (Hosts{"gpu7"}));
  EXPECT_EQ(expandSlurmNodelist("10.0.0.[1-2]"), (Hosts{"10.0.0.1", "10.0.0.2"}));
}

TEST(SlurmNodelist, RejectsMalformed) {
  expectBadList("", "empty host name");
  expectBadList("a,,b", "empty host name");
  expectBadList("node[01-03", "'[' without ']'");
  expectBadList("node01]", "']' without '['");
  expectBadList("node[[1]]", "nested '['");
  expectBadList("node[]", "not a number");
  expectBadList("node[3-1]", "ends before it starts");
  expectBadList("node[a-b]", "not a number");
  expectBadList("node[1-]", "not a number");
  expectBadList("node[1-100000000]", "too long");
  expectBadList("a b", "whitespace");
}

TEST(LaunchEnv, NoneFound) {
  CleanLaunchEnv clean;
  const LaunchEnv env = detectLaunchEnv();
  EXPECT_EQ(env.launcher, "");
  EXPECT_EQ(env.masterAddr, "");
  EXPECT_EQ(env.masterPort, -1);
}

TEST(LaunchEnv, TorchrunWinsOverMpiAndSlurm) {
  CleanLaunchEnv clean;
  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "4", 1);
  setenv("LOCAL_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_RANK", "2", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
  setenv("SLURM_PROCID", "0", 1);
  setenv("SLURM_NTASKS", "1", 1);
  setenv("SLURM_NODELIST", "n[1-2]", 1);
  LaunchEnv env = detectLaunchEnv();
  EXPECT_EQ(env.launcher, "env");
  EXPECT_EQ(env.rank, 1);
  EXPECT_EQ(env.worldSize, 4);
  EXPECT_EQ(env.masterAddr, "");  // torchrun always sets MASTER_ADDR; no guessing
  unsetenv("RANK");
  env = detectLaunchEnv();  // RANK without WORLD_SIZE is not torchrun's: next in line
  EXPECT_EQ(env.launcher, "mpirun");
  EXPECT_EQ(env.rank, 2);
  EXPECT_EQ(env.worldSize, 3);
  EXPECT_EQ(env.rankVar, "OMPI_COMM_WORLD_RANK");
}

TEST(LaunchEnv, OpenMpi) {
  CleanLaunchEnv clean;
  setenv("OMPI_COMM_WORLD_RANK", "2", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "2", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "3", 1);
  LaunchEnv env = detectLaunchEnv();
  EXPECT_EQ(env.launcher, "mpirun");
  EXPECT_EQ(env.localRank, 2);
  EXPECT_EQ(env.localWorldSize, 3);
  EXPECT_EQ(env.masterAddr, "127.0.0.1");  // every rank on this host
  EXPECT_EQ(env.masterPort, kDefaultMasterPort);
  // Across hosts nothing names rank 0's host: init() asks for MASTER_ADDR.
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "1", 1);
  env = detectLaunchEnv();
  EXPECT_EQ(env.masterAddr, "");
  try {
    rendezvous("env://", -1, -1, milliseconds(100));
    ADD_FAILURE() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("-x MASTER_ADDR"), std::string::npos) << e.what();
  }
  setenv("MASTER_ADDR", "head", 1);
  setenv("MASTER_PORT", "1234", 1);
  env = detectLaunchEnv();
  EXPECT_EQ(env.masterAddr, "head");
  EXPECT_EQ(env.masterPort, 1234);
  setenv("OMPI_COMM_WORLD_RANK", "x", 1);
  EXPECT_THROW(detectLaunchEnv(), InvalidArgument);
}

TEST(LaunchEnv, Slurm) {
  CleanLaunchEnv clean;
  setenv("SLURM_PROCID", "5", 1);
  setenv("SLURM_NTASKS", "8", 1);
  setenv("SLURM_LOCALID", "1", 1);
  setenv("SLURM_NNODES", "4", 1);
  setenv("SLURM_NODELIST", "gpu[07-10]", 1);
  LaunchEnv env = detectLaunchEnv();
  EXPECT_EQ(env.launcher, "srun");
  EXPECT_EQ(env.rank, 5);
  EXPECT_EQ(env.worldSize, 8);
  EXPECT_EQ(env.localRank, 1);
  EXPECT_EQ(env.localWorldSize, -1);  // unknown across nodes
  EXPECT_EQ(env.masterAddr, "gpu07");
  EXPECT_EQ(env.masterPort, kDefaultMasterPort);
  // The step's list comes first (a step may run on part of the allocation).
  setenv("SLURM_STEP_NODELIST", "gpu[09-10]", 1);
  EXPECT_EQ(detectLaunchEnv().masterAddr, "gpu09");
  setenv("SLURM_NNODES", "1", 1);
  EXPECT_EQ(detectLaunchEnv().localWorldSize, 8);
  setenv("SLURM_STEP_NODELIST", "gpu[09-", 1);
  EXPECT_THROW(detectLaunchEnv(), InvalidArgument);
}

int freePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  close(fd);
  return ntohs(addr.sin_port);
}

// init("env://") in 3 processes given only a launcher's variables: each rank publishes its rank
// and reads the others', and the group has the rank and size the launcher gave.
void initThroughLauncherVariables(const std::function<void(int rank, int size)>& setVars) {
  CleanLaunchEnv clean;
  test::MultiProcOptions mo;
  mo.timeout = milliseconds(30000);
  test::expectAllRanksOk(
      3,
      [&](int rank, int size) {
        setVars(rank, size);
        test::registerFakeBackend();
        InitOptions io;
        io.backend = "fake";
        io.timeout = milliseconds(10000);
        auto pg = init(io);
        ASSERT_EQ(pg->rank(), rank);
        ASSERT_EQ(pg->size(), size);
        pg->store()->set("r" + std::to_string(rank), std::to_string(rank * 7));
        for (int r = 0; r < size; ++r) {
          EXPECT_EQ(pg->store()->getString("r" + std::to_string(r)), std::to_string(r * 7));
        }
        pg->store()->add("done", 1);
        if (rank == 0) {  // rank 0 hosts the store: the last to leave
          while (pg->store()->add("done", 0) < size) usleep(5000);
        }
      },
      mo);
}

TEST(LaunchEnv, InitFromOpenMpiVariables) {
  const std::string port = std::to_string(freePort());
  initThroughLauncherVariables([&](int rank, int size) {
    setenv("OMPI_COMM_WORLD_RANK", std::to_string(rank).c_str(), 1);
    setenv("OMPI_COMM_WORLD_SIZE", std::to_string(size).c_str(), 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(rank).c_str(), 1);
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", std::to_string(size).c_str(), 1);
    setenv("MASTER_PORT", port.c_str(), 1);  // the address: 127.0.0.1, all on one host
  });
}

TEST(LaunchEnv, InitFromSlurmVariables) {
  const std::string port = std::to_string(freePort());
  initThroughLauncherVariables([&](int rank, int size) {
    setenv("SLURM_PROCID", std::to_string(rank).c_str(), 1);
    setenv("SLURM_NTASKS", std::to_string(size).c_str(), 1);
    setenv("SLURM_LOCALID", std::to_string(rank).c_str(), 1);
    setenv("SLURM_NNODES", "1", 1);
    setenv("SLURM_JOB_NODELIST", "localhost,node[2-3]", 1);  // master: localhost
    setenv("MASTER_PORT", port.c_str(), 1);
  });
}

}  // namespace
C10D_NAMESPACE_END
}  // namespace c10d
