"""Every torch collective on our backend against torch's gloo, on the same inputs, for every dtype.

The default group is torch's gloo; a second group over the same ranks runs on our backend
(dist.new_group(backend="c10d")). Each op runs on both with the same inputs, and each result is
compared with a reference this rank computes itself from every rank's inputs (inputs are a
function of rank and op, small integers, so every dtype and every summation order is exact). Ops
or dtypes gloo does not take in torch 1.13 (bfloat16, bool; _allgather_base, reduce_scatter,
alltoall, AVG, PREMUL_SUM) are checked against the reference alone. Then: sparse COO all_reduce
(against gloo bit for bit), the object collectives, monitored_barrier and sequence numbers through
the group, and on torch 2.x the coalescing manager (its fast paths and a plain op in a block).

  c10drun --nproc-per-node 4 /usr/bin/python3 collectives_vs_gloo.py [--engine gloo]

Prints one line per op and exits non-zero on the first mismatch."""
import argparse
import collections
import datetime
import faulthandler

import torch
import torch.distributed as dist

import c10d_torch
import common

TORCH2 = int(torch.__version__.split(".")[0]) >= 2
GLOO_DTYPES = [torch.float32, torch.float64, torch.float16, torch.int8, torch.uint8, torch.int32,
               torch.int64]
OTHER_DTYPES = [torch.bfloat16, torch.bool]
SIZES = [1, 7, 1031]
R = dist.ReduceOp

counts = collections.Counter()
OP_NAMES = {R.SUM: "SUM", R.PRODUCT: "PRODUCT", R.MIN: "MIN", R.MAX: "MAX", R.BAND: "BAND",
            R.BOR: "BOR", R.BXOR: "BXOR"}


def inp(rank, n, dtype, salt=0):
    """Rank's input: values in 1..3 (0..1 for bool), different per rank and salt."""
    v = (torch.arange(n) * 7 + rank * 5 + salt * 3) % (2 if dtype == torch.bool else 3)
    return (v if dtype == torch.bool else v + 1).to(dtype)


def reduce_ref(tensors, op):
    out = tensors[0].clone()
    for t in tensors[1:]:
        if op == R.SUM:
            out = torch.logical_or(out, t) if out.dtype == torch.bool else out + t
        elif op == R.PRODUCT:
            out = torch.logical_and(out, t) if out.dtype == torch.bool else out * t
        elif op == R.MIN:
            out = torch.minimum(out, t)
        elif op == R.MAX:
            out = torch.maximum(out, t)
        elif op == R.BAND:
            out = out & t
        elif op == R.BOR:
            out = out | t
        elif op == R.BXOR:
            out = out ^ t
    return out


def reduce_ops(dtype):
    if dtype == torch.bool:
        return [R.MIN, R.MAX, R.BAND, R.BOR, R.BXOR]
    if dtype.is_floating_point:
        return [R.SUM, R.PRODUCT, R.MIN, R.MAX]
    return [R.SUM, R.PRODUCT, R.MIN, R.MAX, R.BAND, R.BOR, R.BXOR]


def check(name, dtype, n, got, want):
    for i, (g, w) in enumerate(zip(got, want)):
        if g.dtype != w.dtype or not torch.equal(g, w):
            raise AssertionError(f"rank {dist.get_rank()}: {name} {dtype} n={n}: result[{i}] "
                                 f"{g.tolist()[:8]} != expected {w.tolist()[:8]}")
    if len(got) != len(want):
        raise AssertionError(f"{name}: {len(got)} results, expected {len(want)}")
    counts[name] += 1


def both(name, dtype, n, fn, want, gloo_ok, ours, gloo):
    """Runs fn(group) -> list of result tensors on ours (and gloo when it takes the case)."""
    check(name, dtype, n, fn(ours), want)
    if gloo_ok:
        check(name + " (torch gloo)", dtype, n, fn(gloo), want)


