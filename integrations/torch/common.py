"""Shared by the c10d_torch scripts: the --backend/--engine/--init arguments, process group start-up
on either torch's gloo or our c10d backend, and per-step loss logging to a JSON file (what
tests/compare_runs.py compares between the two backends)."""
import argparse
import faulthandler
import json
import os
import sys

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
    parser.add_argument("--watchdog", type=float, default=0,
                        help="seconds after which a run still going prints every thread's Python "
                             "stack and exits with status 1 (default 0: never)")


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
    if args.watchdog > 0:
        faulthandler.dump_traceback_later(args.watchdog, exit=True)
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


def finish(*ours, reference: bool) -> None:
    """A script's last step: destroys `ours` (groups on our backend), then the default group if it
    is ours. When the process also made a group on torch's own gloo (`reference`), it then exits
    at once, never freeing that group: torch 1.13's ProcessGroupGloo can deadlock when freed. Its
    destructor takes the work lock holding the GIL, while a worker thread holding that lock frees
    a tensor whose Python object is gone and so waits for the GIL (seen in 1 of ~230 runs of
    train_ddp.py: ~ProcessGroupGloo under DDP's ~Reducer when main() returned, and gloo's runLoop
    in c10::TensorImpl::destroy_pyobj_if_needed). Every result is out by then, and that group is
    the reference, not the code under test: ours is destroyed as a user would destroy it (our
    group releases the GIL in its destructor for this reason)."""
    for group in ours:
        dist.destroy_process_group(group)
    if dist.is_initialized() and dist.get_backend() == "c10d":
        dist.destroy_process_group()
    if reference:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
