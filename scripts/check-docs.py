#!/usr/bin/env python3
"""Checks that the documentation and the tree agree; run by the `docs` tests (tests/docs/).

    scripts/check-docs.py [ROOT] [--bin-dir DIR] [--checks links,binaries,env,gone]

ROOT is the source tree (default: this script's parent directory). The files looked at are
git's (`git ls-files --cached --others --exclude-standard`: tracked, and new files that are not
ignored) or, outside a git checkout, every file under ROOT but hidden and build* directories.
The markdown files are every `*.md` but those under tests/fuzz/corpus/.

links     Every relative link in every markdown file resolves: `[text](target)`, `![alt](src)`,
          `[id]: target` and HTML `href=`/`src=` outside code blocks and code spans. A target
          with a scheme (https:, mailto:, ...) is not checked; one starting with `/` is taken from
          ROOT; every other from the linking file's directory. The file or directory must exist
          (inside ROOT), and a `#fragment` into a markdown file (or `#fragment` alone: the same
          file) must name one of its headings as GitHub makes anchors: the heading's text without
          markup, lowercased, every character but letters, digits, `_`, `-` and spaces dropped,
          each space turned into `-`; a repeated anchor gets `-1`, `-2`, ... in order. HTML
          `id=`/`name=` attributes count too. Fragments into other files are not checked.

binaries  (needs --bin-dir, the build's CMAKE_RUNTIME_OUTPUT_DIRECTORY) Every executable there
          that is not a test binary is named in some markdown file (as a whole word). A test
          binary is one whose name ends in `_test`, `_replay` or `_fuzzer`, is `fuzz_make_corpus`,
          or is made by an `add_executable(NAME ...)` or `c10d_add_test(NAME ...)` in a
          CMakeLists.txt under a `tests/` directory (helpers such as `c10drun_test_worker`,
          `netns_worker` or `sampler_dump`; `${var}` in such a NAME matches anything). An
          executable that no CMakeLists.txt in the tree makes (`add_executable`, or a file that
          `configure_file` copies into `${CMAKE_RUNTIME_OUTPUT_DIRECTORY}`) is reported as a note,
          not a failure: it is left over from an older build of this directory.

env       Every environment variable that non-test code reads is named in some markdown file. Read
          means: a C/C++ string literal (`.cc .h .c .cpp .hpp`, comments skipped) or a Python
          string constant (`.py`, or a script whose `#!` line names python) whose whole text is
          `C10D_NAME` or starts with `C10D_NAME=` (a variable set for a child), or `$C10D_NAME` /
          `${C10D_NAME...}` on a non-comment line of a shell script (`.sh`, or a `#!` naming sh or
          bash), or `$ENV{C10D_NAME}` in CMake. Names ending in `_` are prefixes, not variables.
          Non-test code is the files under base/ store/ core/ backends/ bootstrap/ c10d/ layers/
          tools/ perf/ examples/ integrations/ scripts/, minus any path with a `tests` or `test`
          directory in it. So CMake options (`C10D_WITH_NCCL`), macros (`C10D_CHECK`,
          `C10D_GUARDED_BY`) and compile definitions are not variables here.

gone      Nothing documented is gone. (1) Every `C10D_NAME` in a code span or code block of a
          markdown file that looks like an environment variable (not `-DC10D_NAME`, not followed by
          `(` or `*`, not ending in `_`) is read somewhere in the tree (the `env` definition over
          every directory, tests/ and cmake/ included), or is a CMake cache variable
          (`option(C10D_NAME ...)`, `set(C10D_NAME ... CACHE ...)`), a CMake variable read as
          `${C10D_NAME}` or tested by `if(C10D_NAME)`, a compile definition in a CMake file, or a
          C/C++ identifier outside strings and comments (`#define C10D_CHECK`, the C ABI's enum
          constants such as `C10D_FLOAT32`).
          (2) Every `-DC10D_NAME` in the markdown files is named in some CMake file. (3) With
          --bin-dir, every `build/bin/NAME` in the markdown files is in that directory; one that a
          CMakeLists.txt makes only in some configurations (MPI, nccl) and this build lacks is a
          note, not a failure.

Each failure is printed as `FILE:LINE: what is wrong` (or names the binary or variable); notes
start with `note:`. The last line counts what was checked. Exit status 1 on any failure, else 0.
"""

