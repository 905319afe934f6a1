"""norm::SyncBatchNorm (c10d/layers/norm) against torch's own module: torch.nn.BatchNorm1d over the
concatenated global batch, which is what SyncBatchNorm computes (torch's SyncBatchNorm itself
refuses CPU tensors). Each rank runs our layer on its share under c10drun
(tests/layers/sync_batch_norm_replay.cc), world sizes 2-4 with uneven shares (a rank with none
from 3 up); compared: the training forward, an evaluation forward between that forward and its
backward, the input gradient, the weight and bias gradients (summed over ranks), the running
statistics, and a last evaluation; with and without affine and tracked running statistics, and
inputs far from 0 (mean 1e4, variance 1; mean 3e7, standard deviation 30).

The criterion: torch in fp32 is the module under comparison and torch in fp64 (the same fp32
inputs) the truth. Our largest error against the truth must not exceed torch fp32's own (plus two
fp32 roundings of the value), quantity by quantity: "within torch's".

  sync_batch_norm_vs_torch.py --replay build/bin/sync_batch_norm_replay --c10drun build/bin/c10drun
"""
import argparse
import os
import subprocess
import sys
import tempfile

import torch

C, L, ITERS = 3, 5, 2
BATCHES = {2: [3, 5], 3: [3, 0, 5], 4: [3, 0, 5, 2]}


def cases():
    for affine in (1, 0):
        for track in (1, 0):
            yield "plain-a%d-t%d" % (affine, track), affine, track, 0.0, 1.0
    yield "far-1e4", 1, 1, 1e4, 1.0
    yield "far-3e7", 1, 1, 3e7, 30.0


def inputs(seed, center, spread, global_batch):
    """weight, bias, then per iteration x, dy, mid-evaluation x; then the last evaluation x."""
    gen = torch.Generator().manual_seed(seed)
    shape = (global_batch, C, L)
    offsets = torch.tensor([0.0, 3.0, -7.0]).reshape(1, C, 1)
    parts = [torch.rand(C, generator=gen) + 0.5, torch.rand(C, generator=gen) - 0.5]
    for _ in range(ITERS):
        parts.append(center + spread * (torch.randn(shape, generator=gen) * 2 + offsets))
        parts.append(torch.randn(shape, generator=gen))
        parts.append(center + spread * (torch.randn(shape, generator=gen) * 2 + offsets))
    parts.append(center + spread * (torch.randn(shape, generator=gen) * 2 + offsets))
    return [p.to(torch.float32) for p in parts]


def torch_run(parts, affine, track, dtype):
    """The same sequence on torch.nn.BatchNorm1d over the global batch, in `dtype`."""
    bn = torch.nn.BatchNorm1d(C, affine=bool(affine), track_running_stats=bool(track)).to(dtype)
    if affine:
        with torch.no_grad():
            bn.weight.copy_(parts[0])
            bn.bias.copy_(parts[1])
    out = {"y": [], "mid": [], "dx": []}
    k = 2
    for _ in range(ITERS):
        x = parts[k].detach().to(dtype).clone().requires_grad_(True)
        dy, mid = parts[k + 1].to(dtype), parts[k + 2].to(dtype)
        k += 3
        bn.train()
        y = bn(x)
        bn.eval()
        with torch.no_grad():
            ymid = bn(mid)
        y.backward(dy)
        out["y"].append(y.detach())
        out["mid"].append(ymid)
        out["dx"].append(x.grad)
    with torch.no_grad():
        out["last"] = bn(parts[k].to(dtype))
    # Untracked: torch has no running statistics, and ours stay at their initial 0 and 1 (unread).
    empty = torch.zeros(0, dtype=dtype)
    out["rmean"] = bn.running_mean if track else empty
    out["rvar"] = bn.running_var if track else empty
    out["wgrad"] = bn.weight.grad if affine else torch.zeros(C, dtype=dtype)
    out["bgrad"] = bn.bias.grad if affine else torch.zeros(C, dtype=dtype)
    return out


def ours_run(path, ws, batches, track):
    """Reassembles the per-rank files into the global tensors torch_run returns."""
    per_rank = []
    for rank in range(ws):
        with open("%s.ours.%d" % (path, rank), "rb") as f:
            per_rank.append(torch.frombuffer(bytearray(f.read()), dtype=torch.float32))
    out = {"y": [], "mid": [], "dx": []}
    pos = [0] * ws

    def take(rank, n):
        v = per_rank[rank][pos[rank]:pos[rank] + n]
        pos[rank] += n
        return v

    def batch():
        return torch.cat([take(r, batches[r] * C * L) for r in range(ws)]).reshape(-1, C, L)

    for _ in range(ITERS):
        for key in ("y", "mid", "dx"):
            out[key].append(batch())
    out["last"] = batch()
    for key in ("rmean", "rvar", "wgrad", "bgrad"):
        out[key] = take(0, C)
    if not track:
        out["rmean"] = out["rvar"] = torch.zeros(0)
    return out


def flat(v):
    return torch.cat([t.reshape(-1) for t in v]) if isinstance(v, list) else v.reshape(-1)


def compare(name, ours, t32, t64):
    """Our error against the fp64 truth never above torch fp32's own (plus 2 fp32 roundings)."""
    bad = []
    for key in ("y", "mid", "dx", "last", "rmean", "rvar", "wgrad", "bgrad"):
        o, a, truth = flat(ours[key]).double(), flat(t32[key]).double(), flat(t64[key])
        if o.numel() != truth.numel():
            bad.append("%s %s: %d values, torch %d" % (name, key, o.numel(), truth.numel()))
            continue
        if truth.numel() == 0:
            continue
        err_ours = float((o - truth).abs().max())
        err_torch = float((a - truth).abs().max())
        slack = 2 * 2.0 ** -24 * float(truth.abs().max())
        if not err_ours <= err_torch + slack:
            bad.append("%s %s: our error %.3g > torch fp32's %.3g (+ %.3g)"
                       % (name, key, err_ours, err_torch, slack))
        if name.startswith("far") or key == "y":
            print("  %s %s: error vs fp64 ours %.3g, torch fp32 %.3g" % (name, key, err_ours, err_torch))
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--replay", required=True, help="the sync_batch_norm_replay binary")
    ap.add_argument("--c10drun", required=True, help="the c10drun binary")
    args = ap.parse_args()
    bad = []
    for ws, batches in BATCHES.items():
        with tempfile.TemporaryDirectory(prefix="syncbn-vs-torch-") as d:
            all_parts = {}
            with open(os.path.join(d, "cases"), "w") as f:
                for seed, (name, affine, track, center, spread) in enumerate(cases()):
                    parts = inputs(seed, center, spread, sum(batches))
                    all_parts[name] = parts
                    f.write("%s %d %d %d %d %d %s\n" % (name, affine, track, C, L, ITERS,
                                                       ",".join(map(str, batches))))
                    with open(os.path.join(d, name + ".in"), "wb") as g:
                        g.write(b"".join(p.contiguous().numpy().tobytes() for p in parts))
            subprocess.run([args.c10drun, "--nproc-per-node", str(ws), args.replay, d], check=True)
            print("ws %d, batches %s:" % (ws, batches))
            for name, affine, track, _, _ in cases():
                parts = all_parts[name]
                ours = ours_run(os.path.join(d, name), ws, batches, track)
                bad += compare(name, ours, torch_run(parts, affine, track, torch.float32),
                               torch_run(parts, affine, track, torch.float64))
    for line in bad:
        print(line)
    print("torch %s: %d failure(s)" % (torch.__version__, len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
