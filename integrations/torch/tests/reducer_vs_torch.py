"""The DDP Reducer (c10d/layers/ddp) against torch's DistributedDataParallel itself, byte for byte: the
averaged gradient after each of several steps, world sizes 2-4, float32 and float64, gradients
copied into buckets and as bucket views (zero_grad in place, and set_to_none), with and without
gradient accumulation (no_sync). torch averages a gradient it copies into its bucket by
multiplying by 1 / world size, and one that already is its bucket view by dividing in place; the
two differ in the last bit for many elements, so three steps and every mode are needed to see
both. torch runs on its own gloo; the Reducer under c10drun on our default backend
(tests/layers/reducer_replay.cc), from the same gradients. At world size 2 every rank's gradient
is nonzero (a sum of two is the same in any order); at 3 and 4 only rank 0's, so the result does
not depend on the order either allreduce sums in.

  reducer_vs_torch.py --replay build/bin/reducer_replay --c10drun build/bin/c10drun
"""
import argparse
import os
import socket
import subprocess
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import common  # noqa: E402

N = 1000
STEPS = 3
DTYPES = {"f32": torch.float32, "f64": torch.float64}
MODES = ("copy", "view-inplace", "view-none")


def cases():
    for dt in DTYPES:
        for mode in MODES:
            for micro in (1, 2):
                yield "%s-%s-%d" % (dt, mode, micro), dt, mode, micro


def gradients(ws, dt, seed):
    """[rank][step][micro][N]: values spread over six decades, so that x * (1/ws) and x / ws
    differ in many elements."""
    gen = torch.Generator().manual_seed(seed)
    g = torch.randn(ws, STEPS, 2, N, generator=gen, dtype=torch.float64)
    g = (g * torch.logspace(-3, 3, N, dtype=torch.float64)).to(DTYPES[dt])
    if ws > 2:
        g[1:] = 0
    return g


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torch_worker(rank, ws, port, d):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=ws)
    for seed, (name, dt, mode, micro) in enumerate(cases()):
        g = gradients(ws, dt, seed)[rank]
        lin = torch.nn.Linear(N, 1, bias=False).to(DTYPES[dt])
        ddp = torch.nn.parallel.DistributedDataParallel(
            lin, gradient_as_bucket_view=(mode != "copy"))
        out = []
        for step in range(STEPS):
            # copy: in place, as view-inplace (the grad is never the bucket there anyway).
            ddp.zero_grad(set_to_none=(mode == "view-none"))
            for m in range(micro):
                x = g[step, m].reshape(1, N)  # d/dw sum(w . x) = x exactly
                if m + 1 < micro:
                    with ddp.no_sync():
                        ddp(x).sum().backward()
                else:
                    ddp(x).sum().backward()
            out.append(lin.weight.grad.detach().reshape(-1).clone())
        with open(os.path.join(d, "%s.torch.%d" % (name, rank)), "wb") as f:
            f.write(torch.stack(out).numpy().tobytes())
    common.finish(reference=True)


def run_world(ws, args):
    with tempfile.TemporaryDirectory(prefix="reducer-vs-torch-") as d:
        with open(os.path.join(d, "cases"), "w") as f:
            for seed, (name, dt, mode, micro) in enumerate(cases()):
                f.write("%s %s %s %d %d %d\n" % (name, dt, mode, micro, STEPS, N))
                g = gradients(ws, dt, seed)[:, :, :micro, :].contiguous()
                with open(os.path.join(d, name + ".in"), "wb") as gf:
                    gf.write(g.numpy().tobytes())
        mp.spawn(torch_worker, args=(ws, free_port(), d), nprocs=ws)
        subprocess.run([args.c10drun, "--nproc-per-node", str(ws), args.replay, d], check=True)
        bad = 0
        for name, dt, mode, micro in cases():
            for rank in range(ws):
                base = os.path.join(d, "%s.%%s.%d" % (name, rank))
                with open(base % "torch", "rb") as f:
                    want = f.read()
                with open(base % "ours", "rb") as f:
                    got = f.read()
                if got == want:
                    continue
                bad += 1
                t = DTYPES[dt]
                w = torch.frombuffer(bytearray(want), dtype=t).reshape(STEPS, N)
                o = torch.frombuffer(bytearray(got), dtype=t).reshape(-1, N)
                steps = [s for s in range(min(len(o), STEPS)) if not torch.equal(o[s], w[s])]
                print("ws %d %s rank %d: steps %s differ (%s elements at the first)"
                      % (ws, name, rank, [s + 1 for s in steps],
                         int((o[steps[0]] != w[steps[0]]).sum()) if steps else "all"))
        # The data must tell the two averagings apart, or the comparison above proves nothing:
        # torch's step 2 in view-inplace (a division) against the same gradient multiplied.
        if ws == 3:
            g0 = gradients(ws, "f32", [c[0] for c in cases()].index("f32-view-inplace-1"))[0, 1, 0]
            with open(os.path.join(d, "f32-view-inplace-1.torch.0"), "rb") as f:
                step2 = torch.frombuffer(bytearray(f.read()), dtype=torch.float32).reshape(STEPS, N)[1]
            differ = int((step2 != g0 * torch.tensor(1.0 / ws, dtype=torch.float32)).sum())
            print("ws 3: torch's view-mode step 2 differs from g * (1/3) in %d of %d elements"
                  % (differ, N))
            if differ == 0:
                print("ws 3: the gradients do not tell a multiply from a divide")
                bad += 1
        return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--replay", required=True, help="the reducer_replay binary")
    ap.add_argument("--c10drun", required=True, help="the c10drun binary")
    args = ap.parse_args()
    failures = 0
    for ws in (2, 3, 4):
        bad = run_world(ws, args)
        print("ws %d: %d case(s) x %d rank(s), %d mismatch(es)"
              % (ws, len(list(cases())), ws, bad), flush=True)
        failures += bad
    print("torch %s: %d mismatch(es)" % (torch.__version__, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
