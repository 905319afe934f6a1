#!/usr/bin/env python3
"""Tests of scripts/fuzz-corpus.py, and of the corpus archives in the tree.

    tests/fuzz/corpus_archive_test.py [SOURCE_DIR]

pack gives the same bytes for the same inputs whatever their file times, modes and creation
order; unpack leaves exactly the archive's inputs (nothing left from before) and refuses an entry
that is not a plain file name, or a repeated one, without touching the directory; and every
tests/fuzz/corpus/*_seed_corpus.zip is as pack writes it (unpacked and packed again, the same
bytes), holds no regression (those live in tests/fuzz/regress/<target>/), and has a harness.
"""

import importlib.util
import io
import os
import subprocess
import sys
import tempfile
import unittest
import zipfile

SOURCE_DIR = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else \
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(SOURCE_DIR, "scripts", "fuzz-corpus.py")
CORPUS_DIR = os.path.join(SOURCE_DIR, "tests", "fuzz", "corpus")
INPUTS = {"seed-b": b"\x00\x01bee", "0123abcd": b"x" * 1000, "seed-a": b"", "regress-ish": b"\xff"}


def run(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True)


def write_inputs(d, order, mode, mtime):
    os.makedirs(d)
    for name in order:
        path = os.path.join(d, name)
        with open(path, "wb") as f:
            f.write(INPUTS[name])
        os.chmod(path, mode)
        os.utime(path, (mtime, mtime))


def read_dir(d):
    out = {}
    for name in os.listdir(d):
        with open(os.path.join(d, name), "rb") as f:
            out[name] = f.read()
    return out


class FuzzCorpusTool(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.t = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, *p):
        return os.path.join(self.t, *p)

    def test_pack_is_deterministic(self):
        write_inputs(self.path("one"), sorted(INPUTS), 0o644, 1_000_000_000)
        write_inputs(self.path("two"), sorted(INPUTS, reverse=True), 0o600, 1_700_000_000)
        os.mkdir(self.path("two", "subdir"))  # not an input: left out
        for d in ("one", "two"):
            r = run("pack", self.path(d), self.path(d + ".zip"))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("4 inputs", r.stdout)
        with open(self.path("one.zip"), "rb") as a, open(self.path("two.zip"), "rb") as b:
            self.assertEqual(a.read(), b.read(), "the same inputs packed to different bytes")
        with zipfile.ZipFile(self.path("one.zip")) as z:
            self.assertEqual(z.namelist(), sorted(INPUTS))

    def test_unpack_replaces_the_directory(self):
        write_inputs(self.path("in"), sorted(INPUTS), 0o644, 1_000_000_000)
        self.assertEqual(run("pack", self.path("in"), self.path("c.zip")).returncode, 0)
        out = self.path("out")
        os.makedirs(os.path.join(out, "old-subdir"))
        with open(os.path.join(out, "stale-input"), "wb") as f:
            f.write(b"from an older archive")
        r = run("unpack", self.path("c.zip"), out, "--stamp", self.path("out.stamp"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(read_dir(out), INPUTS)
        self.assertTrue(os.path.exists(self.path("out.stamp")))
        self.assertEqual(sorted(os.listdir(self.t)), ["c.zip", "in", "out", "out.stamp"])

    def bad_archive(self, names, message):
        zip_path = self.path("bad.zip")
        with zipfile.ZipFile(zip_path, "w") as z:
            for name in names:
                z.writestr(name, b"data")
        out = self.path("out")
        os.makedirs(out)
        with open(os.path.join(out, "kept"), "wb") as f:
            f.write(b"k")
        r = run("unpack", zip_path, out, "--stamp", self.path("out.stamp"))
        self.assertEqual(r.returncode, 2, r.stdout)
        self.assertIn(message, r.stderr)
        self.assertEqual(read_dir(out), {"kept": b"k"}, "a refused archive changed the directory")
        self.assertFalse(os.path.exists(self.path("out.stamp")))
        self.assertFalse(os.path.exists(self.path("evil")))
        self.assertEqual(sorted(os.listdir(self.t)), ["bad.zip", "out"])

    def test_unpack_refuses_a_path(self):
        self.bad_archive(["seed-a", "../evil"], "entry '../evil' is not a plain file name")

    def test_unpack_refuses_a_directory_entry(self):
        self.bad_archive(["sub/", "sub/x"], "entry 'sub/' is not a plain file name")

    def test_unpack_refuses_a_repeated_name(self):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zipfile warns of the duplicate it is told to write
            self.bad_archive(["seed-a", "seed-a"], "entry 'seed-a' appears twice")


def load_tool():
    spec = importlib.util.spec_from_file_location("fuzz_corpus", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TreeArchives(unittest.TestCase):
    def test_archives_are_canonical(self):
        tool = load_tool()
        archives = sorted(n for n in os.listdir(CORPUS_DIR) if n.endswith(".zip"))
        self.assertTrue(archives)
        self.assertEqual(sorted(os.listdir(CORPUS_DIR)), archives, "only archives in corpus/")
        for name in archives:
            self.assertTrue(name.endswith("_seed_corpus.zip"), name)
            target = name[: -len("_seed_corpus.zip")]
            harness = os.path.join(SOURCE_DIR, "tests", "fuzz", target + "_fuzzer.cc")
            self.assertTrue(os.path.exists(harness), f"{name}: no {harness}")
            with open(os.path.join(CORPUS_DIR, name), "rb") as f:
                stored = f.read()
            with zipfile.ZipFile(io.BytesIO(stored)) as z:
                inputs = [(n, z.read(n)) for n in sorted(z.namelist())]
            regress = [n for n, _ in inputs if n.startswith("regress-")]
            self.assertEqual(regress, [], f"{name}: regressions belong in regress/{target}/")
            # Packed again (in memory, as pack would write it): the same bytes.
            repacked = io.BytesIO()
            tool.write_zip(repacked, inputs)
            self.assertTrue(repacked.getvalue() == stored,
                            f"{name} is not as scripts/fuzz-corpus.py packs it: "
                            "unpack it and pack it again")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
