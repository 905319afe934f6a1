"""DDP training of a small MLP on synthetic data, the seed workflow of a torch user:

  - DistributedSampler over a seeded synthetic data set, set_epoch() every epoch;
  - a batch-norm layer whose statistics are exchanged across ranks as SyncBatchNorm does (torch 1.13
    refuses SyncBatchNorm on CPU): all_gather of each rank's (mean, var, count), combined into the
    global batch statistics, with an autograd backward that all-reduces the statistics' gradients;
  - no_sync() gradient accumulation (two micro-batches per step, the first under no_sync);
  - the loss averaged across ranks for logging (all_reduce / world size);
  - a checkpoint saved by rank 0 after the first epoch and loaded by every rank.

  c10drun --nproc-per-node 2 /usr/bin/python3 train_ddp.py --backend c10d --out c10d.json

Run once with --backend gloo and once with --backend c10d: the per-step losses agree within fp32
tolerance (tests/compare_runs.py checks it)."""
import argparse
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import common


class _GatherStats(torch.autograd.Function):
    """all_gather of this rank's statistics row; backward: the sum over ranks of the gradient of
    every rank's loss with respect to our row (an all_reduce, then our slice), as SyncBN's is."""

    @staticmethod
    def forward(ctx, stats):
        rows = [torch.empty_like(stats) for _ in range(dist.get_world_size())]
        dist.all_gather(rows, stats.contiguous())
        return torch.stack(rows)

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous()
        dist.all_reduce(grad)
        return grad[dist.get_rank()]


class CrossRankBatchNorm(nn.Module):
    """BatchNorm1d over the global batch (every rank's), combined as SyncBatchNorm does."""

    def __init__(self, features: int, momentum: float = 0.1, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))
        self.register_buffer("running_mean", torch.zeros(features))
        self.register_buffer("running_var", torch.ones(features))
        self.momentum, self.eps = momentum, eps

    def forward(self, x):
        if not self.training:
            mean, var = self.running_mean, self.running_var
        else:
            count = torch.full((1,), float(x.shape[0]))
            stats = torch.cat([x.mean(0), x.var(0, unbiased=False), count])
            rows = _GatherStats.apply(stats)
            f = x.shape[1]
            means, vars_, counts = rows[:, :f], rows[:, f:2 * f], rows[:, 2 * f:]
            total = counts.sum()
            mean = (means * counts).sum(0) / total
            var = ((vars_ + means * means) * counts).sum(0) / total - mean * mean
            with torch.no_grad():
                unbiased = var * total / (total - 1)
                self.running_mean.mul_(1 - self.momentum).add_(self.momentum * mean)
                self.running_var.mul_(1 - self.momentum).add_(self.momentum * unbiased)
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias


def make_model() -> nn.Module:
    return nn.Sequential(nn.Linear(16, 64), CrossRankBatchNorm(64), nn.ReLU(),
                         nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4))


def make_data(seed: int, n: int = 512):
    g = common.seeded(seed)
    x = torch.randn(n, 16, generator=g)
    teacher = torch.randn(16, 4, generator=g)
    y = (x @ teacher + 0.1 * torch.randn(n, 4, generator=g)).argmax(1)
    return TensorDataset(x, y)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    common.add_args(parser)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=16, help="micro-batch per rank")
    args = parser.parse_args()
    common.init(args)
    rank, world = dist.get_rank(), dist.get_world_size()

    torch.manual_seed(args.seed)  # the same initial weights everywhere (DDP broadcasts anyway)
    model = DDP(make_model(), bucket_cap_mb=0.01)  # several buckets
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    data = make_data(args.seed)
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=args.seed)
    loader = DataLoader(data, batch_size=args.batch, sampler=sampler, drop_last=True)
    loss_fn = nn.CrossEntropyLoss()

    ckpt = os.path.join(tempfile.gettempdir(), f"c10d_torch_ddp_{os.environ['MASTER_PORT']}.pt")
    losses = []
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        batches = iter(loader)
        for first, second in zip(batches, batches):  # two micro-batches per optimizer step
            opt.zero_grad()
            with model.no_sync():  # accumulate locally, no gradient allreduce
                loss_a = loss_fn(model(first[0]), first[1])
                (loss_a / 2).backward()
            loss_b = loss_fn(model(second[0]), second[1])
            (loss_b / 2).backward()  # allreduces the accumulated gradients
            opt.step()
            logged = ((loss_a + loss_b) / 2).detach().clone()
            dist.all_reduce(logged)
            losses.append(logged.item() / world)
        if epoch == 0:
            if rank == 0:
                torch.save({"model": model.module.state_dict(), "opt": opt.state_dict()}, ckpt)
            dist.barrier()
            state = torch.load(ckpt, map_location="cpu")
            for name, value in model.module.state_dict().items():
                assert torch.equal(value, state["model"][name]), f"checkpoint differs at {name}"
            model.module.load_state_dict(state["model"])
            opt.load_state_dict(state["opt"])
            dist.barrier()
            if rank == 0:
                os.remove(ckpt)
    if rank == 0:
        print(f"{args.backend}: {len(losses)} steps, loss {losses[0]:.5f} -> {losses[-1]:.5f}")
    common.write_losses(args, losses)
    common.finish(reference=args.backend == "gloo")


if __name__ == "__main__":
    main()