def run_dtype(dtype, ours, gloo):
    rank, w = dist.get_rank(), dist.get_world_size()
    g = dtype in GLOO_DTYPES
    for n in SIZES:
        def mine(salt=0):
            return inp(rank, n, dtype, salt)

        def alls(salt=0):
            return [inp(r, n, dtype, salt) for r in range(w)]

        root = w - 1

        def bcast(grp):
            t = mine(1)
            dist.broadcast(t, src=root, group=grp)
            return [t]
        both("broadcast", dtype, n, bcast, [inp(root, n, dtype, 1)], g, ours, gloo)

        for op in reduce_ops(dtype):
            def ar(grp, op=op):
                t = mine(2)
                dist.all_reduce(t, op=op, group=grp)
                return [t]
            both(f"all_reduce {OP_NAMES[op]}", dtype, n, ar, [reduce_ref(alls(2), op)], g, ours, gloo)

        if dtype != torch.bool:
            t = mine(3)
            dist.all_reduce(t, op=R.AVG, group=ours)
            total = reduce_ref(alls(3), R.SUM)
            want = total / w if dtype.is_floating_point else torch.div(total, w,
                                                                         rounding_mode="trunc")
            check("all_reduce AVG", dtype, n, [t], [want.to(dtype)])
        if dtype.is_floating_point:
            t = mine(4)
            dist.all_reduce(t, op=dist._make_nccl_premul_sum(2.0), group=ours)
            check("all_reduce PREMUL_SUM", dtype, n, [t], [2 * reduce_ref(alls(4), R.SUM)])

        if dtype != torch.bool:
            def arc(grp):
                ts = [mine(5), inp(rank, 3, dtype, 6)]
                dist.all_reduce_coalesced(ts, group=grp)
                return ts
            both("all_reduce_coalesced", dtype, n, arc,
                 [reduce_ref(alls(5), R.SUM),
                  reduce_ref([inp(r, 3, dtype, 6) for r in range(w)], R.SUM)], g, ours, gloo)

        red_root = 1 % w
        for op in ([R.SUM, R.MAX] if dtype != torch.bool else [R.MAX]):
            def red(grp, op=op):
                t = mine(7)
                dist.reduce(t, dst=red_root, op=op, group=grp)
                return [t]
            name = f"reduce {OP_NAMES[op]}"
            if rank == red_root:
                both(name, dtype, n, red, [reduce_ref(alls(7), op)], g, ours, gloo)
            else:
                # Off the root torch leaves the tensor undefined (gloo uses it as scratch); ours
                # leaves it as it was, which we check.
                check(name + " (non-root unchanged)", dtype, n, red(ours), [mine(7)])
                if g:
                    red(gloo)

        def ag(grp):
            outs = [torch.zeros(n, dtype=dtype) for _ in range(w)]
            dist.all_gather(outs, mine(8), group=grp)
            return outs
        both("all_gather", dtype, n, ag, alls(8), g, ours, gloo)

        def agt(grp):
            out = torch.zeros(w * n, dtype=dtype)
            dist.all_gather_into_tensor(out, mine(9), group=grp)
            return [out]
        both("all_gather_into_tensor", dtype, n, agt, [torch.cat(alls(9))], False, ours, gloo)

        def gat(grp):
            outs = [torch.zeros(n, dtype=dtype) for _ in range(w)] if rank == 0 else None
            dist.gather(mine(10), outs, dst=0, group=grp)
            return outs or []
        both("gather", dtype, n, gat, alls(10) if rank == 0 else [], g, ours, gloo)

        def sca(grp):
            out = torch.zeros(n, dtype=dtype)
            ins = [inp(j, n, dtype, 11) for j in range(w)] if rank == root else None
            dist.scatter(out, ins, src=root, group=grp)
            return [out]
        both("scatter", dtype, n, sca, [inp(rank, n, dtype, 11)], g, ours, gloo)

        if dtype != torch.bool:
            out = torch.zeros(n, dtype=dtype)
            dist.reduce_scatter(out, [inp(rank, n, dtype, 12 + j) for j in range(w)], group=ours)
            check("reduce_scatter", dtype, n, [out],
                  [reduce_ref([inp(r, n, dtype, 12 + rank) for r in range(w)], R.SUM)])
            out = torch.zeros(n, dtype=dtype)
            dist.reduce_scatter_tensor(out, torch.cat([inp(rank, n, dtype, 12 + j)
                                                       for j in range(w)]), group=ours)
            check("reduce_scatter_tensor", dtype, n, [out],
                  [reduce_ref([inp(r, n, dtype, 12 + rank) for r in range(w)], R.SUM)])

        outs = [torch.zeros(n + rank, dtype=dtype) for _ in range(w)]  # j sends n + dst elements
        dist.all_to_all(outs, [inp(rank, n + j, dtype, 20 + rank * w + j) for j in range(w)],
                        group=ours)
        check("all_to_all", dtype, n, outs, [inp(j, n + rank, dtype, 20 + j * w + rank)
                                             for j in range(w)])

        def a2a_even(grp):
            out = torch.zeros(w * n, dtype=dtype)
            dist.all_to_all_single(out, torch.cat([inp(rank, n, dtype, 40 + j) for j in range(w)]),
                                   group=grp)
            return [out]
        both("all_to_all_single", dtype, n, a2a_even,
             [torch.cat([inp(j, n, dtype, 40 + rank) for j in range(w)])], g, ours, gloo)

        # Uneven: rank r sends (r + j) % 3 rows of width n to rank j (some of them empty).
        def rows(src, dst):
            return (src + dst) % 3

        def a2a_uneven(grp):
            send = [inp(rank, rows(rank, j) * n, dtype, 60 + j).reshape(-1, n) for j in range(w)]
            recv_rows = [rows(j, rank) for j in range(w)]
            out = torch.zeros(sum(recv_rows), n, dtype=dtype)
            dist.all_to_all_single(out, torch.cat(send), output_split_sizes=recv_rows,
                                   input_split_sizes=[rows(rank, j) for j in range(w)], group=grp)
            return [out]
        both("all_to_all_single uneven", dtype, n, a2a_uneven,
             [torch.cat([inp(j, rows(j, rank) * n, dtype, 60 + rank).reshape(-1, n)
                         for j in range(w)])], g, ours, gloo)

        def ring(grp):
            t = torch.zeros(n, dtype=dtype)
            reqs = [dist.isend(mine(80), (rank + 1) % w, group=grp),
                    dist.irecv(t, (rank - 1) % w, group=grp)]
            for r in reqs:
                r.wait()
            return [t]
        both("send/recv", dtype, n, ring, [inp((rank - 1) % w, n, dtype, 80)], g, ours, gloo)

        def any_source(grp):
            if rank == 0:
                got = [None] * w
                for _ in range(w - 1):
                    t = torch.zeros(n, dtype=dtype)
                    src = dist.recv(t, group=grp, tag=7)
                    got[src] = t
                return [x for x in got if x is not None]
            dist.send(mine(90), 0, group=grp, tag=7)
            return []
        both("recv any source", dtype, n, any_source,
             [inp(r, n, dtype, 90) for r in range(1, w)] if rank == 0 else [], g, ours, gloo)


