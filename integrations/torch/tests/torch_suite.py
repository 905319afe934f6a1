#!/usr/bin/env python3
"""Runs torch's own distributed test suite (DistributedTest._DistTestBase from
torch/testing/_internal/distributed/distributed_test.py, the suite behind torch's
test/distributed/test_distributed_spawn.py) on torch's gloo or on our backend "c10d", so parity
with gloo is measured.

  PYTHONPATH=build/python:integrations/torch \\
  nice -n 10 /usr/bin/python3 integrations/torch/tests/torch_suite.py --backend c10d \\
      [--world-size 3] [-k PATTERN ...] [TEST_NAME ...] [--out results.json] [--timeout 120]

Selection: TEST_NAMEs exactly, and/or -k PATTERN (a substring, or an fnmatch pattern when it has
* ? or [; several -k are or-ed); none selects the whole suite (alphabetical). --tests-from FILE
runs the tests named in an earlier --out file (the ones that ran), e.g. the same subset on the
other backend. --budget S stops starting new tests after S seconds (the rest are left out of
--out).

What it reproduces of torch's harness (run_test.py + test_distributed_spawn.py, not shipped by
Debian): env BACKEND, WORLD_SIZE, TEMP_DIR (a fresh directory) and INIT_METHOD (file:// there, as
run_test.py's with-init-file pass; the barrier-timeout tests require file://), and the class
    class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
        def setUp(self): super().setUp(); self._spawn_processes(); cudnn.flags(...).__enter__()
Each test runs its WORLD_SIZE ranks in processes started with the "spawn" method, which re-import
this file: its top imports c10d_torch (registers backend "c10d") before distributed_test.

Structure: this script (the driver, which imports no torch) runs a worker process
(TORCH_SUITE_ROLE=worker, same file) that runs the tests one by one with unittest and appends one
JSON line per test start/end to an events file. A test still running after --timeout (plus 60 s
for spawning and tearing down) has the worker's whole process group killed, is recorded as an
error, and a new worker goes on with the next test. The harness's own join timeout
(DISTRIBUTED_TESTS_DEFAULT_TIMEOUT, and TIMEOUT_OVERRIDE capped) is set to --timeout too, so a
hang normally ends inside the harness with the ranks' tracebacks.

--out FILE: {test: {"status": passed|failed|skipped|error, "message": skip reason or the first
line of the error (the failing rank's exception line), "seconds": s}}; full tracebacks go to
FILE.log. "failed" = an assertion failed (in the test or a rank's AssertionError); "error" =
any other exception, a timeout or a crash.

Backend-name skips (--as-gloo, backend c10d only): distributed_test decides many skips at import
from the backend's NAME: feature sets in common_distributed.DistTestCases (backend_feature["ddp"],
["subgroup"], ...) and literal checks such as @sandcastle_skip_if(BACKEND != "gloo", ...).
  off   : as torch ships it (c10d is an unknown name).
  lists : before distributed_test is imported, "c10d" is added to every DistTestCases set that
          holds "gloo" (backend_feature and skip_collective) and to backend_feature["plugin"]
          (torch's own hook for third-party backends).
  full  : (default) lists, and distributed_test is imported with os.environ["BACKEND"]="gloo",
          so every import-time skip decorator is decided as for gloo; its module global BACKEND
          is then set to a str "c10d" that also compares equal to "gloo" (_GlooAlias): the
          groups the tests create are c10d's, and the in-body `if BACKEND == "gloo"` branches
          (e.g. the CPU model of _test_DistributedDataParallel) take gloo's path.
--analyze-skips prints how many tests are skipped at collection under each setting.

Other deviations from torch's harness, all stated: OMP_NUM_THREADS=1 unless set (3 ranks on a
2-core machine); --start-method fork (optional, not the default) starts the ranks with
MultiProcessTestCase._start_processes(fork context) instead of _spawn_processes(), as torch's
former test_distributed_fork.py did; --replicated-ddp auto (see below) where torch 1.13's
ReplicatedTensor DDP mode cannot be imported (see --help).

Works with torch 1.13 (Debian 12) and is written for torch 2.x (Debian 13's 2.6) as well: it uses
only names both versions have (TestDistBackend, DistributedTest, DistTestCases,
MultiProcessTestCase's spawn); expecttest, which torch's common_utils imports but Debian 12 does
not package, is replaced by a minimal stub when it is missing.
"""
import argparse
import fnmatch
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
ROLE = os.environ.get("TORCH_SUITE_ROLE")  # "worker": the worker and (inherited) its spawned ranks

