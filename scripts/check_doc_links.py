#!/usr/bin/env python3
"""Check that every relative link in README.md and docs/*.md points at an existing file,
and that every #anchor matches a heading (GitHub's slug rules)."""
import re, os, glob, sys
root = sys.argv[1] if len(sys.argv) > 1 else '.'
os.chdir(root)
def slug(h):
    h = re.sub(r'`', '', h.strip().lower())
    h = re.sub(r'[^\w\- ]', '', h)
    return h.replace(' ', '-')
def anchors(path):
    out, fence = set(), False
    for l in open(path, encoding='utf-8'):
        if l.startswith('```'): fence = not fence
        m = None if fence else re.match(r'^#{1,6} (.*)', l)
        if m: out.add(slug(m.group(1)))
    return out
bad = 0; n = 0
for f in ['README.md'] + sorted(glob.glob('docs/*.md')):
    text = open(f, encoding='utf-8').read()
    text = re.sub(r'```.*?```', '', text, flags=re.S)   # no links in code blocks
    for target in re.findall(r'\]\(([^)]*)\)', text):
        if re.match(r'[a-z]+:', target): continue
        n += 1
        path, _, frag = target.partition('#')
        p = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
        if not os.path.exists(p):
            print(f'{f}: missing file: {target}'); bad += 1; continue
        if frag and p.endswith('.md') and frag not in anchors(p):
            print(f'{f}: missing anchor: {target}'); bad += 1
print(f'{n} relative links checked, {bad} broken')
sys.exit(1 if bad else 0)
