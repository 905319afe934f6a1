#!/usr/bin/env python3
"""Checks the last ctest run in BUILD_DIR against .ci/components (run by scripts/test.sh in CI).

Each component listed there must have had at least its minimum number of tests run and passed;
a component that was not built (no tests registered) or whose tests were skipped fails, with the
reason. Any skipped test that no `skip` line allows fails too, reported with its skip message.

Reads BUILD_DIR/ctest-junit.xml (ctest --output-junit: the tests of the run and their status and
output) and the registered tests from `ctest -N --show-only=json-v1` (names and labels). Tests
that the run's filters (-R, -LE, ...) left out count neither way.

Usage: scripts/check-components.py BUILD_DIR [--components FILE] [--junit FILE]
Exit status: 0 all OK, 1 a check failed, 2 bad input (unreadable files, a malformed list).
"""

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import OrderedDict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_COMPONENTS = os.path.join(ROOT, ".ci", "components")
JUNIT_NAME = "ctest-junit.xml"


class InputError(Exception):
    """Input the check cannot work from (exit status 2)."""


class Component:
    def __init__(self, name, selector, minimum, cmake_line, off_setting, where):
        self.name = name
        self.selector = selector
        self.minimum = minimum
        self.cmake_line = cmake_line
        self.off_setting = off_setting  # (variable, value) of CMakeCache.txt that turns it off
        if selector.startswith("label:"):
            self.label = selector[len("label:"):]
            self.regex = None
        else:
            self.label = None
            self.regex = compile_regex(selector, where)

    def matches(self, name, labels):
        if self.label is not None:
            return self.label in labels
        return self.regex.search(name) is not None

    def describe(self):
        if self.label is not None:
            return "labelled '%s'" % self.label
        return "named '%s'" % self.selector


class SkipRule:
    def __init__(self, test_regex, message_regex, reason, where):
        self.test_regex = compile_regex(test_regex, where)
        self.message_regex = compile_regex(message_regex, where)
        self.reason = reason

    def allows(self, name, message):
        return (self.test_regex.search(name) is not None
                and self.message_regex.search(message) is not None)


def compile_regex(text, where):
    try:
        return re.compile(text)
    except re.error as e:
        raise InputError("%s: bad regex '%s': %s" % (where, text, e))


def read_components(path):
    """The `component` and `skip` lines of the list (shell-style quoting, # comments)."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
    except OSError as e:
        raise InputError("cannot read the component list: %s" % e)
    components, rules, names = [], [], set()
    for number, line in enumerate(lines, 1):
        where = "%s:%d" % (path, number)
        try:
            fields = shlex.split(line, comments=True)
        except ValueError as e:
            raise InputError("%s: %s" % (where, e))
        if not fields:
            continue
        kind, args = fields[0], fields[1:]
        if kind == "component":
            if len(args) not in (4, 5):
                raise InputError("%s: expected: component NAME SELECTOR MIN CMAKE_LINE "
                                 "[VARIABLE=VALUE], got %d field(s) after 'component'"
                                 % (where, len(args)))
            name, selector, minimum, cmake_line = args[:4]
            off_setting = None
            if len(args) == 5:
                variable, eq, value = args[4].partition("=")
                if not eq or not variable:
                    raise InputError("%s: expected VARIABLE=VALUE, got '%s'" % (where, args[4]))
                off_setting = (variable, value)
            if not re.fullmatch(r"[1-9][0-9]*", minimum):
                raise InputError("%s: MIN must be a positive integer, got '%s'" % (where, minimum))
            if name in names:
                raise InputError("%s: component '%s' is listed twice" % (where, name))
            names.add(name)
            components.append(Component(name, selector, int(minimum), cmake_line, off_setting,
                                        where))
        elif kind == "skip":
            if len(args) != 3:
                raise InputError("%s: expected: skip TEST_REGEX MESSAGE_REGEX REASON, got %d "
                                 "field(s) after 'skip'" % (where, len(args)))
            rules.append(SkipRule(args[0], args[1], args[2], where))
        else:
            raise InputError("%s: unknown line kind '%s' (component or skip)" % (where, kind))
    if not components:
        raise InputError("%s: no component lines" % path)
    return components, rules


def registered_tests(build_dir):
    """{name: set(labels)} of every test registered in build_dir (with gtest_discover_tests'
    <target>_NOT_BUILT placeholders for test binaries not built yet)."""
    ctest = shutil.which("ctest")
    if ctest is None:
        raise InputError("ctest is not on PATH (needed to list the registered tests)")
    proc = subprocess.run([ctest, "--test-dir", build_dir, "-N", "--show-only=json-v1"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise InputError("ctest -N --show-only=json-v1 in %s failed (exit %d): %s"
                         % (build_dir, proc.returncode, proc.stderr.strip()))
    try:
        tests = json.loads(proc.stdout)["tests"]
    except (ValueError, KeyError) as e:
        raise InputError("cannot read ctest's test list of %s: %s" % (build_dir, e))
    result = {}
    for test in tests:
        labels = set()
        for prop in test.get("properties", []):
            if prop.get("name") == "LABELS":
                labels.update(prop.get("value", []))
        result[test["name"]] = labels
    return result


def read_cache(build_dir):
    """{variable: value} of BUILD_DIR/CMakeCache.txt ({} when there is none)."""
    cache = {}
    try:
        with open(os.path.join(build_dir, "CMakeCache.txt"), encoding="utf-8") as f:
            for line in f:
                m = re.match(r"([A-Za-z0-9_.+-]+):[A-Z]+=(.*)$", line.rstrip("\n"))
                if m:
                    cache[m.group(1)] = m.group(2)
    except OSError:
        pass
    return cache


def cmake_bool(value):
    """CMake's spelling-independent truth value, or the value itself when not a boolean."""
    v = value.upper()
    if v in ("ON", "1", "YES", "TRUE", "Y"):
        return "ON"
    if v in ("OFF", "0", "NO", "FALSE", "N", "IGNORE", "") or v.endswith("NOTFOUND"):
        return "OFF"
    return v


