#!/usr/bin/env python3
"""Compares two pre-training loss curves (bertrt's --metrics and pretrain_twin.py's).

Prints, for loss / mlm_loss / nsp_loss:
  - the first step where the relative difference |a − b| / |b| exceeds --agree (default 1e-3),
    and the largest relative difference over the first --early steps (default 300);
  - means over the last --last steps (default 200) of each curve, their difference, and the
    standard error of that difference (from the per-step differences, which share the batches:
    a paired comparison), so "statistically alike" is |difference| < 3 standard errors.
"""
import argparse
import json
import math


def load(path):
    out = {}
    for line in open(path):
        r = json.loads(line)
        if "eval" not in r and "step" in r:
            out[r["step"]] = r
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bertrt")
    ap.add_argument("twin")
    ap.add_argument("--early", type=int, default=300)
    ap.add_argument("--last", type=int, default=200)
    ap.add_argument("--agree", type=float, default=1e-3)
    args = ap.parse_args()
    a, b = load(args.bertrt), load(args.twin)
    steps = sorted(set(a) & set(b))
    print(f"{len(steps)} common steps ({args.bertrt}: {len(a)}, {args.twin}: {len(b)})")
    for key in ("loss", "mlm_loss", "nsp_loss"):
        if all(abs(b[s][key]) == 0 for s in steps):
            continue
        rel = [abs(a[s][key] - b[s][key]) / max(abs(b[s][key]), 1e-6) for s in steps]
        first = next((s for s, r in zip(steps, rel) if r > args.agree), None)
        early = max(rel[:args.early])
        tail = steps[-args.last:]
        ma = sum(a[s][key] for s in tail) / len(tail)
        mb = sum(b[s][key] for s in tail) / len(tail)
        d = [a[s][key] - b[s][key] for s in tail]
        md = sum(d) / len(d)
        sd = math.sqrt(sum((x - md) ** 2 for x in d) / max(1, len(d) - 1))
        se = sd / math.sqrt(len(d))
        print(f"{key}: max rel. diff over steps 1-{min(args.early, len(steps))} {early:.2e}; "
              f"first step > {args.agree:g}: {first}; "
              f"mean of the last {len(tail)}: bertrt {ma:.4f} twin {mb:.4f} "
              f"(diff {md:+.2e} ± {se:.2e} s.e.)")


if __name__ == "__main__":
    main()
