"""zero::clipGradNorm (c10d/layers/zero/grad_norm.h) against torch.nn.utils.clip_grad_norm_, bit for
bit, on one-element fp32 gradients (whose norm is the element itself in both), for many norms and
max norms. torch's clip_coef is reciprocal(total_norm + 1e-6) * max_norm in fp32; the test also
checks that its cases tell that apart from the quotient computed in double, so it can fail.

  clip_vs_torch.py --dump build/bin/clip_dump
"""
import argparse
import subprocess
import sys

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True, help="the clip_dump binary")
    args = ap.parse_args()
    gen = torch.Generator().manual_seed(2024)
    cases = []
    for _ in range(4000):
        g = float((torch.rand(1, generator=gen, dtype=torch.float64) * 40 - 20).float())
        m = float(torch.rand(1, generator=gen, dtype=torch.float64)) * 1.2 * abs(g)
        cases.append((g, m))
    want = []
    once_differs = 0
    for g, m in cases:
        p = torch.zeros(1, requires_grad=True)
        p.grad = torch.tensor([g], dtype=torch.float32)
        torch.nn.utils.clip_grad_norm_([p], m)
        want.append(p.grad.item())
        coef = min(m / (abs(g) + 1e-6), 1.0)
        once = float(torch.tensor([g], dtype=torch.float32) * torch.tensor(coef, dtype=torch.float32))
        once_differs += once != want[-1]
    stdin = "".join("%s %s\n" % (g.hex(), m.hex()) for g, m in cases)
    out = subprocess.run([args.dump], input=stdin, stdout=subprocess.PIPE, text=True, check=True)
    got = [float.fromhex(x) for x in out.stdout.split()]
    bad = sum(1 for a, b in zip(got, want) if a != b) + abs(len(got) - len(want))
    for (g, m), a, b in zip(cases, got, want):
        if a != b:
            print("first mismatch: g %s max_norm %s: ours %s, torch %s"
                  % (g.hex(), m.hex(), a.hex(), b.hex()))
            break
    print("torch %s: %d cases, %d mismatches; the coefficient in double rounded once would "
          "differ from torch in %d" % (torch.__version__, len(cases), bad, once_differs))
    if once_differs == 0:
        print("the cases do not tell the roundings apart")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