for _p in (os.path.join(ROOT, "build", "python"), os.path.join(ROOT, "integrations", "torch")):
    if os.path.isdir(_p) and _p not in sys.path:
        sys.path.append(_p)  # after PYTHONPATH, which wins


def _install_expecttest_stub():
    try:
        import expecttest  # noqa: F401
    except ImportError:
        m = types.ModuleType("expecttest")
        m.ACCEPT = False

        class TestCase(unittest.TestCase):
            def assertExpectedInline(self, actual, expect, skip=0):
                self.assertEqual(str(actual).strip(), str(expect).strip())

        m.TestCase = TestCase
        sys.modules["expecttest"] = m


def _widen_feature_lists(name, common_distributed):
    """Adds `name` wherever gloo is named in DistTestCases (and to backend_feature["plugin"])."""
    changed = []
    cases = common_distributed.DistTestCases
    for attr in ("backend_feature", "skip_collective"):
        for key, backends in getattr(cases, attr, {}).items():
            if "gloo" in backends and name not in backends:
                backends.add(name)
                changed.append(f"{attr}[{key!r}]")
    plugin = cases.backend_feature.get("plugin")
    if plugin is not None and name not in plugin:
        plugin.add(name)
        changed.append("backend_feature['plugin']")
    return changed


class _GlooAlias(str):
    """--as-gloo full: distributed_test's module global BACKEND. Its value is "c10d" (what
    init_process_group, get_backend and messages see), but `BACKEND == "gloo"` and
    `BACKEND in [..., "gloo"]` in test bodies are true, so they take gloo's (CPU) paths."""

    def __eq__(self, other):
        return str.__eq__(self, other) or other == "gloo"

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = str.__hash__


if ROLE == "worker":
    # Before torch.testing: the harness's own join timeout (read at import) and expecttest.
    _install_expecttest_stub()
    BACKEND = os.environ["BACKEND"]
    AS_GLOO = os.environ.get("TORCH_SUITE_AS_GLOO", "off") if BACKEND != "gloo" else "off"
    START_METHOD = os.environ.get("TORCH_SUITE_START_METHOD", "spawn")
    if BACKEND == "c10d":
        import c10d_torch  # noqa: F401  registers backend "c10d" (in every spawned rank too)
    import torch
    from torch.testing._internal import common_distributed

    _cap = int(os.environ.get("DISTRIBUTED_TESTS_DEFAULT_TIMEOUT", "300"))
    _override = getattr(common_distributed, "TIMEOUT_OVERRIDE", {})
    for _k, _v in list(_override.items()):
        _override[_k] = min(_v, _cap)
    WIDENED = _widen_feature_lists(BACKEND, common_distributed) if AS_GLOO in ("lists", "full") else []
    if AS_GLOO == "full":
        os.environ["BACKEND"] = "gloo"
    try:
        from torch.testing._internal.distributed import distributed_test as dt
    finally:
        os.environ["BACKEND"] = BACKEND
    dt.BACKEND = _GlooAlias(BACKEND) if AS_GLOO == "full" else BACKEND

    # torch 1.13's TestDistBackend._run turns on DDP-with-ReplicatedTensor, whose first DDP import
    # of torch.distributed._shard fails under Python >= 3.11 (a dataclass field default that
    # Python 3.11 rejects: "ValueError: mutable default ... TensorProperties"), on every backend.
    # --replicated-ddp auto (the driver's default) turns it off only where that import fails.
    REPLICATED_DDP = os.environ.get("TORCH_SUITE_REPLICATED_DDP", "on")
    if REPLICATED_DDP == "auto":
        try:
            import torch.distributed._shard  # noqa: F401
            REPLICATED_DDP = "on"
        except Exception:
            REPLICATED_DDP = "off"
        os.environ["TORCH_SUITE_REPLICATED_DDP"] = REPLICATED_DDP  # the same in every rank
    if REPLICATED_DDP == "off":
        try:
            from torch.nn.parallel import _replicated_tensor_ddp_utils as _rt

            _rt._set_ddp_with_replicated_tensor = lambda value: None  # stays off
        except ImportError:  # torch 2.x: no such switch
            pass

    class TestDistBackendWithSpawn(dt.TestDistBackend, dt.DistributedTest._DistTestBase):
        # As torch's test/distributed/test_distributed_spawn.py (1.13 and 2.x alike).
        def setUp(self):
            super().setUp()
            if START_METHOD == "spawn":
                self._spawn_processes()
            else:  # --start-method fork: as torch's former test_distributed_fork.py
                self._start_processes(torch.multiprocessing.get_context(START_METHOD).Process)
            torch.backends.cudnn.flags(enabled=True, allow_tf32=False).__enter__()


