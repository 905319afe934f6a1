#!/usr/bin/env python3
"""No dynamic symbol defined by libc10d (or its store libraries) is also defined by libtorch.

Both define C++ entities in namespace c10d; ours live in the inline namespace c10d::v1
(c10d/base/abi.h), so their mangled names differ. Compares `nm -D --defined-only` of each of
ours with libtorch_cpu.so and libtorch.so (found next to the torch module the plugin is built
for). Usage: symbols_vs_torch.py TORCH_LIBRARY_DIR OUR_LIBRARY...
"""
import os
import subprocess
import sys

# Defined in every shared object by the linker; not ours nor torch's.
LINKER = {"_edata", "_end", "__bss_start", "_init", "_fini"}


def defined(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True,
                         check=True).stdout
    names = {ln.split()[-1] for ln in out.splitlines() if ln.strip()}
    return {n.split("@")[0] for n in names} - LINKER


torch_dir, ours = sys.argv[1], sys.argv[2:]
torch_libs = [os.path.join(torch_dir, n) for n in ("libtorch_cpu.so", "libtorch.so")]
torch_libs = [t for t in torch_libs if os.path.exists(t)]
if not torch_libs:
    sys.exit(f"symbols_vs_torch: no libtorch_cpu.so / libtorch.so in {torch_dir}")
torch_syms = {t: defined(t) for t in torch_libs}
clashes = 0
for lib in ours:
    mine = defined(lib)
    for t, theirs in torch_syms.items():
        both = sorted(mine & theirs)
        print(f"{os.path.basename(lib)} ({len(mine)} defined) vs {os.path.basename(t)} "
              f"({len(theirs)}): {len(both)} defined by both")
        for name in both[:20]:
            demangled = subprocess.run(["c++filt", name], capture_output=True, text=True).stdout
            print(f"  {name}  ({demangled.strip()})")
        clashes += len(both)
sys.exit(1 if clashes else 0)