def sparse_input(rank, dtype, dense_dims):
    """Rank's sparse COO tensor of shape (5, 3, *dense_dims): uncoalesced (a repeated index), and
    empty on rank 1."""
    if rank == 1:
        return torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long),
                                       torch.zeros((0,) + dense_dims, dtype=dtype), (5, 3) + dense_dims)
    idx = torch.tensor([[rank % 5, (rank + 2) % 5, rank % 5], [0, rank % 3, 0]])
    vals = torch.arange(3 * (dense_dims[0] if dense_dims else 1), dtype=dtype)
    vals = (vals.reshape((3,) + dense_dims) + 1) * (rank + 1) / 4  # exact in binary
    return torch.sparse_coo_tensor(idx, vals, (5, 3) + dense_dims)


def sparse_cases(ours, gloo):
    rank, w = dist.get_rank(), dist.get_world_size()
    for dtype in (torch.float32, torch.float64):
        for dense_dims in ((), (2,)):
            name = f"sparse all_reduce dense_dims={dense_dims}"
            want = sum(sparse_input(r, dtype, dense_dims).to_dense() for r in range(w))
            got = sparse_input(rank, dtype, dense_dims)
            dist.all_reduce(got, group=ours)
            ref = sparse_input(rank, dtype, dense_dims)
            dist.all_reduce(ref, group=gloo)
            assert got.is_sparse and got.is_coalesced(), f"{name}: result not sparse+coalesced"
            check(name, dtype, 0, [got.to_dense()], [want])
            check(name + " (as torch gloo's indices, values)", dtype, 0,
                  [got._indices(), got._values()],
                  [ref.coalesce()._indices(), ref.coalesce()._values()])