# gtest prints "<file>:<line>: Skipped", then the GTEST_SKIP() message, then "[  SKIPPED ] <test>".
GTEST_SKIP_RE = re.compile(r"^[^\n]*:\d+: Skipped\n(.*?)\n?\[  SKIPPED \] ", re.M | re.S)


def skip_message(output):
    """The reason a test gave for skipping, recovered from its output."""
    messages = []
    for m in GTEST_SKIP_RE.finditer(output):
        text = " ".join(m.group(1).split())
        if text and text not in messages:
            messages.append(text)
    if messages:
        return "; ".join(messages)
    if "The rest of the test output was removed" in output:
        return "(no skip message: ctest cut the test's output at its size limit)"
    # Not gtest (SKIP_RETURN_CODE): its last line of output.
    lines = [l.strip() for l in output.splitlines() if l.strip()]
    return lines[-1] if lines else "(no output)"


def read_junit(path):
    """{name: (status, detail)} of the run: status is passed, skipped, failed or notrun."""
    if not os.path.exists(path):
        raise InputError("%s does not exist: no ctest run wrote it (ctest --output-junit)" % path)
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as e:
        raise InputError("cannot read %s: %s" % (path, e))
    results = OrderedDict()
    for case in root.iter("testcase"):
        name = case.get("name")
        status = case.get("status")
        out = case.find("system-out")
        output = out.text if out is not None and out.text else ""
        skipped = case.find("skipped")
        if status == "run":
            results[name] = ("passed", "")
        elif status == "fail":
            failure = case.find("failure")
            why = failure.get("message", "") if failure is not None else ""
            results[name] = ("failed", why)
        elif skipped is not None and skipped.get("message", "").startswith("SKIP_"):
            # SKIP_REGULAR_EXPRESSION_MATCHED (gtest's "[  SKIPPED ]") or SKIP_RETURN_CODE=n.
            results[name] = ("skipped", skip_message(output))
        else:
            # Disabled, a failed fixture, required files missing, ...
            why = skipped.get("message", "") if skipped is not None else ""
            results[name] = ("notrun", why or status or "not run")
    return results


def summarize(items, limit=3):
    """'a, b, c and 4 more' of test names, without gtest's '  # GetParam() = ...' comments."""
    items = [re.sub(r"\s+#.*", "", i) for i in items]
    shown = ", ".join(items[:limit])
    return shown + (" and %d more" % (len(items) - limit) if len(items) > limit else "")


