"""DDP step time of one model on torch's gloo and on our backend, side by side in one run.

Both groups live in the same processes (the default group is torch's gloo, the second ours), so
the columns see the same machine at the same time; the model, data and step are identical. A
step is forward + backward (DDP's bucketed gradient allreduce) + SGD update.

Beside them, in the same processes: `compute` is the same step without DDP (every rank computing
at once, so it sees the contention the DDP steps see), and each backend's allreduce of one flat
buffer of the gradients' bytes. Each of the --warmup + --steps iterations runs every one of these
once, in an order that rotates with the iteration, after a barrier; a step's time is the slowest
rank's; rank 0 prints the median and mean of the timed ones as a Markdown table. `exposed` = a
backend's median step - compute's: the communication backward did not hide; `exposed /
allreduce` is 1 when the step exposes exactly one allreduce of its gradients, 0 when overlap
hides it all.

  c10drun --nproc-per-node 2 /usr/bin/python3 bench_ddp.py [--engine gloo] [--width 1024]"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import c10d_torch
import common


def make_model(width, depth):
    layers = [nn.Linear(256, width), nn.ReLU()]
    for _ in range(depth - 1):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 10))


def step_fn(group, args, x, y, ddp):
    """One training step of a fresh model (DDP over `group` if ddp), as a closure."""
    torch.manual_seed(0)
    model = make_model(args.width, args.depth)
    if ddp:
        model = DDP(model, process_group=group, bucket_cap_mb=args.bucket_mb,
                    gradient_as_bucket_view=args.view)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    return step, sum(p.numel() for p in model.parameters())


def allreduce_fn(group, numel):
    buf = torch.ones(numel)
    return lambda: dist.all_reduce(buf, group=group)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", default=None, help="c10d engine (verbs default, gloo)")
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--bucket-mb", type=float, default=25)
    parser.add_argument("--view", action="store_true",
                        help="gradient_as_bucket_view=True (no copies into and out of buckets)")
    parser.add_argument("--steps", type=int, default=40)
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
    names = ["torch gloo", f"c10d ({c10d_torch.engine()})"]
    groups = (dist.group.WORLD, ours)
    compute, params = step_fn(None, args, x, y, ddp=False)
    runs = {"compute (no DDP)": compute}
    for name, group in zip(names, groups):
        runs[name] = step_fn(group, args, x, y, ddp=True)[0]
        runs[f"allreduce {name}"] = allreduce_fn(group, params)
    keys = list(runs)
    times = {k: [] for k in keys}
    for it in range(args.warmup + args.steps):
        for j in range(len(keys)):
            key = keys[(it + j) % len(keys)]
            dist.barrier()
            start = time.perf_counter()
            runs[key]()
            if it >= args.warmup:
                times[key].append(time.perf_counter() - start)
    # The slowest rank's time per step is the step time.
    for key in keys:
        t = torch.tensor(times[key], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        times[key] = t.tolist()
    if rank == 0:
        print(f"DDP step time, {params / 1e6:.2f} M parameters ({4 * params / 2**20:.1f} MiB of "
              f"fp32 gradients), batch {args.batch}/rank, {world} ranks, "
              f"{args.steps} timed steps each, interleaved")
        print("| backend | median ms/step | mean ms/step | exposed ms | allreduce ms | "
              "exposed / allreduce |")
        print("|---|---:|---:|---:|---:|---:|")
        floor = 1e3 * statistics.median(times["compute (no DDP)"])
        for key in ["compute (no DDP)"] + names:
            med, mean = 1e3 * statistics.median(times[key]), 1e3 * statistics.mean(times[key])
            if key not in names:
                print(f"| {key} | {med:.2f} | {mean:.2f} | | | |")
                continue
            ar = 1e3 * statistics.median(times[f"allreduce {key}"])
            print(f"| {key} | {med:.2f} | {mean:.2f} | {med - floor:.2f} | {ar:.2f} | "
                  f"{(med - floor) / ar:.2f} |")
    common.finish(ours, reference=True)


if __name__ == "__main__":
    main()
