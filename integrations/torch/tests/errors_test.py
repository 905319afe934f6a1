"""Bad input on the c10d backend raises a Python RuntimeError naming the op, the rank and the
problem, never a crash or a hang; the group stays usable after every error found before
communicating. Last, an alltoall whose sizes disagree between ranks fails both ranks' works, so
do coalesced ops whose per-tensor sizes disagree (naming the tensor), and
a barrier no peer joins times out with the words torch's own tests look for (" Timed out ").

  c10drun --nproc-per-node 2 /usr/bin/python3 errors_test.py"""
import datetime
import faulthandler
import re
import time

import torch
import torch.distributed as dist

import c10d_torch  # noqa: F401 - registers backend "c10d"


def expect_error(fn, *needles):
    """fn() must raise RuntimeError whose text contains every needle (and this rank)."""
    rank = dist.get_rank()
    try:
        fn()
    except RuntimeError as e:
        text = str(e)
        for needle in needles + (f"rank {rank}",):
            assert needle in text, f"rank {rank}: error text lacks {needle!r}: {text}"
        return text
    raise AssertionError(f"rank {rank}: no error raised (expected one with {needles})")


def scatter_opts(root):
    opts = dist.ScatterOptions()
    opts.rootRank = root
    return opts


def still_works():
    t = torch.ones(3)
    dist.all_reduce(t)
    assert torch.equal(t, torch.full((3,), float(dist.get_world_size()))), t