# ---------------------------------------------------------------- worker

def _collected():
    """{test name: skip reason or None} as unittest sees them before running (import-time skips)."""
    out = {}
    for name in sorted(dir(TestDistBackendWithSpawn)):
        if not name.startswith("test"):
            continue
        fn = getattr(TestDistBackendWithSpawn, name)
        if not callable(fn):
            continue
        out[name] = getattr(fn, "__unittest_skip_why__", None) if getattr(fn, "__unittest_skip__", False) else None
    return out


_FILE_LINE = re.compile(r'^\s*File "')
_PROC_HEADER = re.compile(r"^(?:RuntimeError: )?Process (\d+) exited with error code \d+ and exception:\s*$",
                          re.M)


def _exception_line(text):
    """The exception line of a traceback text: the first unindented line after the last frame."""
    lines = text.splitlines()
    last = -1
    for i, line in enumerate(lines):
        if _FILE_LINE.match(line):
            last = i
    for line in lines[last + 1:]:
        if line.strip() and not line[0].isspace():
            return line.strip()
    for line in lines:
        if line.strip():
            return line.strip()
    return ""


def _classify(err_text, unittest_failure):
    """(status, message) for a test that did not pass."""
    m = _PROC_HEADER.search(err_text)
    if m:
        rest = err_text[m.end():]
        nxt = _PROC_HEADER.search(rest)
        block = rest[:nxt.start()] if nxt else rest
        line = _exception_line(block)
        msg = f"rank {m.group(1)}: {line}"
        status = "failed" if line.startswith("AssertionError") else "error"
        return status, msg
    line = _exception_line(err_text)
    if unittest_failure:
        # The parent's own assertions are about exit codes; only a rank's assertion is a "failed".
        status = "error" if "exit code" in err_text or "timed out" in err_text else "failed"
    else:
        status = "error"
    return status, line


class _EventResult(unittest.TestResult):
    def __init__(self, emit):
        super().__init__()
        self.emit = emit
        self.outcome = None

    def _set(self, status, message="", detail=""):
        if self.outcome is None or self.outcome[0] == "passed":
            self.outcome = (status, message, detail)

    def addSuccess(self, test):
        self._set("passed")

    def addFailure(self, test, err):
        detail = self._exc_info_to_string(err, test)
        self._set(*_classify(detail, True), detail)

    def addError(self, test, err):
        detail = self._exc_info_to_string(err, test)
        self._set(*_classify(detail, False), detail)

    def addSkip(self, test, reason):
        self._set("skipped", reason)

    def addExpectedFailure(self, test, err):
        self._set("passed", "expected failure")

    def addUnexpectedSuccess(self, test):
        self._set("failed", "unexpected success")