def object_cases(ours, gloo):
    rank, w = dist.get_rank(), dist.get_world_size()
    objs = [None] * w
    dist.all_gather_object(objs, {"rank": rank, "s": "x" * rank}, group=ours)
    assert objs == [{"rank": r, "s": "x" * r} for r in range(w)], objs
    counts["all_gather_object"] += 1
    lst = [f"from root {w - 1}", {"k": [1, 2]}] if rank == w - 1 else [None, None]
    dist.broadcast_object_list(lst, src=w - 1, group=ours)
    assert lst == [f"from root {w - 1}", {"k": [1, 2]}], lst
    counts["broadcast_object_list"] += 1
    gathered = [None] * w if rank == 0 else None
    dist.gather_object(("g", rank), gathered, dst=0, group=ours)
    assert rank != 0 or gathered == [("g", r) for r in range(w)], gathered
    counts["gather_object"] += 1
    out = [None]
    dist.scatter_object_list(out, [("s", r) for r in range(w)] if rank == 0 else None, src=0,
                             group=ours)
    assert out == [("s", rank)], out
    counts["scatter_object_list"] += 1


def group_cases(ours, gloo):
    """monitored_barrier and sequence numbers, asked of our group."""
    rank, w = dist.get_rank(), dist.get_world_size()
    # dist.monitored_barrier takes gloo groups only (torch checks the backend's name); the
    # group's own method reaches ours.
    ours.monitored_barrier(datetime.timedelta(seconds=30), wait_all_ranks=True)
    counts["monitored_barrier"] += 1
    if TORCH2:
        # torch 2.x's ProcessGroup answers for gloo, nccl and ucc only ("ProcessGroup custom does
        # not yet support sequence numbers"); our backend object itself answers.
        try:
            ours._get_sequence_number_for_group()
            raise AssertionError("torch 2.x's ProcessGroup now gives custom backends' sequence "
                                 "numbers: update docs/torch-plugin.md")
        except RuntimeError as e:
            assert "does not yet support sequence numbers" in str(e), e
        seq = ours._get_backend(torch.device("cpu"))._get_sequence_number_for_group()
    else:
        seq = ours._get_sequence_number_for_group()
    seqs = [None] * w
    dist.all_gather_object(seqs, seq, group=gloo)
    assert seq > 0 and seqs == [seq] * w, f"sequence numbers {seqs}"
    counts["sequence numbers agree"] += 1