import argparse
import ast
import fnmatch
import os
import re
import subprocess
import sys
import urllib.parse

NON_TEST_DIRS = ("c10d", "tools", "perf", "examples", "integrations", "scripts")
C_EXTS = (".cc", ".h", ".c", ".cpp", ".hpp", ".cxx", ".hh")
TEST_SUFFIXES = ("_test", "_replay", "_fuzzer")
TEST_NAMES = ("fuzz_make_corpus",)
ALL_CHECKS = ("links", "binaries", "env", "gone")

VAR_RE = re.compile(r"C10D_[A-Z0-9_]*[A-Z0-9]")
LITERAL_VAR_RE = re.compile(r"(C10D_[A-Z0-9_]*[A-Z0-9])(?:=.*)?\Z", re.S)
SHELL_VAR_RE = re.compile(r"\$\{?(C10D_[A-Z0-9_]*[A-Z0-9])\b")
CMAKE_ENV_RE = re.compile(r"\$ENV\{(C10D_[A-Z0-9_]*[A-Z0-9])\}")
DEFINE_RE = re.compile(r"^\s*#\s*define\s+(C10D_[A-Z0-9_]+)", re.M)
SCHEME_RE = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*:|//)")


class Report:
    def __init__(self):
        self.failures = 0
        self.notes = 0

    def fail(self, where, what):
        self.failures += 1
        print(f"{where}: {what}")

    def note(self, where, what):
        self.notes += 1
        print(f"note: {where}: {what}")


# ---------------------------------------------------------------------------------------------
# The tree

