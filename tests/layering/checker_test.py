#!/usr/bin/env python3
"""scripts/check-layering.py on small trees made here: it passes allowed includes and names
each upward one (file, line, header, rooms), so a regression in the checker cannot hide one."""
import os
import shutil
import subprocess
import sys
import tempfile

repo = os.path.abspath(sys.argv[1])
checker = os.path.join(repo, "scripts", "check-layering.py")


def run_tree(files):
    root = tempfile.mkdtemp(prefix="c10d-layering-")
    try:
        os.makedirs(os.path.join(root, "cmake"))
        shutil.copy(os.path.join(repo, "cmake", "layering.txt"), os.path.join(root, "cmake"))
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        p = subprocess.run([sys.executable, checker, root], capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr
    finally:
        shutil.rmtree(root)


failures = []
rc, out = run_tree({
    "c10d/core/a.cc": '#include "c10d/base/error.h"\n#include "c10d/store/store.h"\n#include "c10d/core/work.h"\n',
    "c10d/layers/b.cc": '#include "c10d/bootstrap/registry.h"\n',
    "tests/c.cc": '#include "c10d/backends/verbs/comm.h"\n',
})
if rc != 0 or "0 not allowed" not in out:
    failures.append(f"allowed includes were refused (rc {rc}):\n{out}")

rc, out = run_tree({
    "c10d/core/a.cc": '// x\n#include "c10d/backends/nccl/cuda_stream.h"\n',
    "c10d/base/b.h": '#include "c10d/store/store.h"\n',
    "c10d/store/c.cc": '#include "c10d/store/etcd/etcd_store.h"\n',
    "c10d/layers/d.cc": '#include "c10d/backends/gloo/config.h"\n',
})
expected = [
    "c10d/core/a.cc:2: includes c10d/backends/nccl/cuda_stream.h (room nccl)",
    "c10d/base/b.h:1: includes c10d/store/store.h (room store), but room base stands on nothing",
    "c10d/store/c.cc:1: includes c10d/store/etcd/etcd_store.h (room etcd_store)",
    "c10d/layers/d.cc:1: includes c10d/backends/gloo/config.h (room gloo)",
    "4 not allowed",
]
if rc != 1:
    failures.append(f"upward includes: exit status {rc}, expected 1:\n{out}")
for e in expected:
    if e not in out:
        failures.append(f"upward includes: '{e}' not in the report:\n{out}")

for f in failures:
    print("FAIL:", f)
print("checker_test:", "FAILED" if failures else "ok")
sys.exit(1 if failures else 0)