def coalescing_cases(ours):
    """torch 2.x's _coalescing_manager on our group: its three fast paths (one coalesced call
    per block) and a plain op issued inside a block (endCoalescing's Work covers it)."""
    rank, w = dist.get_rank(), dist.get_world_size()
    cpu = torch.device("cpu")
    total = float(w * (w + 1) // 2)
    a, b = torch.full((3,), rank + 1.0), torch.full((5,), 2.0 * (rank + 1))
    with dist._coalescing_manager(group=ours, device=cpu, async_ops=True) as cm:
        dist.all_reduce(a, group=ours)
        dist.all_reduce(b, group=ours)
    cm.wait()
    check("coalesced all_reduce", torch.float32, 0, [a, b],
          [torch.full((3,), total), torch.full((5,), 2 * total)])
    outs = [torch.zeros(2 * w), torch.zeros(3 * w)]
    with dist._coalescing_manager(group=ours, device=cpu, async_ops=True) as cm:
        dist.all_gather_into_tensor(outs[0], torch.full((2,), float(rank)), group=ours)
        dist.all_gather_into_tensor(outs[1], torch.full((3,), float(rank)), group=ours)
    cm.wait()
    check("coalesced all_gather_into_tensor", torch.float32, 0, outs,
          [torch.arange(w).float().repeat_interleave(k) for k in (2, 3)])
    outs = [torch.zeros(2), torch.zeros(1)]
    with dist._coalescing_manager(group=ours, device=cpu):
        dist.reduce_scatter_tensor(outs[0], torch.arange(2.0 * w) + rank, group=ours)
        dist.reduce_scatter_tensor(outs[1], torch.arange(1.0 * w) * (rank + 1), group=ours)
    check("coalesced reduce_scatter_tensor", torch.float32, 0, outs,
          [sum(torch.arange(2.0 * w)[2 * rank:2 * rank + 2] + r for r in range(w)),
           torch.tensor([rank * total])])
    t = torch.full((4,), float(rank))
    with dist._coalescing_manager(group=ours, device=cpu):
        dist.broadcast(t, src=w - 1, group=ours)
    check("broadcast in a coalescing block", torch.float32, 4, [t], [torch.full((4,), w - 1.0)])


def main():
    # A hang prints every thread's Python stack and exits, rather than waiting for ctest's kill.
    faulthandler.dump_traceback_later(90, exit=True)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", default=None)
    args = parser.parse_args()
    if args.engine:
        c10d_torch.set_engine(args.engine)
    dist.init_process_group("gloo")
    gloo = dist.group.WORLD
    ours = dist.new_group(backend="c10d")
    rank, w = dist.get_rank(), dist.get_world_size()

    for dtype in GLOO_DTYPES + OTHER_DTYPES:
        run_dtype(dtype, ours, gloo)

    # Works: is_completed, wait, get_future (a list holding the output, as DDP's hooks read it).
    t = torch.full((5,), float(rank + 1))
    work = dist.all_reduce(t, group=ours, async_op=True)
    fut = work.get_future()
    work.wait()
    assert work.is_completed() and work.is_success(), "work not complete after wait()"
    value = fut.wait()
    expected = torch.full((5,), float(w * (w + 1) // 2))
    assert isinstance(value, list) and torch.equal(value[0], expected), f"future value {value}"
    chained = dist.all_reduce(torch.ones(3), group=ours, async_op=True).get_future().then(
        lambda f: f.value()[0] * 2).wait()
    assert torch.equal(chained, torch.full((3,), 2.0 * w)), f"then(): {chained}"
    dist.barrier(group=ours)
    dist.barrier(group=gloo)
    counts["work/future"] += 1

    sparse_cases(ours, gloo)
    object_cases(ours, gloo)
    group_cases(ours, gloo)
    if TORCH2:
        coalescing_cases(ours)

    if rank == 0:
        for name in sorted(counts):
            print(f"ok {name}: {counts[name]} cases")
        print(f"collectives_vs_gloo: all {sum(counts.values())} cases agree "
              f"(world {w}, engine {c10d_torch.engine()})")
    common.finish(ours, reference=True)


if __name__ == "__main__":
    main()
