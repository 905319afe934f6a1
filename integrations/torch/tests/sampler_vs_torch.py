"""DistributedSampler (c10d/layers/data) against torch.utils.data.distributed.DistributedSampler: the
same indices, element for element, for every rank of many (n, replicas, seed, epoch, shuffle,
drop_last), edge cases included (empty, fewer samples than ranks, seeds past 32 bits).

  sampler_vs_torch.py --dump build/bin/sampler_dump
"""
import argparse
import random
import subprocess
import sys

import torch
from torch.utils.data.distributed import DistributedSampler


def cases():
    rng = random.Random(1234)
    fixed = [(0, 3), (1, 1), (2, 5), (3, 3), (10, 3), (10, 4), (17, 8), (100, 7), (1000, 1),
             (4096, 16), (12345, 6)]
    sizes = fixed + [(rng.randint(1, 3000), rng.randint(1, 9)) for _ in range(40)]
    seeds = [0, 1, 42, 2**31 - 1, 2**32 + 7, 2**63 + 5]
    for i, (n, replicas) in enumerate(sizes):
        for shuffle in (True, False):
            for drop_last in (False, True):
                seed = seeds[i % len(seeds)] if shuffle else 0
                for epoch in (0, 3):
                    for rank in range(replicas):
                        yield n, replicas, rank, seed, epoch, shuffle, drop_last


def torch_indices(n, replicas, rank, seed, epoch, shuffle, drop_last):
    s = DistributedSampler(range(n), num_replicas=replicas, rank=rank, shuffle=shuffle,
                           seed=seed, drop_last=drop_last)
    s.set_epoch(epoch)
    return list(s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True, help="the sampler_dump binary")
    args = ap.parse_args()
    all_cases = list(cases())
    stdin = "".join("%d %d %d %d %d %d %d\n" % (n, r, k, s, e, int(sh), int(d))
                    for n, r, k, s, e, sh, d in all_cases)
    out = subprocess.run([args.dump], input=stdin, stdout=subprocess.PIPE, text=True, check=True)
    lines = out.stdout.split("\n")
    bad = 0
    for case, line in zip(all_cases, lines):
        ours = [int(x) for x in line.split()]
        want = torch_indices(*case)
        if ours != want:
            bad += 1
            if bad <= 5:
                print("MISMATCH n=%d replicas=%d rank=%d seed=%d epoch=%d shuffle=%s "
                      "drop_last=%s:\n  ours  %s\n  torch %s" % (case + (ours[:12], want[:12])))
    if len(lines) < len(all_cases):
        print("sampler_dump answered %d of %d cases" % (len(lines), len(all_cases)))
        bad += 1
    print("torch %s: %d cases, %d mismatches" % (torch.__version__, len(all_cases), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
