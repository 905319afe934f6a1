"""Non-contiguous tensors, all_gather_coalesced, and the ProcessGroup methods left to torch.

Every op that takes tensors runs on our group with transposed and sliced (strided) inputs and
outputs, and each result is compared with a reference this rank computes from every rank's inputs;
torch's gloo runs the same call where it gets it right in torch 1.13 and must agree too: on
transposed tensors (non-contiguous but dense) for broadcast, all_reduce(_coalesced), reduce,
all_gather(_coalesced) and scatter. (torch 1.13's gloo gives wrong results for sliced tensors,
which have gaps, and for gather and all_to_all_single outputs, whose elements it takes in storage
order; it refuses non-contiguous send/recv.) all_gather_coalesced (contiguous and not) is
compared with gloo's. Then: a Future's value and then() see the copied-back output; an expanded
output is refused by name; monitored_barrier works through the group; sequence numbers are refused
with torch's message.

  c10drun --nproc-per-node 2 /usr/bin/python3 noncontiguous_test.py"""
import collections
import datetime
import faulthandler
import os
import sys

import torch
import torch.distributed as dist

import c10d_torch  # noqa: F401 - registers backend "c10d"

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import common  # noqa: E402

ROWS, COLS = 3, 5
DTYPES = [torch.float32, torch.int64, torch.float16]
KINDS = ["transposed", "sliced"]
counts = collections.Counter()


def values(rank, salt, dtype, rows=ROWS, cols=COLS):
    """Rank's values for (op, salt): small integers, exact in every dtype and summation order."""
    v = (torch.arange(rows * cols) * 7 + rank * 5 + salt * 3) % 5 + 1
    return v.reshape(rows, cols).to(dtype)


def strided(v, kind):
    """A non-contiguous tensor holding v's values (2-D)."""
    rows, cols = v.shape
    if kind == "transposed":
        t = torch.empty(cols, rows, dtype=v.dtype).t()
    else:
        t = torch.empty(rows, 2 * cols + 1, dtype=v.dtype)[:, 1::2]
    t.copy_(v)
    assert not t.is_contiguous() and torch.equal(t, v)
    return t


def empty_like_strided(v, kind):
    return strided(torch.zeros_like(v), kind)


def check(name, got, want):
    rank = dist.get_rank()
    assert len(got) == len(want), f"rank {rank}: {name}: {len(got)} results, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if g.dtype != w.dtype or g.shape != w.shape or not torch.equal(g, w):
            raise AssertionError(f"rank {rank}: {name}: result[{i}] {g.flatten().tolist()[:10]} "
                                 f"!= expected {w.flatten().tolist()[:10]}")
    counts[name.split(" ")[0]] += 1


def run(name, fn, want, ours, gloo, gloo_ok=True):
    """fn(group) -> list of result tensors, on ours and (when gloo_ok) on gloo."""
    check(name, fn(ours), want)
    if gloo_ok:
        check(name + " (torch gloo)", fn(gloo), want)


