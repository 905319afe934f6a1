// Where this process sits in a job, from the variables its launcher set: one implementation for
// init() (env://) and the perf binaries.
//
// Launchers, in order of precedence (the first whose rank and size variables are both set wins):
//   torchrun / c10drun  RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE
//   mpirun (Open MPI)   OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE
//   srun (Slurm)        SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID (SLURM_NTASKS when SLURM_NNODES
//                       is 1 as the local size)
// Open MPI comes before Slurm because mpirun inside a Slurm allocation sets both.
//
// Rank 0's TCPStore (MASTER_ADDR / MASTER_PORT): the variables when set. Else, under srun, the
// first host of the step's node list (SLURM_STEP_NODELIST, SLURM_JOB_NODELIST, SLURM_NODELIST:
// rank 0 runs there with Slurm's default block distribution); under mpirun on one host (local
// size == size), 127.0.0.1; otherwise unknown (masterAddr empty: init() names the variable to
// set). The port defaults to kDefaultMasterPort (torchrun's) for mpirun and srun.
//
// Pure functions of the environment; a malformed variable is an InvalidArgument naming it. That
// the rank is below the world size is left to the caller (init() names the URL).
#pragma once

#include <string>
#include <vector>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

constexpr int kDefaultMasterPort = 29500;

struct LaunchEnv {
  std::string launcher;  // "env" (torchrun, c10drun), "mpirun", "srun"; "" = none found
  int rank = -1;
  int worldSize = -1;
  int localRank = 0;
  int localWorldSize = -1;   // -1 = unknown
  std::string masterAddr;    // "" = unknown
  int masterPort = -1;       // -1 = unknown
  std::string masterSource;  // where masterAddr came from, for messages ("MASTER_ADDR", ...)
  // The rank variable's name of the chosen launcher ("RANK", "OMPI_COMM_WORLD_RANK", ...).
  std::string rankVar;
  std::string sizeVar;
};

// Reads the variables above.
LaunchEnv detectLaunchEnv();

// Expands a Slurm host list ("node[01-03,07],login-[1-2]b,other") into host names, in order:
// each bracket holds comma-separated numbers or lo-hi ranges whose zero padding is kept (the
// width of lo); several brackets in one name multiply out. Throws InvalidArgument naming the
// list and the problem (unbalanced bracket, empty range, hi < lo, non-digits, too many hosts).
std::vector<std::string> expandSlurmNodelist(const std::string& list);

C10D_NAMESPACE_END
}  // namespace c10d
