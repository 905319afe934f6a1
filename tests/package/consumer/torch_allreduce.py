"""The installed torch plugin (python3-c10d-torch) on the ranks c10drun starts: an allreduce
through torch.distributed with backend "c10d", checked against the sum computed here."""
import torch
import torch.distributed as dist

import c10d_torch  # noqa: F401 - registers backend "c10d"

dist.init_process_group("c10d")
rank, n = dist.get_rank(), dist.get_world_size()
x = torch.arange(1000, dtype=torch.float32) * (rank + 1)
dist.all_reduce(x)
expected = torch.arange(1000, dtype=torch.float32) * (n * (n + 1) // 2)
assert torch.equal(x, expected), f"rank {rank}: {x[:4]} != {expected[:4]}"
dist.destroy_process_group()
print(f"rank {rank} of {n}: torch allreduce on backend c10d correct (torch {torch.__version__})")
