#!/usr/bin/env python3
"""scripts/abi-check.py's rules on small libraries built here: a struct with struct_size grown at
its end and an added function pass; a member inserted in the middle, a removed function, a changed
parameter type and a struct without struct_size grown fail; each failure passes when the SONAME
moved with it. Usage: abi_check_test.py REPO CC"""
import os
import subprocess
import sys
import tempfile

repo, cc = sys.argv[1], sys.argv[2]
check = os.path.join(repo, "scripts", "abi-check.py")

BASE = ("typedef struct c10d_o { uint32_t struct_size; int a; } c10d_o_t;\n"
        "typedef struct c10d_p { int x; int y; } c10d_p_t;\n",
        "int c10d_f(const c10d_o_t* o) { return o->a; }\n"
        "int c10d_g(int x) { return x; }\n"
        "int c10d_h(const c10d_p_t* p) { return p->x; }\n")
VARIANTS = {  # name: (header types, functions, compatible?)
    "same": (BASE[0], BASE[1], True),
    "grown_at_end": (BASE[0].replace("int a; }", "int a; int b; }"),
                     BASE[1].replace("o->a;", "o->a + o->b;"), True),
    "function_added": (BASE[0], BASE[1] + "int c10d_k(void) { return 1; }\n", True),
    "member_in_middle": (BASE[0].replace("struct_size; int a;", "struct_size; int b; int a;"),
                         BASE[1].replace("o->a;", "o->a + o->b;"), False),
    "function_removed": (BASE[0], BASE[1].replace("int c10d_g(int x) { return x; }\n", ""), False),
    "parameter_retyped": (BASE[0], BASE[1].replace("c10d_g(int x)", "c10d_g(long x)"), False),
    "unsized_struct_grown": (BASE[0].replace("int y; }", "int y; int z; }"), BASE[1], False),
}


def build(tmp, name, types, funcs, soname):
    d = os.path.join(tmp, name, soname)
    os.makedirs(d)
    header = os.path.join(d, "c_api.h")
    with open(header, "w") as f:
        f.write("#include <stdint.h>\n" + types)
    src = os.path.join(d, "lib.c")
    with open(src, "w") as f:
        f.write('#include "c_api.h"\n' + funcs)
    lib = os.path.join(d, "libc10d.so")
    subprocess.run([cc, "-g", "-O0", "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", lib, src],
                   check=True)
    return lib, header


def abi_check(*args):
    return subprocess.run([sys.executable, check] + list(args), capture_output=True, text=True)


failures = []
with tempfile.TemporaryDirectory() as tmp:
    lib, header = build(tmp, "base", BASE[0], BASE[1], "libc10d.so.1")
    baseline = os.path.join(tmp, "base.abi")
    r = abi_check("update", lib, "--baseline", baseline, "--header", header)
    if r.returncode:
        sys.exit(f"update failed: {r.stdout}{r.stderr}")
    for name, (types, funcs, ok) in VARIANTS.items():
        for soname in ["libc10d.so.1", "libc10d.so.2"]:
            lib, header = build(tmp, name, types, funcs, soname)
            r = abi_check("check", lib, "--baseline", baseline, "--header", header)
            expect = 0 if ok or soname.endswith(".2") else 1
            status = "ok" if r.returncode == expect else "WRONG"
            print(f"{status}: {name} ({soname}): exit {r.returncode}, expected {expect}")
            if r.returncode != expect:
                failures.append(name)
                print(r.stdout + r.stderr)
            elif not ok and soname.endswith(".1"):
                print("  " + "\n  ".join(l for l in r.stdout.splitlines() if l.startswith("  ")))
if failures:
    sys.exit(f"abi_check_test: wrong verdicts: {failures}")
print("abi_check_test: every verdict as the rules say")
