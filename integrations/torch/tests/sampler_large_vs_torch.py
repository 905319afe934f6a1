"""DistributedSampler (c10d/layers/data) against torch at the dataset sizes where torch.randperm changes
form: n = (2^32 - 1) // 20 - 1 (the last n of the swap form) and from (2^32 - 1) // 20 on (the
inside-out form of torch >= 2.6; torch < 2.6 keeps swapping), every index of every rank compared.
The sampler follows the form of the torch that runs this (Options::randperm: 2.6 from torch 2.6
on, else 1.13), so torch 1.13 checks the swap form at every n and torch 2.6 the inside-out one.

torch's sampler turns the whole permutation into a Python list (~8 GB at these sizes), so the
reference here is what its __iter__ computes, on tensors: torch.randperm(n, generator=g) with
g.manual_seed(seed + epoch), padded or cut to total_size, strided by rank; that reference is first
checked against torch's own DistributedSampler on small cases.

  sampler_large_vs_torch.py --dump build/bin/sampler_dump      (~2 GB per process, minutes)
"""
import argparse
import math
import random
import subprocess
import sys
import time

import torch
from torch.utils.data.distributed import DistributedSampler

# torch's randperm_cpu: n < this draws 32 bits per swap; from here torch >= 2.6 builds the
# permutation inside out with 64-bit draws.
SWAP_FORM_END = (2**32 - 1) // 20

# (n, replicas, seed, epoch, drop_last); every rank of each. Shuffled: the point is the permutation.
LARGE_CASES = [
    (SWAP_FORM_END - 1, 2, 0, 0, False),         # last n of the swap form; one index of padding
    (SWAP_FORM_END, 2, 42, 1, False),            # first n of the inside-out form
    (SWAP_FORM_END + 1, 2, 2**32 + 7, 3, True),  # seed past 32 bits; drop_last cuts one
]


def randperm_form():
    """The sampler's Options::randperm for this torch (sampler_dump --randperm)."""
    major, minor = (int(x) for x in torch.__version__.split(".")[:2])
    return "2.6" if (major, minor) >= (2, 6) else "1.13"


def torch_perm(n, seed, epoch):
    g = torch.Generator()
    g.manual_seed(seed + epoch)
    return torch.randperm(n, generator=g)


def reference(perm, replicas, rank, drop_last):
    """torch's DistributedSampler.__iter__ after its randperm, on a tensor (a strided view)."""
    n = perm.numel()
    if drop_last and n % replicas != 0:
        num_samples = math.ceil((n - replicas) / replicas)
    else:
        num_samples = math.ceil(n / replicas)
    total = num_samples * replicas
    padding = total - n
    if drop_last:
        padded = perm[:total]
    elif padding == 0:
        padded = perm
    elif padding <= n:
        padded = torch.cat([perm, perm[:padding]])
    else:
        padded = torch.cat([perm, perm.repeat(math.ceil(padding / n))[:padding]])
    return padded[rank:total:replicas]


def check_reference():
    """The tensor form against torch's sampler itself, where the list form is cheap."""
    rng = random.Random(99)
    cases = [(1, 3), (2, 5), (10, 3), (10, 4), (17, 8)] + [
        (rng.randint(1, 500), rng.randint(1, 9)) for _ in range(30)]
    bad = 0
    for i, (n, replicas) in enumerate(cases):
        for drop_last in (False, True):
            seed, epoch = 7 * i, i % 3
            perm = torch_perm(n, seed, epoch)
            for rank in range(replicas):
                s = DistributedSampler(range(n), num_replicas=replicas, rank=rank, shuffle=True,
                                       seed=seed, drop_last=drop_last)
                s.set_epoch(epoch)
                if list(s) != reference(perm, replicas, rank, drop_last).tolist():
                    bad += 1
                    print("REFERENCE DIFFERS from torch's sampler: n=%d replicas=%d rank=%d "
                          "drop_last=%s" % (n, replicas, rank, drop_last))
    return bad


def read_exact(f, nbytes):
    buf = bytearray(nbytes)
    view = memoryview(buf)
    got = 0
    while got < nbytes:
        k = f.readinto(view[got:])
        if not k:
            raise RuntimeError("sampler_dump ended after %d of %d bytes" % (got, nbytes))
        got += k
    return buf


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True, help="the sampler_dump binary")
    args = ap.parse_args()
    torch.set_num_threads(1)
    bad = check_reference()
    stdin = "".join("%d %d %d %d %d 1 %d\n" % (n, replicas, rank, seed, epoch, int(drop_last))
                    for n, replicas, seed, epoch, drop_last in LARGE_CASES
                    for rank in range(replicas))
    # The dump computes its first permutation while torch computes its own.
    form = randperm_form()
    print("torch %s: the sampler follows torch %s's randperm" % (torch.__version__, form))
    dump = subprocess.Popen([args.dump, "--binary", "--randperm", form], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    dump.stdin.write(stdin.encode())
    dump.stdin.close()
    for n, replicas, seed, epoch, drop_last in LARGE_CASES:
        t0 = time.time()
        perm = torch_perm(n, seed, epoch)
        t_torch = time.time() - t0
        for rank in range(replicas):
            count = int.from_bytes(read_exact(dump.stdout, 8), sys.byteorder)
            ours = torch.frombuffer(read_exact(dump.stdout, 8 * count), dtype=torch.int64)
            want = reference(perm, replicas, rank, drop_last)
            same = ours.numel() == want.numel() and torch.equal(ours, want)
            print("n=%d replicas=%d rank=%d seed=%d epoch=%d drop_last=%s: %s (torch's randperm "
                  "%.1f s)" % (n, replicas, rank, seed, epoch, drop_last,
                               "same" if same else "MISMATCH", t_torch), flush=True)
            if not same:
                bad += 1
                if ours.numel() != want.numel():
                    print("  ours has %d indices, torch %d" % (ours.numel(), want.numel()))
                else:
                    first = int((ours != want).nonzero()[0])
                    print("  first difference at %d: ours %s, torch %s" % (
                        first, ours[first:first + 5].tolist(), want[first:first + 5].tolist()))
            del ours, want
        del perm
    rc = dump.wait()
    if rc != 0:
        print("sampler_dump exited with %d" % rc)
        bad += 1
    print("torch %s: %d large cases, %d mismatches" % (torch.__version__, len(LARGE_CASES), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
