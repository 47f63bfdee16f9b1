#!/usr/bin/env python3
"""The documentation's commands, run as a reader would run them.

Every fenced block whose info string is `sh` is a command a reader runs. The line just above the
fence may say what happens to it:
  <!-- not run: REASON -->     the block is not run (the reason is required and shown in --list)
  <!-- doc-test: arm -->       run only in CI's ARM stage (after the aarch64 package is built)
  <!-- doc-test: file PATH --> (above a c/python/cmake block) the block equals the checked-in file
A page may declare hidden set-up commands, run before its first block:
  <!-- doc-test setup:
  bertrt init --preset tiny --vocab ../shared/data/vocab/bert-base-uncased-vocab.txt -o model.brt
  -->

A page's runnable blocks run in order in one `bash -euo pipefail`, in a fresh scratch folder that
looks like a checkout's root (links to the checkout's top-level entries, the build folder as
build/, ../shared beside it), with the build folder first on PATH.

Usage:
  doc_commands.py --source DIR --lint                     every fence labelled, every sh block marked or run
  doc_commands.py --source DIR --build DIR --shared DIR [--stage main|arm] PAGE...
  doc_commands.py --source DIR --list                     each page's blocks and what happens to them
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([^\s`]*)")
NOT_RUN = re.compile(r"^<!--\s*not run:\s*(.*?)\s*-->$")
TAG = re.compile(r"^<!--\s*doc-test:\s*(.*?)\s*-->$")
SETUP = re.compile(r"<!--\s*doc-test setup:\s*\n(.*?)-->", re.S)
# Labels a fence may carry; `sh` is the one that runs. Anything else (bash, console, shell) is
# refused so that a runnable command cannot hide under another name.
KNOWN_LANGS = {"sh", "text", "c", "cpp", "python", "json", "jsonl", "cmake", "tsv", "diff", "ini",
               "toml", "yaml", "mermaid"}


class Block:
    def __init__(self, page, line, lang, body, marker):
        self.page, self.line, self.lang, self.body, self.marker = page, line, lang, body, marker

    @property
    def not_run_reason(self):
        m = NOT_RUN.match(self.marker or "")
        return m.group(1) if m else None

    @property
    def tag(self):
        m = TAG.match(self.marker or "")
        return m.group(1) if m else None


def pages(source):
    out = [os.path.join(source, "README.md")]
    for root, _, files in os.walk(os.path.join(source, "docs")):
        out += [os.path.join(root, f) for f in files if f.endswith(".md")]
    return sorted(out)


def parse(path):
    """The page's fenced blocks and its set-up commands."""
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3)
        prev = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        marker = prev if prev.startswith("<!--") and prev.endswith("-->") else None
        body, j = [], i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j])
            j += 1
        blocks.append(Block(path, i + 1, lang, "\n".join(body) + "\n", marker))
        i = j + 1
    text = "\n".join(lines)
    setups = [m.group(1) for m in SETUP.finditer(text)]
    return blocks, setups


def lint(source):
    bad = 0
    for page in pages(source):
        rel = os.path.relpath(page, source)
        blocks, _ = parse(page)
        for b in blocks:
            where = f"{rel}:{b.line}"
            if not b.lang:
                print(f"{where}: fenced block without a language (sh, text, c, python, json ...)")
                bad += 1
            elif b.lang not in KNOWN_LANGS:
                print(f"{where}: fence language '{b.lang}': use sh for commands, text for output")
                bad += 1
            if b.marker and b.marker.startswith("<!-- not run") and not b.not_run_reason:
                print(f"{where}: 'not run' without a reason")
                bad += 1
            if b.tag and b.tag.startswith("file "):
                path = os.path.join(source, b.tag[5:].strip())
                if not os.path.exists(path):
                    print(f"{where}: {b.tag[5:].strip()}: no such file")
                    bad += 1
                elif open(path, encoding="utf-8").read().rstrip("\n") != b.body.rstrip("\n"):
                    print(f"{where}: the block differs from {b.tag[5:].strip()}")
                    bad += 1
            elif b.tag and b.tag not in ("arm",):
                print(f"{where}: unknown doc-test tag '{b.tag}'")
                bad += 1
    return bad


def scratch_checkout(source, build, shared):
    top = tempfile.mkdtemp(prefix="bertrt-doc-")
    root = os.path.join(top, "bertrt")
    os.mkdir(root)
    for name in os.listdir(source):
        if name in (".git", "build"):
            continue
        os.symlink(os.path.join(source, name), os.path.join(root, name))
    os.symlink(os.path.abspath(build), os.path.join(root, "build"))
    os.symlink(os.path.abspath(shared), os.path.join(top, "shared"))
    return top, root


def run_page(page, source, build, shared, stage, timeout, verbose=False):
    blocks, setups = parse(page)
    rel = os.path.relpath(page, source)
    sh = [b for b in blocks if b.lang == "sh" and b.not_run_reason is None]
    if stage == "main":
        sh = [b for b in sh if b.tag != "arm"]
    elif not any(b.tag == "arm" for b in sh):
        sh = []  # the ARM stage runs only pages that have ARM blocks (all their blocks)
    if not sh:
        print(f"{rel}: no commands to run in the {stage} stage")
        return 0
    top, root = scratch_checkout(source, build, shared)
    script = ["set -euo pipefail", f"cd {root}"]
    for s in setups:
        script += ["echo '### doc-test setup' >&2", s]
    for b in sh:
        script += [f"echo '### {rel}:{b.line}' >&2", b.body]
    env = dict(os.environ)
    env["PATH"] = os.path.abspath(build) + os.pathsep + env.get("PATH", "")
    env.setdefault("BERTRT_NUM_THREADS", "1")  # ctest runs pages side by side
    try:
        p = subprocess.run(["bash", "-c", "\n".join(script)], env=env, cwd=root, timeout=timeout,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
        rc, out = p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        partial = e.stdout or ""
        if isinstance(partial, bytes):
            partial = partial.decode(errors="replace")
        rc, out = 124, partial + f"\n(timed out after {timeout} s)"
    if rc != 0:
        last = [l for l in out.splitlines() if l.startswith("### ")]
        print(out[-6000:])
        print(f"{rel}: FAILED (exit {rc}) in the block at {last[-1][4:] if last else 'set-up'}")
    else:
        if verbose:
            print(out)
        print(f"{rel}: {len(sh)} blocks ran")
        shutil.rmtree(top, ignore_errors=True)
    return 0 if rc == 0 else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", required=True)
    ap.add_argument("--build")
    ap.add_argument("--shared")
    ap.add_argument("--stage", choices=["main", "arm"], default="main")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--lint", action="store_true")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each page's output")
    ap.add_argument("pages", nargs="*")
    a = ap.parse_args()
    source = os.path.abspath(a.source)
    if a.lint:
        return 1 if lint(source) else 0
    if a.list:
        for page in pages(source):
            for b in parse(page)[0]:
                if b.lang == "sh":
                    what = f"not run: {b.not_run_reason}" if b.not_run_reason is not None else \
                        ("runs in the ARM stage" if b.tag == "arm" else "runs")
                    print(f"{os.path.relpath(page, source)}:{b.line}: {what}")
        return 0
    if not (a.build and a.shared):
        ap.error("--build and --shared are needed to run pages")
    bad = 0
    for page in a.pages or pages(source):
        bad += run_page(os.path.abspath(page), source, a.build, a.shared, a.stage, a.timeout, a.verbose)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