def check_component(comp, registered, results, cache):
    """(ok, text) for one component."""
    names = [n for n, labels in registered.items() if comp.matches(n, labels)]
    if not names:
        text = "no tests %s were registered: the component was not built; " % comp.describe()
        if comp.off_setting is not None:
            variable, off = comp.off_setting
            value = cache.get(variable)
            if value is not None and cmake_bool(value) == cmake_bool(off):
                return False, text + "%s=%s in CMakeCache.txt" % (variable, value)
        if comp.cmake_line == "-":
            text += "cmake prints no line for it"
        else:
            text += "see cmake's '%s' line" % comp.cmake_line
        return False, text
    in_run = [n for n in names if n in results]
    if not in_run:
        return False, ("none of its %d registered test(s) ran (left out by the ctest arguments)"
                       % len(names))
    by_status = {}
    for n in in_run:
        by_status.setdefault(results[n][0], []).append(n)
    passed = len(by_status.get("passed", []))
    text = "%d passed (minimum %d)" % (passed, comp.minimum)
    if passed >= comp.minimum:
        return True, text
    parts = [text]
    skipped = by_status.get("skipped", [])
    if skipped:
        reasons = OrderedDict()
        for n in skipped:
            reasons.setdefault(results[n][1], []).append(n)
        parts.append("%d skipped: %s" % (len(skipped), "; ".join(
            "'%s' (%s)" % (why, summarize(tests)) for why, tests in reasons.items())))
    for status, label in (("failed", "failed"), ("notrun", "not run")):
        tests = by_status.get(status, [])
        if tests:
            parts.append("%d %s: %s" % (len(tests), label, summarize(tests)))
    left_out = len(names) - len(in_run)
    if left_out:
        parts.append("%d registered test(s) not in this run" % left_out)
    return False, "; ".join(parts)


def main():
    parser = argparse.ArgumentParser(
        description="Check the last ctest run against the component list (.ci/components).")
    parser.add_argument("build_dir", metavar="BUILD_DIR")
    parser.add_argument("--components", default=DEFAULT_COMPONENTS,
                        help="the component list (default: %(default)s)")
    parser.add_argument("--junit", help="ctest's JUnit file (default: BUILD_DIR/%s)" % JUNIT_NAME)
    args = parser.parse_args()
    build_dir = os.path.abspath(args.build_dir)
    junit = args.junit or os.path.join(build_dir, JUNIT_NAME)
    try:
        if not os.path.isdir(build_dir):
            raise InputError("%s is not a directory" % build_dir)
        components, rules = read_components(args.components)
        registered = registered_tests(build_dir)
        results = read_junit(junit)
        cache = read_cache(build_dir)
    except InputError as e:
        print("check-components: error: %s" % e, file=sys.stderr)
        return 2

    counts = {}
    for status, _ in results.values():
        counts[status] = counts.get(status, 0) + 1
    tally = ", ".join("%d %s" % (counts[s], s)
                      for s in ("passed", "failed", "skipped", "notrun") if s in counts)
    print("check-components: %s: %d test(s) ran: %s" % (junit, len(results), tally))

    failures = 0
    unbuilt = [n for n in registered if n.endswith("_NOT_BUILT")]
    if unbuilt:
        print("FAIL  %d test binaries not built, their tests unknown (%s): build first"
              % (len(unbuilt), summarize(unbuilt)))
        failures += 1
    width = max(len(c.name) for c in components)
    for comp in components:
        ok, text = check_component(comp, registered, results, cache)
        failures += not ok
        print("%-4s  %-*s  %s" % ("OK" if ok else "FAIL", width, comp.name, text))

    allowed = [0] * len(rules)
    unexpected = []
    for name, (status, message) in results.items():
        if status != "skipped":
            continue
        i = next((i for i, r in enumerate(rules) if r.allows(name, message)), None)
        if i is None:
            unexpected.append((name, message))
        else:
            allowed[i] += 1
    for rule, n in zip(rules, allowed):
        if n:
            print("OK    expected skip: %d test(s): %s" % (n, rule.reason))
    for name, message in unexpected:
        print("FAIL  unexpected skip: %s: %s" % (name, message))
    failures += len(unexpected)

    if failures:
        print("check-components: %d check(s) failed (the list: %s)" % (failures, args.components))
        return 1
    print("check-components: all components built and tested")
    return 0


if __name__ == "__main__":
    sys.exit(main())
