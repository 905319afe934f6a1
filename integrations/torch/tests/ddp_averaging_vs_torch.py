"""torch's DDP averages as the Reducer's kScaleThenSum does (layers/ddp/reducer.h): each gradient
times 1 / world size, rounded to the parameter's dtype, before the SUM allreduce. With only rank
0's gradient nonzero the sum adds exact zeros, so DDP's result must equal g0 * dtype(1 / ws) bit
for bit (and differs from g0 / ws in many elements at ws 3). The C++ side of the bargain is
ReducerTest.AveragesBitForBitAsTorch. Runs torch's gloo, world sizes 2-4, grads copied and as
bucket views, float32 and float64.
"""
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import common  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, ws, port, view, results):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=ws)
    bad = []
    for dtype in (torch.float32, torch.float64):
        torch.manual_seed(0)
        lin = torch.nn.Linear(1000, 1, bias=False).to(dtype)
        ddp = torch.nn.parallel.DistributedDataParallel(lin, gradient_as_bucket_view=view)
        gen = torch.Generator().manual_seed(1234)
        x = torch.randn(1, 1000, generator=gen, dtype=dtype) * torch.logspace(-3, 3, 1000,
                                                                             dtype=dtype)
        if rank != 0:
            x = torch.zeros_like(x)
        ddp(x).sum().backward()  # d/dw sum(w . x) = x
        got = lin.weight.grad.reshape(-1)
        g0 = (torch.randn(1, 1000, generator=torch.Generator().manual_seed(1234), dtype=dtype)
              * torch.logspace(-3, 3, 1000, dtype=dtype)).reshape(-1)
        scaled = g0 * torch.tensor(1.0 / ws, dtype=dtype)
        divided = g0 / ws
        if not torch.equal(got, scaled):
            bad.append("%s: %d of 1000 elements differ from g0 * (1/ws)"
                       % (dtype, int((got != scaled).sum())))
        if rank == 0:
            print("ws %d view %d %s: equal to g0 * (1/ws); %d elements differ from g0 / ws"
                  % (ws, view, dtype, int((got != divided).sum())), flush=True)
    results[rank] = "; ".join(bad)
    common.finish(reference=True)


def main():
    failures = 0
    for ws in (2, 3, 4):
        for view in (False, True):
            results = mp.Manager().dict()
            mp.spawn(worker, args=(ws, free_port(), view, results), nprocs=ws)
            for rank in range(ws):
                if results.get(rank):
                    failures += 1
                    print("ws %d view %d rank %d: %s" % (ws, view, rank, results[rank]))
    print("torch %s: %d failure(s)" % (torch.__version__, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
