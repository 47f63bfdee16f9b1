#!/usr/bin/env python3
"""Every relative link in README.md, CHANGELOG.md and docs/**/*.md points at an existing file, and
every #anchor matches a heading of the target page (GitHub's slug rules).

Usage: doc_links.py [SOURCE_DIR]
"""
import glob
import os
import re
import sys


def slug(heading):
    h = re.sub(r"`", "", heading.strip().lower())
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def anchors(path):
    out, fence = set(), False
    for line in open(path, encoding="utf-8"):
        if line.lstrip().startswith("```"):
            fence = not fence
        m = None if fence else re.match(r"^#{1,6} (.*)", line)
        if m:
            out.add(slug(m.group(1)))
    return out


def main():
    os.chdir(sys.argv[1] if len(sys.argv) > 1 else ".")
    pages = ["README.md"] + (["CHANGELOG.md"] if os.path.exists("CHANGELOG.md") else [])
    pages += sorted(glob.glob("docs/**/*.md", recursive=True))
    bad = n = 0
    for f in pages:
        text = re.sub(r"```.*?```", "", open(f, encoding="utf-8").read(), flags=re.S)
        text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
        for target in re.findall(r"\]\(([^)\s]*)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            n += 1
            path, _, frag = target.partition("#")
            p = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
            if not os.path.exists(p):
                print(f"{f}: missing file: {target}")
                bad += 1
            elif frag and p.endswith(".md") and frag not in anchors(p):
                print(f"{f}: missing anchor: {target}")
                bad += 1
    print(f"{n} links in {len(pages)} pages, {bad} broken")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
