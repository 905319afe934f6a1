"""Runs a training script under c10drun once with --backend gloo (torch's) and once with
--backend c10d (ours), and checks that the per-step losses agree within fp32 tolerance.

  compare_runs.py --c10drun build/bin/c10drun --nproc 2 integrations/torch/train_ddp.py [args...]

Exit status 0 when they agree; otherwise prints the first differing step.

Each run has --timeout seconds (both runs fit in ctest's 180 s). A run still going then has its
workers' Python stacks printed (the script's --watchdog, armed 15 s earlier) and is stopped, so a
hang fails the test with where it hung rather than by ctest's kill."""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile


def run(c10drun, nproc, script, backend, extra, out, timeout):
    cmd = [c10drun, "--nproc-per-node", str(nproc), sys.executable, script, "--backend", backend,
           "--out", out, "--watchdog", str(max(1, timeout - 15))] + extra
    print("+", " ".join(cmd), flush=True)
    proc = subprocess.Popen(cmd)
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()  # c10drun stops its workers, then exits
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        sys.exit(f"FAIL: the {backend} run did not end within {timeout} s")
    if rc != 0:
        sys.exit(f"FAIL: the {backend} run exited with status {rc}")
    with open(out) as f:
        return json.load(f)["losses"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--c10drun", required=True)
    parser.add_argument("--nproc", type=int, required=True)
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--atol", type=float, default=1e-5)
    parser.add_argument("--timeout", type=int, default=70, help="seconds per run (default 70)")
    parser.add_argument("script")
    parser.add_argument("extra", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ref = run(args.c10drun, args.nproc, args.script, "gloo", args.extra,
                  os.path.join(tmp, "gloo.json"), args.timeout)
        ours = run(args.c10drun, args.nproc, args.script, "c10d", args.extra,
                   os.path.join(tmp, "c10d.json"), args.timeout)
    if len(ref) != len(ours) or not ref:
        sys.exit(f"FAIL: gloo logged {len(ref)} steps, c10d {len(ours)}")
    worst = 0.0
    for step, (a, b) in enumerate(zip(ref, ours)):
        if not math.isclose(a, b, rel_tol=args.rtol, abs_tol=args.atol):
            sys.exit(f"FAIL: step {step}: gloo loss {a!r}, c10d loss {b!r} "
                     f"(rtol {args.rtol}, atol {args.atol})")
        worst = max(worst, abs(a - b))
    print(f"OK: {len(ref)} steps agree (largest difference {worst:.3g}); "
          f"first {ref[0]:.6f}, last {ref[-1]:.6f}")


if __name__ == "__main__":
    main()
