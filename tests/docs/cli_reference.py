#!/usr/bin/env python3
"""The command-line reference against the programs: each `<!-- cli-help: PROGRAM [SUBCOMMAND] -->`
marker is followed by a ```text block that must equal `PROGRAM [SUBCOMMAND] --help`, and every
subcommand that `bertrt --help` lists has such a block in one of the pages.

Usage:
  cli_reference.py --page docs/reference/cli.md [--page ...] --bin-dir build            check
  cli_reference.py --page docs/reference/cli.md [--page ...] --bin-dir build --update   rewrite the blocks
"""
import argparse
import os
import re
import subprocess
import sys

MARKER = re.compile(r"^<!--\s*cli-help:\s*(\S+)(?:\s+(\S+))?\s*-->\s*$")


def help_text(bin_dir, program, sub):
    cmd = [os.path.join(bin_dir, program)] + ([sub] if sub else []) + ["--help"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stdout}")
    return p.stdout.rstrip("\n").split("\n")


def subcommands(bin_dir):
    lines = help_text(bin_dir, "bertrt", None)
    out, inside = [], False
    for line in lines:
        if line.strip().upper() == "SUBCOMMANDS:":
            inside = True
            continue
        if inside:
            m = re.match(r"^  (\S+)", line)
            if m:
                out.append(m.group(1))
            elif line.strip() and not line.startswith("   "):
                inside = False
    return out


def check_page(page, a, seen):
    lines = open(page, encoding="utf-8").read().split("\n")
    out, bad, i = [], 0, 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        out.append(lines[i])
        i += 1
        if not m:
            continue
        program, sub = m.group(1), m.group(2)
        seen.add((program, sub))
        if i >= len(lines) or lines[i].strip() != "```text":
            print(f"{page}:{i}: the cli-help marker for {program} {sub or ''} is not followed by ```text")
            bad += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        want = help_text(a.bin_dir, program, sub)
        have = lines[i + 1:j]
        if have != want and not a.update:
            print(f"{page}:{i + 1}: `{program} {sub or ''} --help` differs from the page:")
            for k in range(max(len(have), len(want))):
                h = have[k] if k < len(have) else "<missing>"
                w = want[k] if k < len(want) else "<missing>"
                if h != w:
                    print(f"  page: {h}\n  help: {w}")
                    break
            bad += 1
        out += ["```text"] + want + ["```"]
        i = j + 1
    if a.update:
        open(page, "w", encoding="utf-8").write("\n".join(out))
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--page", required=True, action="append")
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--update", action="store_true")
    a = ap.parse_args()
    seen, bad = set(), 0
    for page in a.page:
        bad += check_page(page, a, seen)
    expected = {("bertrt", None), ("bertrt-convert", None)} | {("bertrt", s) for s in subcommands(a.bin_dir)}
    for program, sub in sorted(expected - seen, key=str):
        print(f"no page has a <!-- cli-help: {program}{' ' + sub if sub else ''} --> block")
        bad += 1
    for program, sub in sorted(seen - expected, key=str):
        print(f"a block for {program} {sub}, which `bertrt --help` does not list")
        bad += 1
    pages = ", ".join(a.page)
    if a.update:
        print(f"{pages}: blocks rewritten" + (f"; {bad} markers to add or remove" if bad else ""))
        return 1 if bad else 0
    print(f"{pages}: {len(seen)} --help blocks" + (f", {bad} problems" if bad else ", all equal"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
