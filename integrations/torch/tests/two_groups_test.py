"""Symbol safety end to end: libtorch and libc10d both define C++ names in namespace c10d, and both
are loaded in this process. Our backend is the default group (rendezvous through torch's Store by
--init env|tcp|file), torch's own gloo a second group over the same ranks; async ops interleaved on
both must each give the right answer, and DDP on each must agree.

  c10drun --nproc-per-node 2 /usr/bin/python3 two_groups_test.py --init tcp"""
import argparse
import faulthandler
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import common  # noqa: E402

import c10d_torch  # noqa: E402


def loaded_libraries():
    with open("/proc/self/maps") as f:
        return {os.path.basename(line.split()[-1]) for line in f if ".so" in line}


def main():
    # A hang prints every thread's Python stack and exits, rather than waiting for ctest's kill.
    faulthandler.dump_traceback_later(90, exit=True)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    common.add_args(parser)
    args = parser.parse_args()
    args.backend = "c10d"
    common.init(args)
    rank, w = dist.get_rank(), dist.get_world_size()
    libs = loaded_libraries()
    assert any(l.startswith("libtorch_cpu") for l in libs), sorted(libs)
    assert any(l.startswith("libc10d.so") for l in libs), sorted(libs)
    assert dist.get_backend() == "c10d", dist.get_backend()
    gloo = dist.new_group(backend="gloo")

    # Interleaved, all in flight at once: ours, torch's, ours, torch's.
    tensors, works = [], []
    for i in range(8):
        t = torch.full((1000,), float(rank + 1 + i))
        grp = None if i % 2 == 0 else gloo
        works.append(dist.all_reduce(t, group=grp, async_op=True))
        tensors.append(t)
    for i, (t, work) in enumerate(zip(tensors, works)):
        work.wait()
        want = float(sum(r + 1 + i for r in range(w)))
        assert torch.equal(t, torch.full((1000,), want)), f"op {i}: {t[:4]} != {want}"

    # The same DDP step on each group gives the same parameters.
    results = []
    for grp in (None, gloo):
        torch.manual_seed(args.seed)
        model = DDP(nn.Linear(8, 4), process_group=grp)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x = torch.randn(16, 8, generator=common.seeded(args.seed + rank))
        model(x).square().sum().backward()
        opt.step()
        results.append(torch.cat([p.detach().reshape(-1) for p in model.parameters()]))
    assert torch.allclose(results[0], results[1], rtol=1e-6, atol=1e-7), (results[0] -
                                                                         results[1]).abs().max()
    dist.barrier(group=gloo)
    dist.barrier()
    if rank == 0:
        print(f"two_groups_test ({args.init}://): c10d and torch gloo groups in one process agree "
              f"(libc10d {c10d_torch.library_path()})")
    # A pending op whose tensor only the op still references (its Python object is gone, so torch
    # hands the object's ownership to the tensor): destroying the group fails the op, and dropping
    # that tensor on an engine thread takes the GIL, which the destroying thread must not hold.
    ours = dist.distributed_c10d._get_default_group()
    ours.recv([torch.zeros(1000)], (rank + 1) % w, 4242)
    del ours
    common.finish(reference=True)  # destroys ours; torch's gloo group is left to the exit


if __name__ == "__main__":
    main()
