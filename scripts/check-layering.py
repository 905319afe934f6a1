#!/usr/bin/env python3
"""Checks every #include "..." in the tree against cmake/layering.txt.

A file belongs to the room whose folder is the longest prefix of its path; an include names a
header in the room whose folder is the longest prefix of the included path. A file may include
its own room and the rooms its room stands on; nothing else. The rooms inside libc10d are also
enforced by the compiler (cmake/C10dRooms.cmake); this check covers the rest of the tree too
(the store libraries, layers, tools, examples, integrations) and runs without a build.

Usage: check-layering.py [ROOT]   (ROOT: the repository, default: this script's parent's parent)
Exit status 0 when every include is allowed, 1 listing each one that is not, 2 on a bad table.
"""
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCE_SUFFIXES = (".h", ".hpp", ".cc", ".cpp", ".c", ".h.in", ".cc.in")


def load_rooms(root):
    rooms = {}  # name -> (folder, set of rooms it stands on, or None for any)
    path = os.path.join(root, "cmake", "layering.txt")
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            fields = line.split()
            if len(fields) < 3:
                sys.exit(f"{path}:{n}: expected 'room folder stands-on...', got '{line}'")
            name, folder, below = fields[0], fields[1], fields[2:]
            if below == ["-"]:
                below = []
            rooms[name] = (folder, None if below == ["*"] else set(below))
    for name, (_, below) in rooms.items():
        for b in below or ():
            if b not in rooms:
                sys.exit(f"{path}: room {name} stands on '{b}', which is no room")
    return rooms


def room_of(path, rooms):
    best, best_len = None, -1
    for name, (folder, _) in rooms.items():
        if (path == folder or path.startswith(folder + "/")) and len(folder) > best_len:
            best, best_len = name, len(folder)
    return best


def tracked_sources(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "--cached", "--others",
                              "--exclude-standard"], check=True, capture_output=True, text=True)
        files = out.stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        files = [os.path.relpath(os.path.join(d, f), root)
                 for d, _, fs in os.walk(root) for f in fs]
    return sorted(f for f in files if f.endswith(SOURCE_SUFFIXES)
                  and os.path.isfile(os.path.join(root, f)))


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1
                           else os.path.join(os.path.dirname(__file__), ".."))
    rooms = load_rooms(root)
    bad = []
    checked = 0
    for path in tracked_sources(root):
        mine = room_of(path, rooms)
        if mine is None:
            continue
        below = rooms[mine][1]
        with open(os.path.join(root, path), errors="replace") as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = room_of(m.group(1), rooms)
                if target is None:
                    continue  # a header of the file's own folder, or of another library
                checked += 1
                if target == mine or below is None or target in below:
                    continue
                allowed = ", ".join(sorted(below)) or "nothing"
                bad.append(f"{path}:{n}: includes {m.group(1)} (room {target}), but room {mine} "
                           f"stands on {allowed} (cmake/layering.txt)")
    for b in bad:
        print(b)
    print(f"check-layering: {checked} includes checked, {len(bad)} not allowed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