def list_files(root):
    """Tracked and new (not ignored) files, relative to root, that exist."""
    try:
        out = subprocess.run(
            ["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            check=True, capture_output=True).stdout
        files = sorted(set(f for f in out.decode("utf-8", "replace").split("\0") if f))
        if files:
            return [f for f in files if os.path.isfile(os.path.join(root, f))]
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        # .ci/ holds code (.ci/run reads variables); other dot-dirs and build dirs do not.
        dirnames[:] = sorted(d for d in dirnames
                             if (d == ".ci" or not d.startswith(".")) and not d.startswith("build"))
        rel = os.path.relpath(dirpath, root)
        for name in sorted(filenames):
            files.append(name if rel == "." else os.path.join(rel, name).replace(os.sep, "/"))
    return files


def read_text(root, rel):
    try:
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def shebang(root, rel):
    try:
        with open(os.path.join(root, rel), "rb") as f:
            first = f.readline(200)
    except OSError:
        return ""
    return first.decode("utf-8", "replace") if first.startswith(b"#!") else ""


def file_kind(root, rel):
    """'c', 'py', 'sh', 'cmake' or None."""
    base = os.path.basename(rel)
    if rel.endswith(C_EXTS):
        return "c"
    if rel.endswith(".py"):
        return "py"
    if rel.endswith((".sh", ".bash")):
        return "sh"
    if base == "CMakeLists.txt" or rel.endswith(".cmake"):
        return "cmake"
    if "." not in base:
        line = shebang(root, rel)
        if "python" in line:
            return "py"
        if re.search(r"\b(ba|da|z)?sh\b", line):
            return "sh"
    return None


def is_test_path(rel):
    return any(part in ("tests", "test") for part in rel.split("/")[:-1])


# ---------------------------------------------------------------------------------------------
# Markdown

FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
CODE_SPAN_RE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
LINK_START_RE = re.compile(r"!?\[((?:[^\[\]\\]|\\.|\[(?:[^\[\]\\]|\\.)*\])*)\]\(")
REF_DEF_RE = re.compile(r"^ {0,3}\[([^\]]+)\]:[ \t]*(<[^>]*>|\S+)")
HTML_LINK_RE = re.compile(r"<[A-Za-z][^>]*?\b(?:href|src)\s*=\s*[\"']([^\"']*)[\"']", re.S)
HTML_ID_RE = re.compile(r"<[A-Za-z][^>]*?\b(?:id|name)\s*=\s*[\"']([^\"']*)[\"']", re.S)


class Markdown:
    """A markdown file cut into fenced code blocks and the text between them."""

    def __init__(self, rel, text):
        self.rel = rel
        self.text = text
        self.lines = text.split("\n")
        # Per line: True inside a fenced code block (fence lines included).
        self.in_code = []
        fence = None
        for line in self.lines:
            m = FENCE_RE.match(line)
            if fence is None:
                if m:
                    fence = m.group(1)
                    self.in_code.append(True)
                else:
                    self.in_code.append(False)
            else:
                self.in_code.append(True)
                if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                        and not line.strip()[len(m.group(1)):].strip():
                    fence = None
        self._anchors = None

    def paragraphs(self):
        """(first line number, text) of each run of non-blank lines outside code blocks."""
        start, buf = None, []
        for i, line in enumerate(self.lines):
            if self.in_code[i] or not line.strip():
                if buf:
                    yield start, "\n".join(buf)
                start, buf = None, []
                continue
            if start is None:
                start = i + 1
            buf.append(line)
        if buf:
            yield start, "\n".join(buf)

    def code_texts(self):
        """(line number, text) of every code span and every line of a fenced code block."""
        for i, line in enumerate(self.lines):
            if self.in_code[i] and not FENCE_RE.match(line):
                yield i + 1, line
        for start, para in self.paragraphs():
            for m in CODE_SPAN_RE.finditer(para):
                yield start + para.count("\n", 0, m.start()), m.group(2)

    def prose(self):
        """(first line number, paragraph with its code spans blanked out)."""
        for start, para in self.paragraphs():
            yield start, CODE_SPAN_RE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), para)

    def headings(self):
        """(line number, raw heading text) for ATX and setext headings outside code blocks."""
        out = []
        for i, line in enumerate(self.lines):
            if self.in_code[i]:
                continue
            m = ATX_RE.match(line)
            if m and not line.startswith("    "):
                text = re.sub(r"[ \t]+#+[ \t]*$", "", m.group(2) or "")
                if re.fullmatch(r"#+", text.strip()):
                    text = ""
                out.append((i + 1, text.strip()))
                continue
            if i > 0 and re.fullmatch(r" {0,3}(=+|-+)[ \t]*", line) and not self.in_code[i - 1]:
                prev = self.lines[i - 1]
                if prev.strip() and not prev.startswith("    ") and not ATX_RE.match(prev) \
                        and not re.match(r" {0,3}([|>]|[-*+][ \t]|\d+[.)][ \t])", prev) \
                        and not re.fullmatch(r" {0,3}(=+|-+)[ \t]*", prev):
                    out.append((i, prev.strip()))
        return out

    def anchors(self):
        if self._anchors is None:
            seen = {}
            anchors = set()
            for _, text in self.headings():
                base = slug(text)
                n = seen.get(base, 0)
                anchors.add(base if n == 0 else f"{base}-{n}")
                seen[base] = n + 1
            for m in HTML_ID_RE.finditer(self.text):
                anchors.add(m.group(1))
            self._anchors = anchors
        return self._anchors


