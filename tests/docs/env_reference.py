#!/usr/bin/env python3
"""docs/reference/environment.md against the code: every BERTRT_* environment variable that the
library, the programs, the Python module, the scripts or the tests read has a row in the page's
table, and every row names a variable that something still reads.

Usage: env_reference.py SOURCE_DIR
"""
import os
import re
import subprocess
import sys

READS = [
    # C and C++: getenv and the small wrappers around it.
    (re.compile(r"\.(c|cc|cpp|h|hpp)$"),
     re.compile(r"\b(?:getenv|env_on|env_or|env_flag)\(\s*\"(BERTRT_\w+)\"")),
    # Python: os.environ.get / os.environ[...] / os.getenv.
    (re.compile(r"\.py$"),
     re.compile(r"(?:environ(?:\.get)?\s*[\(\[]|getenv\()\s*\"(BERTRT_\w+)\"")),
    # Shell: an expansion ($X, ${X}, ${X:-default}).
    (re.compile(r"(\.sh|^\.ci/run)$"), re.compile(r"\$\{?(BERTRT_\w+)")),
    # CMake: $ENV{X}.
    (re.compile(r"(\.cmake|CMakeLists\.txt)$"), re.compile(r"\$ENV\{(BERTRT_\w+)\}")),
]
ROW = re.compile(r"^\|\s*`(BERTRT_\w+)`")


def main():
    src = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    files = subprocess.run(["git", "-C", src, "ls-files"], stdout=subprocess.PIPE, text=True,
                           check=True).stdout.split()
    read = {}
    for f in files:
        for name_re, read_re in READS:
            if not name_re.search(f):
                continue
            try:
                text = open(os.path.join(src, f), encoding="utf-8").read()
            except (UnicodeDecodeError, FileNotFoundError):
                continue
            for m in read_re.finditer(text):
                read.setdefault(m.group(1), f)
    page = os.path.join(src, "docs", "reference", "environment.md")
    rows = {m.group(1) for line in open(page, encoding="utf-8") if (m := ROW.match(line))}
    bad = 0
    for var in sorted(set(read) - rows):
        print(f"docs/reference/environment.md: {var} (read in {read[var]}) has no row in the table")
        bad += 1
    for var in sorted(rows - set(read)):
        print(f"docs/reference/environment.md: {var} has a row, but nothing reads it")
        bad += 1
    print(f"{len(read)} variables read, {len(rows)} rows" + ("" if bad else ": they agree"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
