#!/usr/bin/env python3
"""Draws one step of a train_mlp --trace file (Chrome trace JSON) as an SVG timeline.

  scripts/trace-svg.py TRACE.json STEP OUT.svg

One row per (rank, track): the steps, each layer's compute, and the collectives from launch to
completion. The window is rank 0's step STEP, widened to cover every rank's same step.
"""
import json
import sys
from html import escape

COLORS = {"step": "#cccccc", "compute": "#4e79a7", "comm": "#f28e2b"}


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    path, step, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    events = json.load(open(path))["traceEvents"]
    names = {}
    for e in events:
        if e.get("ph") == "M" and e["name"] == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    steps = [e for e in events if e.get("cat") == "step" and e["name"] == f"step {step}"]
    if not steps:
        sys.exit(f"{path}: no 'step {step}' events")
    t0 = min(e["ts"] for e in steps)
    t1 = max(e["ts"] + e["dur"] for e in steps)
    spans = [e for e in events if e.get("ph") == "X" and e["ts"] < t1 and e["ts"] + e["dur"] > t0]
    rows = sorted({(e["pid"], e["tid"]) for e in spans})
    width, left, row_h = 1100, 260, 26
    scale = (width - left - 20) / (t1 - t0)
    height = 40 + row_h * len(rows) + 30
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="10" y="20" font-size="13">train_mlp step {step}: '
           f'{(t1 - t0) / 1000:.1f} ms ({escape(path.split("/")[-1])})</text>']
    for i, (pid, tid) in enumerate(rows):
        y = 35 + i * row_h
        label = f"rank {pid}: {names.get((pid, tid), tid)}"
        svg.append(f'<text x="10" y="{y + 16}">{escape(label)}</text>')
        svg.append(f'<line x1="{left}" y1="{y + row_h - 2}" x2="{width - 20}" '
                   f'y2="{y + row_h - 2}" stroke="#eeeeee"/>')
        for e in spans:
            if (e["pid"], e["tid"]) != (pid, tid):
                continue
            x = left + max(0.0, e["ts"] - t0) * scale
            w = max(1.0, (min(t1, e["ts"] + e["dur"]) - max(t0, e["ts"])) * scale)
            color = COLORS.get(e.get("cat"), "#999999")
            svg.append(f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{row_h - 8}" '
                       f'fill="{color}" stroke="white" stroke-width="0.5">'
                       f'<title>{escape(e["name"])}: {e["dur"] / 1000:.2f} ms</title></rect>')
            if w > 60:
                svg.append(f'<text x="{x + 3:.1f}" y="{y + 16}" fill="white">'
                           f'{escape(e["name"])}</text>')
    y = 35 + len(rows) * row_h + 15
    svg.append(f'<text x="{left}" y="{y}">0 ms</text>')
    svg.append(f'<text x="{width - 80}" y="{y}">{(t1 - t0) / 1000:.1f} ms</text>')
    svg.append("</svg>")
    open(out, "w").write("\n".join(svg) + "\n")


if __name__ == "__main__":
    main()