def slug(heading):
    """GitHub's anchor for a heading's markdown text."""
    parts = []
    pos = 0
    for m in CODE_SPAN_RE.finditer(heading):  # code spans: their text, verbatim
        parts.append(("text", heading[pos:m.start()]))
        parts.append(("code", m.group(2).strip() if m.group(2).strip() else m.group(2)))
        pos = m.end()
    parts.append(("text", heading[pos:]))
    out = []
    for kind, s in parts:
        if kind == "text":
            s = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", s)   # links and images: their text
            s = re.sub(r"!?\[([^\]]*)\]\[[^\]]*\]", r"\1", s)  # reference links
            s = re.sub(r"<[^>]+>", "", s)                      # HTML tags
            s = re.sub(r"(?<!\w)_+|_+(?!\w)", "", s)           # _emphasis_ (not snake_case)
        out.append(s)
    text = "".join(out).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def link_targets(md):
    """(line number, target) of every link in md's prose."""
    for start, para in md.prose():
        for m in LINK_START_RE.finditer(para):
            line = start + para.count("\n", 0, m.start())
            target = parse_destination(para, m.end())
            if target is not None:
                yield line, target
        for m in HTML_LINK_RE.finditer(para):
            yield start + para.count("\n", 0, m.start()), m.group(1)
    for i, line in enumerate(md.lines):
        if md.in_code[i]:
            continue
        m = REF_DEF_RE.match(line)
        if m and not m.group(1).startswith("^"):
            target = m.group(2)
            if target.startswith("<") and target.endswith(">"):
                target = target[1:-1]
            yield i + 1, target


def parse_destination(text, pos):
    """The link destination starting at text[pos] (just after '('), or None."""
    n = len(text)
    while pos < n and text[pos] in " \t\n":
        pos += 1
    if pos < n and text[pos] == "<":
        end = text.find(">", pos)
        return None if end < 0 else text[pos + 1:end]
    depth, start = 0, pos
    while pos < n:
        c = text[pos]
        if c == "\\" and pos + 1 < n:
            pos += 2
            continue
        if c in " \t\n":
            break
        if c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                break
            depth -= 1
        pos += 1
    return text[start:pos]


def check_links(root, md_files, docs, report):
    """Returns (links checked, anchors checked)."""
    n_links = n_anchors = 0
    for rel in md_files:
        md = docs[rel]
        for line, target in link_targets(md):
            where = f"{rel}:{line}"
            target = target.strip()
            if not target or SCHEME_RE.match(target):
                continue
            n_links += 1
            path, _, fragment = target.partition("#")
            path = urllib.parse.unquote(path.split("?", 1)[0])
            fragment = urllib.parse.unquote(fragment)
            if path:
                if path.startswith("/"):
                    dest = os.path.normpath(path.lstrip("/"))
                else:
                    dest = os.path.normpath(os.path.join(os.path.dirname(rel), path))
                dest = dest.replace(os.sep, "/")
                if dest == ".." or dest.startswith("../"):
                    report.fail(where, f"link '{target}' points outside the repository")
                    continue
                full = os.path.join(root, dest)
                if not os.path.exists(full):
                    report.fail(where, f"link '{target}': {dest} does not exist")
                    continue
            else:
                dest = rel
            if not fragment or not dest.endswith(".md") or os.path.isdir(os.path.join(root, dest)):
                continue
            n_anchors += 1
            if dest not in docs:
                docs[dest] = Markdown(dest, read_text(root, dest))
            if fragment not in docs[dest].anchors():
                near = sorted(a for a in docs[dest].anchors()
                              if a.startswith(fragment[:12]) or fragment.startswith(a[:12]))
                hint = f" (nearest: #{near[0]})" if near else ""
                report.fail(where, f"link '{target}': no heading in {dest} has the anchor "
                                   f"#{fragment}{hint}")
    return n_links, n_anchors


# ---------------------------------------------------------------------------------------------
# Code: the C10D_* variables it reads