def run_case(dtype, kind, ours, gloo):
    rank, w = dist.get_rank(), dist.get_world_size()
    root = w - 1
    floating = dtype.is_floating_point

    def v(salt, r=rank, **kw):
        return values(r, salt, dtype, **kw)

    def allv(salt, **kw):
        return [values(r, salt, dtype, **kw) for r in range(w)]

    def total(ts):
        out = ts[0].clone()
        for t in ts[1:]:
            out += t
        return out

    tag = f"{dtype} {kind}"
    dense = kind == "transposed"  # what torch 1.13's gloo gets right

    def bcast(g):
        t = strided(v(1), kind)
        dist.broadcast(t, src=root, group=g)
        return [t]
    run(f"broadcast {tag}", bcast, [v(1, root)], ours, gloo, dense)

    def allreduce(g):
        t = strided(v(2), kind)
        dist.all_reduce(t, group=g)
        return [t]
    run(f"all_reduce {tag}", allreduce, [total(allv(2))], ours, gloo, dense)

    def allreduce_coalesced(g):
        ts = [strided(v(3), kind), torch.ones(4, dtype=dtype), strided(v(4, cols=2), kind)]
        dist.all_reduce_coalesced(ts, group=g)
        return ts
    run(f"all_reduce_coalesced {tag}", allreduce_coalesced,
        [total(allv(3)), torch.full((4,), w, dtype=dtype), total(allv(4, cols=2))], ours, gloo,
        dense)

    def reduce(g):
        t = strided(v(5), kind)
        dist.reduce(t, dst=root, group=g)
        return [t] if rank == root else []
    run(f"reduce {tag}", reduce, [total(allv(5))] if rank == root else [], ours, gloo, dense)

    def allgather(g):
        outs = [empty_like_strided(v(6), kind) for _ in range(w)]
        dist.all_gather(outs, strided(v(6), kind), group=g)
        return outs
    run(f"all_gather {tag}", allgather, allv(6), ours, gloo, dense)

    def allgather_into_tensor(g):
        out = empty_like_strided(torch.cat(allv(7)), kind)
        dist.all_gather_into_tensor(out, strided(v(7), kind), group=g)
        return [out]
    # (gloo has no _allgather_base in torch 1.13)
    run(f"all_gather_into_tensor {tag}", allgather_into_tensor, [torch.cat(allv(7))], ours, gloo,
        False)

    def allgather_coalesced(g):
        outs = [[empty_like_strided(v(8), kind), torch.zeros(2, dtype=dtype),
                 empty_like_strided(v(9, cols=3), kind)] for _ in range(w)]
        dist.all_gather_coalesced(outs, [strided(v(8), kind), torch.full((2,), rank, dtype=dtype),
                                         strided(v(9, cols=3), kind)], group=g)
        return [t for ts in outs for t in ts]
    want = []
    for r in range(w):
        want += [values(r, 8, dtype), torch.full((2,), r, dtype=dtype),
                 values(r, 9, dtype, cols=3)]
    run(f"all_gather_coalesced {tag}", allgather_coalesced, want, ours, gloo, dense)

    def gather(g):
        outs = [empty_like_strided(v(10), kind) for _ in range(w)] if rank == 0 else None
        dist.gather(strided(v(10), kind), outs, dst=0, group=g)
        return outs or []
    # (gloo writes a non-contiguous gather output in storage order)
    run(f"gather {tag}", gather, allv(10) if rank == 0 else [], ours, gloo, False)

    def scatter(g):
        out = empty_like_strided(v(11), kind)
        ins = [strided(values(j, 11, dtype), kind) for j in range(w)] if rank == root else None
        dist.scatter(out, ins, src=root, group=g)
        return [out]
    run(f"scatter {tag}", scatter, [v(11)], ours, gloo, dense)

    # (gloo has no reduce_scatter, _reduce_scatter_base, alltoall in torch 1.13)
    out = empty_like_strided(v(12), kind)
    dist.reduce_scatter(out, [strided(v(12 + j), kind) for j in range(w)], group=ours)
    check(f"reduce_scatter {tag}", [out], [total([values(r, 12 + rank, dtype) for r in range(w)])])

    out = empty_like_strided(v(20), kind)
    big = torch.cat([v(20 + j) for j in range(w)])
    dist.reduce_scatter_tensor(out, strided(big, kind), group=ours)
    check(f"reduce_scatter_tensor {tag}", [out],
          [total([values(r, 20 + rank, dtype) for r in range(w)])])

    outs = [empty_like_strided(values(j, 30 + rank, dtype), kind) for j in range(w)]
    dist.all_to_all(outs, [strided(v(30 + j), kind) for j in range(w)], group=ours)
    check(f"all_to_all {tag}", outs, [values(j, 30 + rank, dtype) for j in range(w)])

    # all_to_all_single, uneven: rank r sends (r + j) % 3 + 1 rows of width COLS to rank j.
    def nrows(src, dst):
        return (src + dst) % 3 + 1

    def a2a(g):
        send = torch.cat([v(40 + j, rows=nrows(rank, j)) for j in range(w)])
        recv_rows = [nrows(j, rank) for j in range(w)]
        out = empty_like_strided(torch.zeros(sum(recv_rows), COLS, dtype=dtype), kind)
        dist.all_to_all_single(out, strided(send, kind), output_split_sizes=recv_rows,
                               input_split_sizes=[nrows(rank, j) for j in range(w)], group=g)
        return [out]
    # (gloo reads and writes non-contiguous alltoall_base tensors in storage order)
    run(f"all_to_all_single {tag}", a2a,
        [torch.cat([values(j, 40 + rank, dtype, rows=nrows(j, rank)) for j in range(w)])], ours,
        gloo, False)

    # Point to point (gloo: "input tensor has to be contiguous").
    t = empty_like_strided(v(50), kind)
    reqs = [dist.isend(strided(v(50), kind), (rank + 1) % w, group=ours),
            dist.irecv(t, (rank - 1) % w, group=ours)]
    for r in reqs:
        r.wait()
    check(f"send/recv {tag}", [t], [values((rank - 1) % w, 50, dtype)])

    if rank == 0:
        got = {}
        for _ in range(w - 1):
            t = empty_like_strided(v(60), kind)
            src = dist.recv(t, group=ours, tag=3)
            got[src] = t
        check(f"recv any source {tag}", [got[r] for r in range(1, w)],
              [values(r, 60, dtype) for r in range(1, w)])
    else:
        dist.send(strided(v(60), kind), 0, group=ours, tag=3)

    if floating:
        # The Future completes after the copy back: its value and then() see the result.
        t = strided(v(70), kind)
        fut = dist.all_reduce(t, group=ours, async_op=True).get_future()
        doubled = fut.then(lambda f: f.value()[0] * 2).wait()
        check(f"future of a staged output {tag}", [fut.value()[0], doubled, t],
              [total(allv(70)), 2 * total(allv(70)), total(allv(70))])