def main():
    # A hang prints every thread's Python stack and exits, rather than waiting for ctest's kill.
    faulthandler.dump_traceback_later(90, exit=True)
    dist.init_process_group("c10d", timeout=datetime.timedelta(seconds=30))
    rank, w = dist.get_rank(), dist.get_world_size()
    pg = dist.distributed_c10d._get_default_group()
    checked = 0
    cases = [
        ("all_gather list length",
         lambda: dist.all_gather([torch.zeros(4)] * (w + 1), torch.zeros(4)),
         ("c10d_torch: allgather", f"output_tensors[0] has {w + 1} tensors", f"group has {w} ranks")),
        ("all_gather element count",
         lambda: dist.all_gather([torch.zeros(4), torch.zeros(3)], torch.zeros(4)),
         ("c10d_torch: allgather", "output_tensors[0][1]", "3 elements")),
        ("all_gather dtype",
         # (dist.all_gather checks dtypes itself; the group's own allgather is ours)
         lambda: pg.allgather([[torch.zeros(4), torch.zeros(4, dtype=torch.int32)]],
                              [torch.zeros(4)]).wait(),
         ("allgather", "output_tensors[0][1] (Int")),
        ("all_gather_into_tensor size",
         lambda: dist.all_gather_into_tensor(torch.zeros(7), torch.zeros(4)),
         ("_allgather_base", "output (Float, 7 elements)")),
        ("reduce_scatter_tensor size",
         lambda: dist.reduce_scatter_tensor(torch.zeros(4), torch.zeros(5)),
         ("_reduce_scatter_base", "input (Float, 5 elements)")),
        ("all_to_all_single splits",
         lambda: dist.all_to_all_single(torch.zeros(4), torch.zeros(4),
                                        output_split_sizes=[2, 2], input_split_sizes=[3, 3]),
         ("alltoall_base", "input split sizes add up to 6 rows, the tensor has 4")),
        ("all_to_all_single negative split",
         lambda: dist.all_to_all_single(torch.zeros(4), torch.zeros(4),
                                        output_split_sizes=[5, -1], input_split_sizes=[2, 2]),
         ("alltoall_base", "split sizes[1] is negative")),
        ("unsupported dtype",
         lambda: dist.all_reduce(torch.zeros(4, dtype=torch.int16)),
         ("c10d_torch: allreduce", "dtype Short", "does not support")),
        ("output with elements sharing memory",
         lambda: dist.all_reduce(torch.zeros(4, 1).expand(4, 3)),
         ("c10d_torch: allreduce", "tensors[0] has elements that share memory", "strides [1, 0]")),
        ("bitwise op on floats",
         lambda: dist.all_reduce(torch.zeros(4), op=dist.ReduceOp.BAND),
         ("c10d_torch: allreduce",)),
        ("send to a rank outside the group",
         # (dist.send checks the rank itself; the group's own send is ours)
         lambda: pg.send([torch.zeros(2)], w + 3, 0),
         ("c10d_torch: send",)),
        # Every rank errs (the root has too few inputs, the others pass inputs they must not), so
        # no rank is left waiting in the scatter.
        ("scatter inputs",
         lambda: pg.scatter([torch.zeros(2)], [[torch.zeros(2)]], scatter_opts(0)).wait(),
         ("c10d_torch: scatter", "input_tensors[0] has 1 tensors" if rank == 0
          else "only the root (rank 0) takes input tensors")),
    ]
    for name, fn, needles in cases:
        text = expect_error(fn, *needles)
        if rank == 0:
            print(f"ok {name}: {text.splitlines()[0][:160]}")
        still_works()
        checked += 1

    # Sizes that disagree between ranks: found while running; both ranks' works fail.
    # Every rank sends and expects rank + 1 elements per peer: the pairs disagree.
    k = rank + 1
    work = dist.all_to_all_single(torch.zeros(k * w), torch.zeros(k * w), [k] * w, [k] * w,
                                  async_op=True)
    text = expect_error(work.wait, "c10d_torch: alltoall_base", "splits disagree")
    if rank == 0:
        print(f"ok mismatched alltoall sizes: {text.splitlines()[0][:160]}")
    checked += 1

    # Coalesced ops whose per-tensor sizes disagree between ranks (the same total): every rank
    # fails naming the tensor and both ranks' sizes, where it used to complete with misaligned
    # data. Each on a group of its own (a mismatch may break the group it ran on).
    sizes = [5, 3] if rank == 1 else [3, 5]
    coalesced = [
        ("all_gather_coalesced",
         lambda g: dist.all_gather_coalesced([[torch.zeros(n) for n in sizes] for _ in range(w)],
                                             [torch.full((n,), float(rank)) for n in sizes],
                                             group=g),
         "allgather_into_tensor"),
        ("all_reduce_coalesced",
         lambda g: dist.all_reduce_coalesced([torch.ones(n) for n in sizes], group=g),
         "allreduce_coalesced"),
    ]
    for name, fn, op in coalesced:
        g = dist.new_group(backend="c10d")
        text = expect_error(lambda: fn(g), op, "tensor 0 differs", "[3, 5]", "[5, 3]")
        if rank == 0:
            print(f"ok mismatched {name} sizes: {text.splitlines()[0][:200]}")
        checked += 1

    # A barrier rank 1 never joins, on a group with a 1 s timeout: rank 0's fails within the
    # timeout's margin, with torch's wording (torch's test_barrier_timeout_* match this regex).
    short = dist.new_group(backend="c10d", timeout=datetime.timedelta(seconds=1))
    if rank == 0:
        start = time.monotonic()
        text = expect_error(lambda: dist.barrier(group=short), "c10d_torch: barrier")
        took = time.monotonic() - start
        assert re.search(" (Timed out|closed|timeout) ", text), f"timeout wording: {text}"
        assert took < 20, f"the barrier took {took:.1f} s to time out (timeout 1 s)"
        print(f"ok barrier timeout after {took:.1f} s: {text.splitlines()[0][:200]}")
    dist.barrier()  # the default group: rank 1 waits here until rank 0's barrier has failed
    dist.destroy_process_group(short)
    checked += 1

    # monitored_barrier with a zero timeout (torch's "no time at all", not "unset") on a group
    # rank 1 does not enter: rank 0 fails at once, naming the rank that did not arrive.
    mb = dist.new_group(backend="c10d")
    if rank == 0:
        start = time.monotonic()
        text = expect_error(lambda: mb.monitored_barrier(datetime.timedelta(seconds=0)),
                            "c10d_torch: monitored_barrier", "Timed out",
                            "Rank 0 timed out in monitoredBarrier",
                            "Rank 1 failed to pass monitoredBarrier")
        took = time.monotonic() - start
        assert took < 5, f"a zero-timeout monitored_barrier took {took:.1f} s"
        print(f"ok monitored_barrier zero timeout after {took:.2f} s: {text.splitlines()[0][:160]}")
    dist.barrier()
    dist.destroy_process_group(mb)
    checked += 1
    dist.destroy_process_group()
    if rank == 0:
        print(f"errors_test: {checked} error cases raise RuntimeError with op, rank and problem")


if __name__ == "__main__":
    main()