def c_string_literals(text, code=None):
    """(line, content) of every string literal in C/C++ text, comments skipped. If code is a
    list, the text outside string literals, character literals and comments is appended to it."""
    i, n, line = 0, len(text), 1
    last = 0  # start of the code not yet appended

    def skip(a, b):
        nonlocal last
        if code is not None:
            code.append(text[last:a])
            code.append(" ")
        last = b

    ident = re.compile(r"[A-Za-z0-9_]")
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            skip(i, j)
            i = j
        elif c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            skip(i, j)
            line += text.count("\n", i, j)
            i = j
        elif c == '"':
            raw = i > 0 and text[i - 1] == "R" and (
                i < 2 or not ident.match(text[i - 2]) or text[i - 3:i - 1] in ("u8",)
                or (text[i - 2] in "LuU" and (i < 3 or not ident.match(text[i - 3]))))
            if raw:
                paren = text.find("(", i)
                delim = text[i + 1:paren] if paren >= 0 else ""
                end = text.find(")" + delim + '"', paren) if paren >= 0 else -1
                end = n if end < 0 else end
                skip(i, min(n, end + len(delim) + 2))
                yield line, text[paren + 1:end]
                line += text.count("\n", i, end)
                i = end + len(delim) + 2
                continue
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            skip(i, min(n, j + 1))
            yield line, text[i + 1:j]
            i = j + 1
        elif c == "'":
            if i > 0 and re.match(r"[0-9A-Fa-f]", text[i - 1]) and i + 1 < n \
                    and re.match(r"[0-9A-Fa-f]", text[i + 1]):
                i += 1  # digit separator: 1'000'000
                continue
            j = i + 1
            while j < n and text[j] != "'" and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            skip(i, min(n, j + 1))
            i = j + 1
        else:
            i += 1
    if code is not None:
        code.append(text[last:])


def py_string_literals(text):
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        for m in re.finditer(r"([\"'])(C10D_[A-Z0-9_]+(?:=[^\"'\n]*)?)\1", text):
            yield text.count("\n", 0, m.start()) + 1, m.group(2)
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield getattr(node, "lineno", 0), node.value


def variables_read(kind, text, code=None):
    """(line, name) of each C10D_* variable that the file reads (code: see c_string_literals)."""
    if kind in ("c", "py"):
        literals = c_string_literals(text, code) if kind == "c" else py_string_literals(text)
        for line, s in literals:
            m = LITERAL_VAR_RE.match(s)
            if m:
                yield line, m.group(1)
    elif kind == "sh":
        for i, line in enumerate(text.split("\n")):
            if line.lstrip().startswith("#"):
                continue
            for m in SHELL_VAR_RE.finditer(line):
                yield i + 1, m.group(1)
    elif kind == "cmake":
        for m in CMAKE_ENV_RE.finditer(text):
            yield text.count("\n", 0, m.start()) + 1, m.group(1)


class Code:
    """What the tree's code reads and defines."""

    def __init__(self, root, files):
        self.read_non_test = {}   # name -> first "file:line" in non-test code
        self.read_anywhere = {}   # name -> first "file:line" anywhere
        self.defined = set()      # CMake variables and options, macros, compile definitions
        self.cmake_text = []      # (rel, text) of every CMake file
        for rel in files:
            kind = file_kind(root, rel)
            if kind is None:
                continue
            text = read_text(root, rel)
            if "C10D_" not in text and kind != "cmake":
                continue
            non_test = rel.split("/", 1)[0] in NON_TEST_DIRS and not is_test_path(rel)
            code = []
            for line, name in variables_read(kind, text, code):
                self.read_anywhere.setdefault(name, f"{rel}:{line}")
                if non_test:
                    self.read_non_test.setdefault(name, f"{rel}:{line}")
            if kind == "c":
                # Macros, enum constants and other identifiers exist: `C10D_FLOAT32` in a doc is
                # not gone while the C API has it.
                self.defined.update(DEFINE_RE.findall(text))
                self.defined.update(VAR_RE.findall("".join(code)))
            if kind == "cmake":
                self.cmake_text.append((rel, text))
                self._cmake_definitions(text)

    def _cmake_definitions(self, text):
        for m in re.finditer(r"\boption\s*\(\s*(C10D_[A-Z0-9_]+)", text, re.I):
            self.defined.add(m.group(1))
        for m in re.finditer(r"\bset\s*\(\s*(C10D_[A-Z0-9_]+)\b[^)]*\bCACHE\b", text, re.I):
            self.defined.add(m.group(1))
        # Variables CMake code reads (hints such as C10D_NCCL_ROOT) and compile definitions.
        self.defined.update(re.findall(r"\$\{(C10D_[A-Z0-9_]+)\}", text))
        self.defined.update(re.findall(r"\bif\s*\(\s*(?:NOT\s+)?(C10D_[A-Z0-9_]+)\b", text))
        for m in re.finditer(r"\b(?:target_compile_definitions|add_compile_definitions|"
                             r"add_definitions)\s*\(([^)]*)\)", text, re.I | re.S):
            self.defined.update(re.findall(r"(?:-D)?\b(C10D_[A-Z0-9_]+)", m.group(1)))

    def in_cmake(self, name):
        pat = re.compile(r"\b" + re.escape(name) + r"\b")
        return any(pat.search(text) for _, text in self.cmake_text)

    def executable_patterns(self, tests_only):
        """fnmatch patterns of the executables CMake files make (${var} -> *)."""
        pats = set()
        for rel, text in self.cmake_text:
            if tests_only and not is_test_path(rel):
                continue
            text = re.sub(r"(?m)#.*$", "", text)  # comments (a '#' inside quotes is rare here)
            funcs = r"add_executable|c10d_add_test" if tests_only else r"add_executable"
            for m in re.finditer(r"\b(?:" + funcs + r")\s*\(\s*([^\s)]+)", text):
                pats.add(re.sub(r"\$\{[^}]*\}", "*", m.group(1)))
            if not tests_only:
                for m in re.finditer(r"configure_file\s*\([^)]*?"
                                     r"\$\{CMAKE_RUNTIME_OUTPUT_DIRECTORY\}/([^\s)]+)", text):
                    pats.add(re.sub(r"\$\{[^}]*\}", "*", m.group(1)))
        pats.discard("*")  # add_executable(${name} ...) inside a function: its callers count
        return pats


