#!/usr/bin/env python3
"""Tests of scripts/check-docs.py on small trees of its own (not this repository).

    tests/docs/check_docs_test.py [SOURCE_DIR]

A tree with one defect of each kind (a broken link, a bad anchor, a variable read but not
documented, a documented variable nothing reads, an undocumented binary, a documented build/bin/
path that is gone) must fail with each one reported at its file and line, and nothing else; the
same tree with the defects fixed must pass. Plus GitHub's anchor rules on some headings.
"""

import importlib.util
import os
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest

SOURCE_DIR = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else \
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECKER = os.path.join(SOURCE_DIR, "scripts", "check-docs.py")

# The tree: path -> text. BROKEN adds the defects, FIXED removes them.
TREE = {
    "README.md": """\
        # Project

        See [the guide](docs/guide.md), [its setup](docs/guide.md#setup-and-use) and
        [the second setup](docs/guide.md#setup-and-use-1), the [tools](tools/) folder,
        [a site](https://example.com/x#y) and [this page](#project).
        [ref]: docs/guide.md#flags-a-b_c
        Settings: `C10D_READ=1`, `C10D_SHELL`, `-DC10D_WITH_X=ON`, `C10D_OPTION`, `C10D_MACRO(x)`,
        `C10D_PREFIX_*`, `C10D_STATUS_OK`, `C10D_TEST_ONLY`.
        Run `build/bin/tool` or `build/bin/mpi_tool` (only with MPI).
        ```sh
        C10D_CHILD=1 build/bin/tool --x   # [not a link](nowhere.md)
        ```
        Inline code is not a link: `[x](nowhere.md)`.
        """,
    "docs/guide.md": """\
        # Guide

        ## Setup and use

        ## Setup and use

        ### Flags (a, b_c)

        Back to [the top](../README.md#project) and [flags](#flags-a-b_c). `C10D_CHILD` is set for
        the children. CI reads `C10D_CI_ONLY`.
        """,
    "c10d/core/reader.cc": """\
        #include <cstdlib>
        #define C10D_MACRO(x) (x)
        enum { C10D_STATUS_OK = 0 };
        // getenv("C10D_IN_COMMENT") is a comment
        const char* a = std::getenv("C10D_READ");
        const char* b = "C10D_READ rule: a message, not a variable";
        const char* c = "C10D_CHILD=1";
        int d = 1'000'000; const char* e = "x";
        """,
    ".ci/run": """\
        #!/bin/sh
        [ "${C10D_CI_ONLY:-0}" = 1 ] && echo packages
        """,
    "scripts/run.sh": """\
        #!/bin/sh
        # $C10D_IN_SHELL_COMMENT
        echo "${C10D_SHELL:-1}"
        """,
    "tests/t.cc": 'const char* t = std::getenv("C10D_TEST_ONLY");\n',
    "tests/CMakeLists.txt": """\
        add_executable(helper_worker helper.cc)
        c10d_add_test(unit_thing SOURCES x.cc)
        """,
    "CMakeLists.txt": """\
        option(C10D_OPTION "an option" OFF)
        if(C10D_WITH_X)
        endif()
        add_executable(tool tool.cc)
        add_executable(undocumented_tool u.cc)
        if(MPI_FOUND)
          foreach(t tool)
            add_executable(mpi_${t} m.cc)
          endforeach()
        endif()
        """,
    "tools/x.txt": "",
}
BROKEN = {
    "README.md": """\
        Broken: [missing](docs/missing.md), [bad anchor](docs/guide.md#no-such-heading),
        [third setup](docs/guide.md#setup-and-use-2), [outside](../elsewhere.md).
        Gone: `C10D_GONE=1`, `-DC10D_NO_SUCH_OPTION=ON`, `build/bin/old_tool`.
        """,
    "c10d/core/more.cc": 'const char* u = std::getenv("C10D_UNDOCUMENTED");\n',
    "docs/other.md": "[a bad anchor in the same file](#nowhere)\n",
}
# stale_tool: no CMakeLists.txt makes it (an older build's leftover): a note, not a failure.
BINARIES = ["tool", "helper_worker", "unit_thing", "foo_test", "x_replay", "fuzz_make_corpus",
            "stale_tool"]
BROKEN_BINARIES = ["undocumented_tool"]