def worker_main():
    spec_path = os.environ["TORCH_SUITE_SPEC"]
    with open(spec_path) as f:
        spec = json.load(f)
    if spec.get("list"):
        with open(spec["list"], "w") as f:
            json.dump({"torch": torch.__version__, "widened": WIDENED, "tests": _collected(),
                       "replicated_ddp": REPLICATED_DDP}, f)
        return
    events = open(spec["events"], "a")

    def emit(**kw):
        events.write(json.dumps(kw) + "\n")
        events.flush()
        os.fsync(events.fileno())

    for name in spec["tests"]:
        emit(event="start", test=name, t=time.time())
        t0 = time.time()
        result = _EventResult(emit)
        try:
            TestDistBackendWithSpawn(name).run(result)
            outcome = result.outcome or ("error", "no outcome recorded", "")
        except BaseException as e:  # the harness itself broke
            import traceback
            outcome = ("error", f"harness: {type(e).__name__}: {e}".splitlines()[0],
                       traceback.format_exc())
        emit(event="end", test=name, status=outcome[0], message=outcome[1],
             detail=outcome[2][-20000:], seconds=round(time.time() - t0, 1))


# ---------------------------------------------------------------- driver

def _worker_env(args, temp_dir, spec_path, as_gloo):
    env = dict(os.environ)
    env.update({
        "TORCH_SUITE_ROLE": "worker",
        "TORCH_SUITE_SPEC": spec_path,
        "TORCH_SUITE_AS_GLOO": as_gloo,
        "BACKEND": args.backend,
        "WORLD_SIZE": str(args.world_size),
        "TEMP_DIR": temp_dir,
        "INIT_METHOD": "file://" + os.path.join(temp_dir, "shared_init_file"),
        "DISTRIBUTED_TESTS_DEFAULT_TIMEOUT": str(args.timeout),
        "PYTHONUNBUFFERED": "1",
        "TORCH_SUITE_START_METHOD": args.start_method,
        "TORCH_SUITE_REPLICATED_DDP": args.replicated_ddp,
    })
    env.setdefault("OMP_NUM_THREADS", "1")
    if args.engine:
        env["C10D_TORCH_ENGINE"] = args.engine
    for d in ("barrier", "test_dir"):
        os.makedirs(os.path.join(temp_dir, d), exist_ok=True)
    return env


