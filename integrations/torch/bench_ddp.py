"""DDP step time of one model on torch's gloo and on our backend, side by side in one run.

Both groups live in the same processes (the default group is torch's gloo, the second ours), so
the two columns see the same machine at the same time; the model, data and step are identical. A
step is forward + backward (DDP's bucketed gradient allreduce) + SGD update; the median and the
mean of --steps timed steps after --warmup are reported, rank 0 prints a Markdown table.

  c10drun --nproc-per-node 2 /usr/bin/python3 bench_ddp.py [--engine gloo] [--width 1024]"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import c10d_torch


def make_model(width, depth):
    layers = [nn.Linear(256, width), nn.ReLU()]
    for _ in range(depth - 1):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 10))


def time_steps(group, args, x, y):
    torch.manual_seed(0)
    model = DDP(make_model(args.width, args.depth), process_group=group,
                bucket_cap_mb=args.bucket_mb)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    times = []
    for step in range(args.warmup + args.steps):
        dist.barrier(group=group)
        start = time.perf_counter()
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        elapsed = time.perf_counter() - start
        if step >= args.warmup:
            times.append(elapsed)
    # The slowest rank's time per step is the step time.
    t = torch.tensor(times, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)
    params = sum(p.numel() for p in model.parameters())
    return t.tolist(), params


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", default=None, help="c10d engine (verbs default, gloo)")
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--bucket-mb", type=float, default=25)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    if args.engine:
        c10d_torch.set_engine(args.engine)
    dist.init_process_group("gloo")
    ours = dist.new_group(backend="c10d")
    rank, world = dist.get_rank(), dist.get_world_size()
    g = torch.Generator().manual_seed(rank)
    x, y = torch.randn(args.batch, 256, generator=g), torch.randint(0, 10, (args.batch,),
                                                                    generator=g)
    rows = []
    # Alternate the two, twice, so that neither always runs on a warmer (or busier) machine.
    results = {"torch gloo": [], f"c10d ({c10d_torch.engine()})": []}
    for _ in range(2):
        for name, group in zip(results, (dist.group.WORLD, ours)):
            times, params = time_steps(group, args, x, y)
            results[name] += times
    if rank == 0:
        print(f"DDP step time, {params / 1e6:.2f} M parameters ({4 * params / 2**20:.1f} MiB of "
              f"fp32 gradients), batch {args.batch}/rank, {world} ranks, "
              f"{2 * args.steps} timed steps each")
        print("| backend | median ms/step | mean ms/step |")
        print("|---|---:|---:|")
        for name, times in results.items():
            rows.append((name, 1e3 * statistics.median(times), 1e3 * statistics.mean(times)))
            print(f"| {name} | {rows[-1][1]:.2f} | {rows[-1][2]:.2f} |")
    dist.destroy_process_group(ours)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