# ---------------------------------------------------------------------------------------------
# The checks over code and binaries

def doc_words(docs):
    words = set()
    for md in docs.values():
        words.update(re.findall(r"[A-Za-z0-9_]+", md.text))
    return words


def documented(name, words, docs):
    if re.fullmatch(r"[A-Za-z0-9_]+", name):
        return name in words
    pat = re.compile(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])")
    return any(pat.search(md.text) for md in docs.values())


def is_test_binary(name, test_patterns):
    return name.endswith(TEST_SUFFIXES) or name in TEST_NAMES or \
        any(fnmatch.fnmatchcase(name, p) for p in test_patterns)


def check_binaries(bin_dir, code, words, docs, report):
    """Returns (binaries checked, test binaries exempt)."""
    test_patterns = code.executable_patterns(tests_only=True)
    all_patterns = code.executable_patterns(tests_only=False)
    checked = exempt = 0
    for name in sorted(os.listdir(bin_dir)):
        path = os.path.join(bin_dir, name)
        if not os.path.isfile(path) or not os.access(path, os.X_OK):
            continue
        if is_test_binary(name, test_patterns):
            exempt += 1
            continue
        checked += 1
        if documented(name, words, docs):
            continue
        if any(fnmatch.fnmatchcase(name, p) for p in all_patterns):
            report.fail(f"binary {name}", f"{bin_dir}/{name} is not named in any markdown file")
        else:
            report.note(f"binary {name}", "not named in any markdown file, and no CMakeLists.txt "
                                          "makes it (left over from an older build?)")
    return checked, exempt


def check_env(code, words, report):
    for name in sorted(code.read_non_test):
        if name not in words:
            report.fail(code.read_non_test[name],
                        f"environment variable {name} is read here but named in no markdown file")
    return len(code.read_non_test)


# A C10D_ name in a doc's code: group 1 "-D" (a CMake option), group 2 the name, group 3 a "(" or
# "*" after it (a macro call, a family of names).
DOC_VAR_RE = re.compile(r"(?:(-D)|(?<![A-Za-z0-9_]))(C10D_[A-Z0-9_]*[A-Z0-9_])(?![A-Za-z0-9_])"
                        r"(\s*[(*])?")


