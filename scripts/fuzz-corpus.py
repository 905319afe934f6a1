#!/usr/bin/env python3
"""A fuzz target's corpus as one archive: tests/fuzz/corpus/<target>_seed_corpus.zip (OSS-Fuzz's
habit), so that the tree holds ten archives instead of ten thousand inputs.

    scripts/fuzz-corpus.py unpack ZIP DIR [--stamp FILE]
    scripts/fuzz-corpus.py pack DIR ZIP

unpack  DIR becomes exactly the archive's inputs: it is removed and written afresh (nothing left
        from an older archive), and FILE, when given, is touched last (the build's stamp that the
        archive was unpacked; tests/fuzz/CMakeLists.txt). Every entry must be a plain file name:
        no directory, no `..`, no repeated name.
pack    every regular file directly in DIR (not its subdirectories) into ZIP, flat, sorted by name,
        deflated, with a fixed time and mode, so that the same inputs give the same bytes (a
        campaign that found nothing new leaves the tracked archive unchanged). ZIP is replaced
        only once it is written.

Both print how many inputs they handled. Python's zipfile is used, not zip/unzip, which a fresh
Debian may lack; the build needs python3 already (tests/docs).
"""
import os
import shutil
import sys
import tempfile
import zipfile

# 1980-01-01, the earliest time a zip entry can hold; a fixed one keeps the archive's bytes a
# function of the inputs alone.
FIXED_TIME = (1980, 1, 1, 0, 0, 0)
FILE_MODE = 0o100644  # a regular file, rw-r--r--


def fail(msg):
    sys.stderr.write(f"fuzz-corpus: {msg}\n")
    sys.exit(2)


def check_name(zip_path, name, seen):
    if "/" in name or "\\" in name or name.strip(".") == "":
        fail(f"{zip_path}: entry {name!r} is not a plain file name")
    if name in seen:
        fail(f"{zip_path}: entry {name!r} appears twice")
    seen.add(name)


def unpack(zip_path, out_dir, stamp):
    out_dir = os.path.abspath(out_dir)
    parent = os.path.dirname(out_dir)
    os.makedirs(parent, exist_ok=True)
    # Written beside DIR and renamed into place: an interrupted unpack leaves no half corpus.
    tmp = tempfile.mkdtemp(prefix=os.path.basename(out_dir) + ".unpack-", dir=parent)
    try:
        seen = set()
        with zipfile.ZipFile(zip_path) as z:
            for info in z.infolist():
                check_name(zip_path, info.filename, seen)
                if info.is_dir():
                    fail(f"{zip_path}: entry {info.filename!r} is a directory")
                # read() checks the entry's CRC-32.
                with open(os.path.join(tmp, info.filename), "wb") as f:
                    f.write(z.read(info))
        if stamp and os.path.exists(stamp):
            os.remove(stamp)  # the stamp must not outlive a half-replaced DIR
        if os.path.lexists(out_dir):
            shutil.rmtree(out_dir)
        os.rename(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if stamp:
        with open(stamp, "w") as f:
            f.write(f"{len(seen)} inputs from {os.path.abspath(zip_path)}\n")
    print(f"fuzz-corpus: {len(seen)} inputs from {zip_path} into {out_dir}")


def write_zip(fileobj, inputs):
    """Writes (name, bytes) pairs, in the order given, as pack's archive."""
    with zipfile.ZipFile(fileobj, "w") as z:
        for name, data in inputs:
            info = zipfile.ZipInfo(name, date_time=FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # Unix, so that external_attr holds the mode
            info.external_attr = FILE_MODE << 16
            z.writestr(info, data, compresslevel=9)


def pack(in_dir, zip_path):
    names = sorted(n for n in os.listdir(in_dir)
                   if os.path.isfile(os.path.join(in_dir, n))
                   and not os.path.islink(os.path.join(in_dir, n)))
    if not names:
        fail(f"{in_dir}: no inputs to pack")
    zip_path = os.path.abspath(zip_path)
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(zip_path) + ".", suffix=".tmp",
                               dir=os.path.dirname(zip_path))
    os.close(fd)
    try:
        for name in names:
            check_name(in_dir, name, set())

        def inputs():
            for name in names:
                with open(os.path.join(in_dir, name), "rb") as f:
                    yield name, f.read()

        with open(tmp, "wb") as f:
            write_zip(f, inputs())
        os.chmod(tmp, 0o644)
        os.replace(tmp, zip_path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    print(f"fuzz-corpus: {len(names)} inputs from {in_dir} into {zip_path}")


def main(argv):
    if len(argv) >= 3 and argv[0] == "unpack":
        stamp = None
        rest = argv[3:]
        if rest[:1] == ["--stamp"] and len(rest) == 2:
            stamp = rest[1]
        elif rest:
            fail(f"unpack: unexpected arguments {rest}")
        unpack(argv[1], argv[2], stamp)
    elif len(argv) == 3 and argv[0] == "pack":
        pack(argv[1], argv[2])
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