def write_tree(root, broken):
    files = dict(TREE)
    if broken:
        for path, text in BROKEN.items():
            files[path] = files.get(path, "") + text
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(textwrap.dedent(text))
    bin_dir = os.path.join(root, "build", "bin")
    os.makedirs(bin_dir)
    for name in BINARIES + (BROKEN_BINARIES if broken else []):
        path = os.path.join(bin_dir, name)
        with open(path, "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    with open(os.path.join(bin_dir, "not_executable.txt"), "w") as f:
        f.write("data\n")
    return bin_dir


def run_checker(root, bin_dir, *extra):
    p = subprocess.run([sys.executable, CHECKER, root, "--bin-dir", bin_dir, *extra],
                       capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


class CheckDocsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="check_docs_test.")
        self.root = os.path.join(self.tmp.name, "tree")
        os.makedirs(self.root)

    def tearDown(self):
        self.tmp.cleanup()

    def test_clean_tree_passes(self):
        bin_dir = write_tree(self.root, broken=False)
        rc, out = run_checker(self.root, bin_dir)
        self.assertEqual(rc, 0, out)
        last = out.strip().splitlines()[-1]
        self.assertRegex(last, r"^check-docs: .*: 0 failures")
        # mpi_tool: documented, made by a CMakeLists.txt, not built here: a note only.
        self.assertIn("note: README.md:9: build/bin/mpi_tool is not built", out)
        self.assertIn("note: binary stale_tool: not named in any markdown file, and no "
                      "CMakeLists.txt makes it", out)

    def test_each_defect_is_reported(self):
        bin_dir = write_tree(self.root, broken=True)
        rc, out = run_checker(self.root, bin_dir)
        self.assertEqual(rc, 1, out)
        expected = [
            "README.md:14: link 'docs/missing.md': docs/missing.md does not exist",
            "README.md:14: link 'docs/guide.md#no-such-heading': no heading in docs/guide.md "
            "has the anchor #no-such-heading",
            "README.md:15: link 'docs/guide.md#setup-and-use-2': no heading",
            "README.md:15: link '../elsewhere.md' points outside the repository",
            "docs/other.md:1: link '#nowhere': no heading in docs/other.md",
            "c10d/core/more.cc:1: environment variable C10D_UNDOCUMENTED is read here but named in "
            "no markdown file",
            "README.md:16: C10D_GONE is documented but nothing reads it",
            "README.md:16: -DC10D_NO_SUCH_OPTION is documented but no CMake file names it",
            "README.md:16: build/bin/old_tool does not exist in",
            "binary undocumented_tool: ",
        ]
        for e in expected:
            self.assertIn(e, out)
        failures = [l for l in out.splitlines()
                    if l and not l.startswith(("note:", "check-docs:"))]
        self.assertEqual(len(failures), len(expected), out)
        self.assertIn(f": {len(expected)} failures", out.strip().splitlines()[-1])
        # What must not be reported: links in code, fine anchors, non-variables, test binaries.
        for word in ("nowhere.md", "#setup-and-use'", "#setup-and-use-1", "#flags-a-b_c",
                     "#project", "example.com", "C10D_IN_COMMENT", "C10D_IN_SHELL_COMMENT",
                     "C10D_TEST_ONLY", "C10D_OPTION", "C10D_MACRO", "C10D_PREFIX",
                     "C10D_STATUS_OK", "C10D_CHILD", "C10D_SHELL", "C10D_WITH_X",
                     "helper_worker", "unit_thing", "foo_test", "x_replay", "fuzz_make_corpus",
                     "not_executable", "stale_tool"):
            self.assertNotIn(word, "\n".join(failures))

    def test_checks_can_be_picked(self):
        bin_dir = write_tree(self.root, broken=True)
        rc, out = run_checker(self.root, bin_dir, "--checks", "links")
        self.assertEqual(rc, 1, out)
        self.assertIn("docs/missing.md", out)
        self.assertNotIn("C10D_UNDOCUMENTED", out)
        self.assertNotIn("undocumented_tool", out)
        rc, out = run_checker(self.root, bin_dir, "--checks", "env")
        self.assertEqual(rc, 1, out)
        self.assertIn("C10D_UNDOCUMENTED", out)
        self.assertNotIn("docs/missing.md", out)


class SlugTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        spec = importlib.util.spec_from_file_location("check_docs", CHECKER)
        cls.mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(cls.mod)

    def test_github_rules(self):
        slug = self.mod.slug
        self.assertEqual(slug("Flags (nccl-tests' letters, long names and defaults)"),
                         "flags-nccl-tests-letters-long-names-and-defaults")
        self.assertEqual(slug("ddp_step_perf: one data-parallel training step"),
                         "ddp_step_perf-one-data-parallel-training-step")
        self.assertEqual(slug("Validation (`-c`)"), "validation--c")
        self.assertEqual(slug("JSON (`-J FILE`)"), "json--j-file")
        self.assertEqual(slug("2026-11-27: three causes fixed; re-measured"),
                         "2026-11-27-three-causes-fixed-re-measured")
        self.assertEqual(slug("The [C ABI](api.md) and **bold** _emphasis_"),
                         "the-c-abi-and-bold-emphasis")
        self.assertEqual(slug("verbs ×2 at 8 µs"), "verbs-2-at-8-µs")

    def test_duplicates_are_numbered(self):
        md = self.mod.Markdown("x.md", "# A\n\n## A\n\n```\n# not a heading\n```\n\nA\n===\n")
        self.assertEqual(md.anchors(), {"a", "a-1", "a-2"})


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