def check_gone(code, md_files, docs, bin_dir, report):
    """Returns (variables checked, build/bin paths checked)."""
    seen_vars = set()
    for rel in md_files:
        reported = set()
        for line, text in docs[rel].code_texts():
            for m in DOC_VAR_RE.finditer(text):
                cmake_opt, name, after = m.group(1), m.group(2), m.group(3)
                if after or name.endswith("_"):
                    continue
                if cmake_opt:
                    if not code.in_cmake(name) and (name, "D") not in reported:
                        reported.add((name, "D"))
                        report.fail(f"{rel}:{line}",
                                    f"-D{name} is documented but no CMake file names it")
                    continue
                seen_vars.add(name)
                if name in code.read_anywhere or name in code.defined or name in reported:
                    continue
                reported.add(name)
                report.fail(f"{rel}:{line}", f"{name} is documented but nothing reads it "
                                             f"(no string literal, $ use, CMake option or macro)")
    n_paths = 0
    if bin_dir:
        patterns = code.executable_patterns(tests_only=False)
        for rel in md_files:
            for i, line in enumerate(docs[rel].lines):
                for m in re.finditer(r"(?<![\w./-])build/bin/([A-Za-z0-9_][A-Za-z0-9_.+-]*)", line):
                    name = m.group(1).rstrip(".")
                    n_paths += 1
                    if os.path.exists(os.path.join(bin_dir, name)):
                        continue
                    if any(fnmatch.fnmatchcase(name, p) for p in patterns):
                        report.note(f"{rel}:{i + 1}", f"build/bin/{name} is not built in this "
                                                      f"configuration ({bin_dir})")
                    else:
                        report.fail(f"{rel}:{i + 1}", f"build/bin/{name} does not exist in "
                                                      f"{bin_dir} and no CMakeLists.txt makes it")
    return len(seen_vars), n_paths


# ---------------------------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", nargs="?",
                    default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--bin-dir", help="the build's bin directory (CMAKE_RUNTIME_OUTPUT_DIRECTORY)")
    ap.add_argument("--checks", default=",".join(ALL_CHECKS),
                    help="comma-separated subset of: " + ", ".join(ALL_CHECKS))
    args = ap.parse_args(argv)
    checks = [c for c in args.checks.split(",") if c]
    unknown = [c for c in checks if c not in ALL_CHECKS]
    if unknown:
        ap.error(f"unknown check(s): {', '.join(unknown)}")
    root = os.path.abspath(args.root)
    if args.bin_dir and not os.path.isdir(args.bin_dir):
        ap.error(f"--bin-dir {args.bin_dir}: not a directory")

    report = Report()
    files = list_files(root)
    md_files = [f for f in files if f.endswith(".md") and not f.startswith("tests/fuzz/corpus/")]
    docs = {rel: Markdown(rel, read_text(root, rel)) for rel in md_files}
    words = doc_words({rel: docs[rel] for rel in md_files})
    summary = [f"{len(md_files)} markdown files"]

    if "links" in checks:
        n_links, n_anchors = check_links(root, md_files, docs, report)
        summary.append(f"{n_links} relative links ({n_anchors} with anchors)")
    code = Code(root, files) if {"binaries", "env", "gone"} & set(checks) else None
    if "binaries" in checks:
        if args.bin_dir:
            checked, exempt = check_binaries(args.bin_dir, code, words, docs, report)
            summary.append(f"{checked} binaries ({exempt} test binaries exempt)")
        else:
            summary.append("binaries not checked (no --bin-dir)")
    if "env" in checks:
        summary.append(f"{check_env(code, words, report)} variables read")
    if "gone" in checks:
        n_vars, n_paths = check_gone(code, md_files, docs, args.bin_dir, report)
        summary.append(f"{n_vars} documented variables")
        if args.bin_dir:
            summary.append(f"{n_paths} build/bin paths")
    notes = f", {report.notes} note{'s' if report.notes > 1 else ''}" if report.notes else ""
    print(f"check-docs: {', '.join(summary)}: {report.failures} failures{notes}")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
