"""What torch 2.x offers beyond plain DDP, tried on our backend against torch's gloo in one run:
torch.compile'd DDP, DeviceMesh + DTensor over a CPU mesh, and FSDP (FSDP2's fully_shard and
FSDP1) on CPU. Each is either run on both backends with the same inputs and its per-step losses /
results compared (they must agree exactly), or refused by torch itself on both alike: then the
refusal must be the one documented in docs/torch-plugin.md and TORCH_REFUSES (so a torch that starts or
stops refusing is noticed).

  c10drun --nproc-per-node 2 python3 torch2_features_test.py     # torch >= 2.4

Prints one line per feature and exits non-zero on the first disagreement."""
import copy
import datetime
import faulthandler
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

import c10d_torch  # noqa: F401 - registers backend "c10d"

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import common  # noqa: E402

STEPS = 4


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))


def batch(step):
    g = torch.Generator().manual_seed(1000 * step + dist.get_rank())
    return torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)


def train(net, group_losses):
    """STEPS of SGD on rank-dependent batches; returns the losses averaged over the ranks."""
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    losses = []
    for step in range(STEPS):
        x, y = batch(step)
        opt.zero_grad()
        loss = (net(x) - y).square().mean()
        loss.backward()
        opt.step()
        avg = loss.detach().clone()
        dist.all_reduce(avg, group=group_losses)
        losses.append(avg.item() / dist.get_world_size())
    return losses


# Where torch itself refuses a feature on CPU (with any backend): the feature's name -> the text
# of torch's error. docs/torch-plugin.md lists these; a torch that stops refusing fails this test.
TORCH_REFUSES = {
    # torch 2.6's FSDP2 records an event on its all-gather stream; CPU streams have none.
    "FSDP2 fully_shard on CPU": "'Stream' object has no attribute 'record_event'",
}


def same(name, ours, gloo):
    if ours != gloo:
        raise AssertionError(f"rank {dist.get_rank()}: {name}: c10d {ours} != gloo {gloo}")
    if dist.get_rank() == 0:
        print(f"ok {name}: c10d and gloo agree ({ours if len(str(ours)) < 90 else '...'})")


def on_both(name, fn, ours, gloo):
    """fn(group) on torch's gloo, then on ours: both must return the same, or both raise torch's
    documented refusal (TORCH_REFUSES) with the same message."""
    outcomes = []
    for group in (gloo, ours):
        try:
            outcomes.append(("ok", fn(group)))
        except Exception as e:  # noqa: BLE001 - compared below
            outcomes.append(("error", f"{type(e).__name__}: {e}"))
        dist.barrier(group=gloo)
    (gloo_kind, gloo_out), (our_kind, our_out) = outcomes
    if gloo_kind == "ok" and our_kind == "ok":
        assert name not in TORCH_REFUSES, f"{name}: torch no longer refuses it: update docs/torch-plugin.md"
        same(name, our_out, gloo_out)
        return
    refusal = TORCH_REFUSES.get(name)
    if refusal is None or gloo_kind != "error" or refusal not in gloo_out or our_out != gloo_out:
        raise AssertionError(f"rank {dist.get_rank()}: {name}: gloo {gloo_kind}: {gloo_out}; "
                             f"c10d {our_kind}: {our_out}")
    if dist.get_rank() == 0:
        print(f"ok {name}: torch refuses it on gloo and on c10d alike ({refusal})")


def compiled_ddp(ours, gloo):
    from torch.nn.parallel import DistributedDataParallel as DDP
    results = []
    for group in (ours, gloo):
        torch._dynamo.reset()
        net = torch.compile(DDP(model(), process_group=group, bucket_cap_mb=0.001),
                            backend="aot_eager")
        results.append(train(net, gloo))
    same("torch.compile'd DDP (aot_eager, DDPOptimizer's bucketed graph breaks)", *results)


def dtensor(ours_mesh, gloo_mesh):
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor
    w = dist.get_world_size()
    results = []
    for mesh in (ours_mesh, gloo_mesh):
        full = torch.arange(4.0 * w * 3).reshape(4 * w, 3)
        d = distribute_tensor(full, mesh, [Shard(0)])  # each rank keeps its rows
        local = d.to_local().clone()
        summed = (d * 2 + 1).sum(dim=0)               # a reduction over the sharded dim: allreduce
        gathered = d.redistribute(mesh, [Replicate()]).to_local()  # allgather
        ones = distribute_tensor(torch.ones(3, 2), mesh, [Replicate()])
        mm = (d @ ones).full_tensor()                 # sharded matmul, then allgather
        results.append([local.tolist(), summed.full_tensor().tolist(), gathered.tolist(),
                        mm.tolist()])
        assert torch.equal(gathered, full), f"DTensor redistribute: {gathered} != {full}"
    same("DTensor over a CPU DeviceMesh (shard, reduce, redistribute, matmul)", *results)


def fsdp2(ours_mesh, gloo_mesh, ours, gloo):
    from torch.distributed._composable.fsdp import fully_shard
    meshes = {id(ours): ours_mesh, id(gloo): gloo_mesh}

    def run(group):
        net = model()
        for layer in net:
            if isinstance(layer, nn.Linear):
                fully_shard(layer, mesh=meshes[id(group)])
        fully_shard(net, mesh=meshes[id(group)])
        return train(net, gloo)
    on_both("FSDP2 fully_shard on CPU", run, ours, gloo)


def fsdp1(ours, gloo):
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    def run(group):
        return train(FSDP(model(), process_group=group, device_id=torch.device("cpu")), gloo)
    on_both("FSDP1 FullyShardedDataParallel on CPU", run, ours, gloo)


def main():
    faulthandler.dump_traceback_later(240, exit=True)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    gloo = dist.group.WORLD
    ours = dist.new_group(backend="c10d")
    w = dist.get_world_size()
    from torch.distributed.device_mesh import DeviceMesh
    ours_mesh = DeviceMesh.from_group(ours, "cpu")
    gloo_mesh = DeviceMesh.from_group(gloo, "cpu")

    compiled_ddp(ours, gloo)
    dtensor(ours_mesh, gloo_mesh)
    fsdp2(ours_mesh, gloo_mesh, ours, gloo)
    fsdp1(ours, gloo)

    dist.barrier(group=gloo)
    if dist.get_rank() == 0:
        print(f"torch2_features_test: all features agree with gloo (world {w}, "
              f"torch {torch.__version__})")
    common.finish(ours, reference=True)


if __name__ == "__main__":
    if int(torch.__version__.split(".")[0]) < 2:
        sys.exit("torch2_features_test needs torch 2.x")
    main()
