"""Shared by the c10d_torch scripts: the --backend/--engine/--init arguments, process group start-up
on either torch's gloo or our c10d backend, and per-step loss logging to a JSON file (what
tests/compare_runs.py compares between the two backends)."""
import argparse
import json
import os

import torch
import torch.distributed as dist


def add_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--backend", choices=["gloo", "c10d"], default="c10d",
                        help="torch's gloo or ours (default c10d)")
    parser.add_argument("--engine", default=None,
                        help="c10d engine under backend c10d: verbs (default) or gloo")
    parser.add_argument("--init", choices=["env", "tcp", "file"], default="env",
                        help="init method (the URL is built from c10drun's env:// variables)")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--out", default=None, help="rank 0 writes its per-step losses here (JSON)")


def init_method(kind: str) -> str:
    addr, port = os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]
    if kind == "env":
        return "env://"
    if kind == "tcp":
        return f"tcp://{addr}:{port}"
    # One file per launch: every rank of a launch has the same launcher (parent) and MASTER_PORT,
    # and no two live launches share both. (A port alone may repeat over a long test run, and a
    # stale store file would hand this launch an old job's keys.)
    return f"file:///tmp/c10d_torch_init_{os.getppid()}_{port}"


def init(args) -> None:
    """Starts the default group on args.backend. Importing c10d_torch registers backend "c10d"."""
    if args.backend == "c10d":
        import c10d_torch
        if args.engine:
            c10d_torch.set_engine(args.engine)
    kwargs = {}
    if args.init != "env":
        kwargs = dict(rank=int(os.environ["RANK"]), world_size=int(os.environ["WORLD_SIZE"]))
    dist.init_process_group(args.backend, init_method=init_method(args.init), **kwargs)


def write_losses(args, losses, extra=None) -> None:
    if args.out and dist.get_rank() == 0:
        record = {"backend": args.backend, "world_size": dist.get_world_size(), "losses": losses}
        record.update(extra or {})
        with open(args.out, "w") as f:
            json.dump(record, f)


def seeded(seed: int) -> torch.Generator:
    g = torch.Generator()
    g.manual_seed(seed)
    return g
