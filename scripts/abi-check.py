#!/usr/bin/env python3
"""The C ABI of libc10d against the baseline kept in the tree (abi/), with libabigail.

  abi-check.py check  LIB [--baseline abi/libc10d.abi]   exit 1 on an incompatible change
  abi-check.py update LIB [--baseline abi/libc10d.abi]   write the baseline from LIB

What is checked: the c10d_* functions of c10d/c_api.h and the types they reach (abi/c_abi.suppr
keeps libabigail to those; the C++ API makes no ABI promise across releases, docs/api.md).
Compatible: added functions; an options struct whose first member is struct_size growing at its
end (a caller's smaller struct_size still says which fields it knows; c_api.h's rules).
Incompatible: a removed function, a changed parameter or return type, a struct member moved,
retyped or removed, a struct without struct_size changing size. An incompatible change passes
only when the SONAME moved with it (C10D_ABI_VERSION in c_api.h): then update the baseline.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUPPR = os.path.join(ROOT, "abi", "c_abi.suppr")


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def generate(lib, header, out):
    """abidw of LIB's C ABI to OUT; C++ ELF symbols are left out of the corpus."""
    r = run(["abidw", "--suppressions", SUPPR, "--header-file", header, "--drop-private-types",
             "--exported-interfaces-only", "--no-corpus-path", "--no-comp-dir-path", "--short-locs",
             "--type-id-style", "hash", lib])
    if r.returncode != 0:
        sys.exit(f"abi-check: abidw {lib} failed ({r.returncode}): {r.stderr.strip()}")
    lines = [ln for ln in r.stdout.splitlines(keepends=True)
             if not re.match(r"\s*<elf-symbol name='_Z", ln)]
    with open(out, "w") as f:
        f.writelines(lines)


def soname(xml_path):
    with open(xml_path) as f:
        m = re.search(r"soname='([^']*)'", f.read(4096))
    return m.group(1) if m else ""


def sized_structs(header):
    """Names of the structs in HEADER whose first member is struct_size."""
    with open(header) as f:
        text = f.read()
    return set(re.findall(r"struct\s+(\w+)\s*\{\s*(?:size_t|uint32_t|uint64_t)\s+struct_size;", text))


def problems(report, structs):
    """The incompatible changes in an `abidiff --leaf-changes-only` REPORT (a list of strings)."""
    bad = []
    m = re.search(r"functions summary: (\d+) Removed, (\d+) Changed", report)
    if m and int(m.group(1)):
        bad.append(f"{m.group(1)} function(s) removed")
    if m and int(m.group(2)):
        bad.append(f"{m.group(2)} function(s) changed")
    m = re.search(r"variables summary: (\d+) Removed, (\d+) Changed", report)
    if m and (int(m.group(1)) or int(m.group(2))):
        bad.append("exported variables removed or changed")
    # Leaf type changes: blocks starting "'struct NAME at FILE:L:C' changed:".
    for block in re.split(r"\n(?=')", report):
        head = re.match(r"'(struct|union|enum|typedef|class)?\s*([\w:]+)[^']*' changed:", block)
        if not head:
            continue
        kind, name = head.group(1) or "", head.group(2)
        lines = [ln.strip() for ln in block.splitlines()[1:] if ln.strip()]
        size = re.search(r"type size changed from (\d+) to (\d+)", block)
        old_size = int(size.group(1)) if size else None
        grown_at_end = (kind == "struct" and name in structs and size is not None
                        and int(size.group(2)) > old_size)
        for ln in lines:
            if grown_at_end and (ln.startswith("type size changed")
                                 or re.match(r"\d+ data member insertions?:", ln)):
                continue
            ins = re.match(r"'[^']*', at offset (\d+) \(in bits\)", ln)
            if grown_at_end and ins and int(ins.group(1)) >= old_size:
                continue
            bad.append(f"{kind} {name}: {ln}")
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["check", "update"])
    ap.add_argument("library")
    ap.add_argument("--baseline", default=os.path.join(ROOT, "abi", "libc10d.abi"))
    ap.add_argument("--header", default=os.path.join(ROOT, "c10d", "c_api.h"))
    a = ap.parse_args()
    if a.mode == "update":
        generate(a.library, a.header, a.baseline)
        print(f"abi-check: wrote {a.baseline} ({soname(a.baseline)})")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        now = os.path.join(tmp, "now.abi")
        generate(a.library, a.header, now)
        r = run(["abidiff", "--leaf-changes-only", "--no-added-syms", "--suppressions", SUPPR,
                 a.baseline, now])
        if r.returncode & 3:
            sys.exit(f"abi-check: abidiff failed ({r.returncode}): {r.stderr.strip()}")
        bad = problems(r.stdout, sized_structs(a.header))
        old, new = soname(a.baseline), soname(now)
    if not bad:
        print(f"abi-check: {new}: the C ABI is compatible with the baseline ({old})")
        return 0
    print(r.stdout)
    print(f"abi-check: {len(bad)} incompatible change(s) of the C ABI against {a.baseline}:")
    for b in bad:
        print(f"  {b}")
    if old != new:
        print(f"abi-check: the SONAME moved ({old} -> {new}): allowed; update the baseline with "
              f"scripts/abi-check.py update {a.library}")
        return 0
    print(f"abi-check: the SONAME is still {new}: bump C10D_ABI_VERSION in c10d/c_api.h with an "
          "incompatible change, or keep the change compatible (docs/api.md, C ABI)")
    return 1


if __name__ == "__main__":
    sys.exit(main())
