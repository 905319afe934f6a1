"""ZeroRedundancyOptimizer over DDP: each rank keeps the Adam state of its shard of the parameters
and broadcasts its updated shard every step; after a few steps the optimizer state is consolidated
on rank 0 (consolidate_state_dict), saved, reloaded by every rank, and training continues.

  c10drun --nproc-per-node 2 /usr/bin/python3 train_zero.py --backend c10d --out c10d.json

Run with --backend gloo and --backend c10d: the per-step losses agree within fp32 tolerance."""
import argparse
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

import common


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    common.add_args(parser)
    parser.add_argument("--steps", type=int, default=16)
    args = parser.parse_args()
    common.init(args)
    rank, world = dist.get_rank(), dist.get_world_size()

    torch.manual_seed(args.seed)
    model = DDP(nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(),
                              nn.Linear(64, 8)))
    zero = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam, lr=1e-2)
    teacher = torch.randn(32, 8, generator=common.seeded(args.seed)) / 4  # a learnable target
    x = torch.randn(args.steps, 16, 32, generator=common.seeded(args.seed + 1 + rank))  # per rank
    target = torch.tanh(x @ teacher)
    ckpt = os.path.join(tempfile.gettempdir(), f"c10d_torch_zero_{os.environ['MASTER_PORT']}.pt")
    losses = []
    for step in range(args.steps):
        zero.zero_grad()
        loss = nn.functional.mse_loss(model(x[step]), target[step])
        loss.backward()
        zero.step()
        logged = loss.detach().clone()
        dist.all_reduce(logged)
        losses.append(logged.item() / world)
        if step == args.steps // 2:
            zero.consolidate_state_dict(to=0)
            if rank == 0:
                state = zero.state_dict()
                torch.save({"model": model.module.state_dict(), "zero": state}, ckpt)
            dist.barrier()
            saved = torch.load(ckpt, map_location="cpu")
            model.module.load_state_dict(saved["model"])
            zero.load_state_dict(saved["zero"])
            dist.barrier()
            if rank == 0:
                os.remove(ckpt)
    # Every rank ends with the same parameters (each shard was broadcast by its owner).
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    rows = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(rows, flat)
    assert all(torch.equal(rows[0], r) for r in rows), "ranks' parameters diverged"
    if rank == 0:
        print(f"{args.backend}: {len(losses)} steps, loss {losses[0]:.5f} -> {losses[-1]:.5f}")
    common.write_losses(args, losses)
    common.finish(reference=args.backend == "gloo")


if __name__ == "__main__":
    main()