def _list(args, as_gloo, work):
    spec = os.path.join(work, f"list_{args.backend}_{as_gloo}.json")
    out = spec + ".out"
    with open(spec, "w") as f:
        json.dump({"list": out}, f)
    temp_dir = tempfile.mkdtemp(prefix="torch_suite_", dir=work)
    r = subprocess.run([args.python, os.path.abspath(__file__)],
                       env=_worker_env(args, temp_dir, spec, as_gloo),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.exit(f"listing the suite failed (rc {r.returncode}):\n{r.stdout[-4000:]}")
    with open(out) as f:
        return json.load(f)


def _select(all_tests, args):
    names = list(all_tests)
    if args.tests_from:
        with open(args.tests_from) as f:
            earlier = json.load(f)
        keep = set(earlier)
        names = [n for n in names if n in keep]
    if args.tests or args.k:
        chosen = []
        for n in names:
            if n in args.tests:
                chosen.append(n)
                continue
            for pat in args.k or []:
                if any(c in pat for c in "*?[") and fnmatch.fnmatchcase(n, pat):
                    chosen.append(n)
                    break
                if not any(c in pat for c in "*?[") and pat in n:
                    chosen.append(n)
                    break
        unknown = [t for t in args.tests if t not in all_tests]
        if unknown:
            sys.exit(f"unknown tests: {unknown}")
        names = chosen
    return names


def _analyze(args, work):
    """Collection-time skips under each backend-name setting."""
    rows = []
    saved = args.backend
    args.backend = "gloo"
    gloo = _list(args, "off", work)["tests"]
    args.backend = "c10d"
    runs = {m: _list(args, m, work) for m in ("off", "lists", "full")}
    args.backend = saved
    total = len(gloo)
    gs = {n for n, r in gloo.items() if r}
    rows.append(f"suite: {total} tests (torch {runs['off']['torch']}); skipped at collection:")
    rows.append(f"  gloo            : {len(gs)}")
    for m, res in runs.items():
        cs = {n for n, r in res["tests"].items() if r}
        rows.append(f"  c10d --as-gloo {m:<5}: {len(cs)}  (skipped on c10d but not on gloo: "
                    f"{len(cs - gs)}; on gloo but not c10d: {len(gs - cs)})")
        if m == "lists":
            rows.append(f"    widened: {', '.join(res['widened'])}")
    off = {n for n, r in runs["off"]["tests"].items() if r}
    by_reason = {}
    for n in sorted(off - gs):
        by_reason.setdefault(runs["off"]["tests"][n], []).append(n)
    rows.append("  name-only skips with --as-gloo off, by reason:")
    for reason, ns in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
        rows.append(f"    {len(ns):3d}  {reason}")
    print("\n".join(rows))


def _summary(results):
    counts = {s: 0 for s in ("passed", "failed", "skipped", "error")}
    for r in results.values():
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return counts


def driver_main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", choices=["gloo", "c10d"], default="c10d")
    ap.add_argument("--world-size", type=int, default=3)
    ap.add_argument("-k", action="append", metavar="PATTERN",
                    help="substring, or fnmatch pattern if it has * ? [ (repeatable, or-ed)")
    ap.add_argument("tests", nargs="*", help="exact test names")
    ap.add_argument("--tests-from", metavar="JSON", help="run the tests named in an earlier --out")
    ap.add_argument("--out", default=None, help="JSON results (default /tmp/torch_suite_BACKEND.json)")
    ap.add_argument("--timeout", type=int, default=120, help="per-test timeout, seconds")
    ap.add_argument("--budget", type=float, default=0, help="start no test after this many seconds")
    ap.add_argument("--as-gloo", choices=["off", "lists", "full"], default="full",
                    help="treat c10d like gloo in the suite's name-based skips (see the top)")
    ap.add_argument("--start-method", choices=["spawn", "fork"], default="spawn",
                    help="how each test starts its ranks: spawn (torch's test_distributed_spawn, "
                    "default) or fork (torch's former test_distributed_fork; several times faster "
                    "here, as the ranks do not re-import torch)")
    ap.add_argument("--replicated-ddp", choices=["auto", "on", "off"], default="auto",
                    help="torch 1.13's harness runs DDP with ReplicatedTensor (on); auto turns that "
                    "off where torch.distributed._shard cannot be imported (torch 1.13 on Python "
                    "3.11), which otherwise fails every such DDP test on every backend")
    ap.add_argument("--engine", default=None, help="c10d engine ($C10D_TORCH_ENGINE)")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--strict", action="store_true",
                    help="exit 1 if a test failed, erred or skipped (for ctest, on named tests)")
    ap.add_argument("--list", action="store_true", help="print the selected tests and exit")
    ap.add_argument("--analyze-skips", action="store_true",
                    help="count collection-time skips: gloo vs c10d under each --as-gloo setting")
    args = ap.parse_args()
    args.tests = args.tests or []
    as_gloo = args.as_gloo if args.backend != "gloo" else "off"
    out_path = args.out or f"/tmp/torch_suite_{args.backend}.json"
    work = tempfile.mkdtemp(prefix="torch_suite_")

    if args.analyze_skips:
        _analyze(args, work)
        return 0
    listing = _list(args, as_gloo, work)
    collected = listing["tests"]
    names = _select(collected, args)
    if args.list:
        for n in names:
            print(n + (f"  [skip: {collected[n]}]" if collected[n] else ""))
        return 0
    print(f"torch {listing['torch']}, backend {args.backend} (as-gloo {as_gloo}"
          f"{': widened ' + ', '.join(listing['widened']) if listing['widened'] else ''}), "
          f"world size {args.world_size}, {args.start_method}, replicated-ddp "
          f"{listing.get('replicated_ddp')}, {len(names)} tests, "
          f"timeout {args.timeout}s", flush=True)

    results = {}
    log = open(out_path + ".log", "w")

    def save():
        with open(out_path + ".tmp", "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)
        os.replace(out_path + ".tmp", out_path)

    def record(name, status, message, seconds, detail=""):
        results[name] = {"status": status, "message": message, "seconds": seconds}
        if detail:
            log.write(f"===== {name}: {status}\n{detail}\n")
            log.flush()
        save()
        print(f"[{len(results)}/{len(names)}] {name}: {status}"
              f"{' (' + message[:160] + ')' if message and status != 'passed' else ''} {seconds}s",
              flush=True)

    t_start = time.time()
    pending = list(names)
    n_worker = 0
    stop = False
    while pending and not stop:
        n_worker += 1
        spec = os.path.join(work, f"spec{n_worker}.json")
        events = os.path.join(work, f"events{n_worker}.jsonl")
        temp_dir = tempfile.mkdtemp(prefix="torch_suite_", dir=work)
        with open(spec, "w") as f:
            json.dump({"tests": pending, "events": events}, f)
        open(events, "w").close()
        wlog = open(os.path.join(work, f"worker{n_worker}.log"), "w")
        proc = subprocess.Popen([args.python, os.path.abspath(__file__)],
                                env=_worker_env(args, temp_dir, spec, as_gloo),
                                stdout=wlog, stderr=subprocess.STDOUT, start_new_session=True)
        current, current_t0, pos = None, None, 0
        killed = None
        while True:
            with open(events) as f:
                f.seek(pos)
                chunk = f.read()
            # only whole lines
            cut = chunk.rfind("\n") + 1
            pos += len(chunk[:cut].encode())
            for line in chunk[:cut].splitlines():
                ev = json.loads(line)
                if ev["event"] == "start":
                    current, current_t0 = ev["test"], time.time()
                else:
                    record(ev["test"], ev["status"], ev["message"], ev["seconds"], ev.get("detail", ""))
                    pending.remove(ev["test"])
                    current = None
                    if args.budget and time.time() - t_start > args.budget:
                        stop = True
            if stop:
                killed = "budget"
            elif current and time.time() - current_t0 > args.timeout + 60:
                killed = "timeout"
            if killed:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
                break
            if proc.poll() is not None:
                # drain events written just before exit
                with open(events) as f:
                    f.seek(pos)
                    tail = f.read()
                for line in tail.splitlines():
                    ev = json.loads(line)
                    if ev["event"] == "end":
                        record(ev["test"], ev["status"], ev["message"], ev["seconds"], ev.get("detail", ""))
                        pending.remove(ev["test"])
                        current = None
                    else:
                        current = ev["test"]
                break
            time.sleep(0.2)
        wlog.close()
        if killed == "timeout":
            record(current, "error", f"timeout: still running after {args.timeout + 60}s "
                   "(runner killed the worker and its ranks)", round(time.time() - current_t0, 1))
            pending.remove(current)
        elif killed is None and pending:
            with open(os.path.join(work, f"worker{n_worker}.log")) as f:
                wtail = f.read()[-3000:]
            if current is None:
                sys.exit(f"worker exited (rc {proc.returncode}) before starting a test:\n{wtail}")
            record(current, "error", f"worker crashed (rc {proc.returncode})", 0, wtail)
            pending.remove(current)

    counts = _summary(results)
    left = len(names) - len(results)
    print(f"backend {args.backend}: {counts['passed']} passed, {counts['failed']} failed, "
          f"{counts['skipped']} skipped, {counts['error']} errors"
          f"{f', {left} not run (budget)' if left else ''} in {time.time() - t_start:.0f}s; "
          f"results in {out_path}", flush=True)
    return 1 if args.strict and (counts["failed"] or counts["error"] or counts["skipped"]) else 0


if __name__ == "__main__":
    if ROLE == "worker":
        worker_main()
    else:
        sys.exit(driver_main())