def expect_error(fn, *needles):
    rank = dist.get_rank()
    try:
        fn()
    except RuntimeError as e:
        for needle in needles:
            assert needle in str(e), f"rank {rank}: error lacks {needle!r}: {e}"
        counts["refused: " + needles[0]] += 1
        return
    raise AssertionError(f"rank {rank}: no error raised (expected one with {needles})")


def main():
    faulthandler.dump_traceback_later(100, exit=True)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    gloo = dist.group.WORLD
    ours = dist.new_group(backend="c10d")
    rank, w = dist.get_rank(), dist.get_world_size()
    pg = ours

    for dtype in DTYPES:
        for kind in KINDS:
            run_case(dtype, kind, ours, gloo)

    # Contiguous all_gather_coalesced of mixed shapes, both backends.
    def agc(g):
        outs = [[torch.zeros(2, 3), torch.zeros(1), torch.zeros(0)] for _ in range(w)]
        dist.all_gather_coalesced(outs, [torch.full((2, 3), rank + 0.5), torch.full((1,), -rank * 1.0),
                                         torch.zeros(0)], group=g)
        return [t for ts in outs for t in ts]
    want = []
    for r in range(w):
        want += [torch.full((2, 3), r + 0.5), torch.full((1,), float(-r)), torch.zeros(0)]
    run("all_gather_coalesced contiguous", agc, want, ours, gloo)

    # Refusals, before anything is communicated (each on every rank, so no peer waits).
    expect_error(lambda: dist.all_reduce(torch.zeros(1).expand(4), group=ours),
                 "allreduce", "share memory", f"rank {rank}")
    expect_error(lambda: pg.allgather_coalesced([[torch.zeros(2)]] * w,
                                                [torch.zeros(2), torch.zeros(2)]).wait(),
                 "allgather_coalesced", "output_tensor_lists[0] has 1 tensors")
    expect_error(lambda: pg.allgather_coalesced([[torch.zeros(3)]] * w, [torch.zeros(2)]).wait(),
                 "allgather_coalesced", "output_tensor_lists[0][0]")

    # monitored_barrier through the group (dist.monitored_barrier itself takes gloo groups only).
    for wait_all in (False, True):
        pg.monitored_barrier(datetime.timedelta(seconds=30), wait_all_ranks=wait_all)
    counts["monitored_barrier"] += 1

    dist.barrier(group=gloo)
    if rank == 0:
        for name in sorted(counts):
            print(f"ok {name}: {counts[name]}")
        print(f"noncontiguous_test: all {sum(counts.values())} cases agree (world {w})")
    common.finish(ours, reference=True)


if __name__ == "__main__":
    main()
