#!/usr/bin/env python3
"""Compares two end-to-end runs of platforms/ci_arm.sh (aarch64 under qemu vs x86-64).

Each run folder holds pretrain.jsonl and finetune.jsonl (bertrt --metrics: one JSON object a step,
plus {"eval": ...} lines) and eval.json (bertrt eval --json). Same seeds and data, so the two runs
differ only in floating-point rounding: OpenBLAS picks other SGEMM kernels (NEON vs AVX2, other
blocking, so other summation orders) and GCC contracts a*b+c into FMA in different places. Each
such difference is a few ulp of fp32 (~1e-7 relative) per operation; the AdamW steps carry them
forward (Adam divides by sqrt(v), so a gradient that is near zero can move a weight by a visibly
different amount), which is why the bound is on the loss, step by step, not on the weights.

Tolerance: |a - b| <= RTOL * |b| + ATOL on every training loss and the final eval loss, with
RTOL = 1e-5 and ATOL = 1e-6. Measured here (qemu 7.2, Debian 12 OpenBLAS 0.3.21, GCC 12): max
relative difference 1.0e-8 over 20 pre-training losses, 5.4e-8 over 20 fine-tuning losses (CI now
runs 8 of each), 2.7e-10 on the eval loss; the bound leaves a factor of ~200 for other OpenBLAS
kernels (a real board picks its own core's) and other qemu versions. A real defect (a wrong NEON kernel, a
signedness bug from ARM's unsigned char, another data order or initialisation) moves losses by
1e-3 or more from the first steps. Eval accuracy may differ by at most one example (a near-tie
between two logits can flip with a rounding difference).
--rtol R replaces RTOL (e.g. for QAT runs: a fake-quant input that lands on the other side of a
rounding tie moves by one quantization step, which moves the loss by ~1e-4, not ~1e-7).
Usage: compare_runs.py [--rtol R] A_DIR B_DIR   (labelled aarch64 / x86-64: any two runs)
"""
import json
import sys

RTOL = 1e-5
ATOL = 1e-6


def steps(path):
    out = {}
    with open(path) as f:
        for line in f:
            j = json.loads(line)
            if "eval" not in j:
                out[j["step"]] = j["loss"]
    return out


def compare(name, a, b):
    if sorted(a) != sorted(b) or not a:
        sys.exit(f"{name}: steps differ: {sorted(a)} vs {sorted(b)}")
    worst_abs = worst_rel = 0.0
    bad = []
    for s in sorted(a):
        d = abs(a[s] - b[s])
        worst_abs = max(worst_abs, d)
        worst_rel = max(worst_rel, d / max(abs(b[s]), 1e-30))
        if d > RTOL * abs(b[s]) + ATOL:
            bad.append(f"step {s}: aarch64 {a[s]:.7f} x86-64 {b[s]:.7f}")
    print(f"{name}: {len(a)} steps, max |diff| {worst_abs:.3g}, max relative {worst_rel:.3g}"
          f" (first loss {a[min(a)]:.5f} / {b[min(b)]:.5f}, last {a[max(a)]:.5f} / {b[max(b)]:.5f})")
    return bad


def main():
    global RTOL
    args = sys.argv[1:]
    if args[:1] == ["--rtol"]:
        RTOL, args = float(args[1]), args[2:]
    arm, x86 = args[0], args[1]
    bad = []
    for phase in ("pretrain", "finetune"):
        bad += compare(phase, steps(f"{arm}/{phase}.jsonl"), steps(f"{x86}/{phase}.jsonl"))
    ea = json.load(open(f"{arm}/eval.json"))
    ex = json.load(open(f"{x86}/eval.json"))
    d = abs(ea["loss"] - ex["loss"])
    print(f"eval: loss {ea['loss']:.6f} / {ex['loss']:.6f} (|diff| {d:.3g}), "
          f"accuracy {ea['accuracy']:.4f} / {ex['accuracy']:.4f} on {ex['examples']} examples")
    if d > RTOL * abs(ex["loss"]) + ATOL:
        bad.append(f"eval loss {ea['loss']} vs {ex['loss']}")
    if ea["examples"] != ex["examples"] or \
            abs(ea["accuracy"] - ex["accuracy"]) * ex["examples"] > 1.5:
        bad.append(f"eval accuracy {ea['accuracy']} vs {ex['accuracy']} differs by more than one example")
    if bad:
        print(f"aarch64 and x86-64 disagree beyond rtol {RTOL}, atol {ATOL}:\n  " + "\n  ".join(bad))
        sys.exit(1)
    print(f"aarch64 == x86-64 within rtol {RTOL}, atol {ATOL}")


if __name__ == "__main__":
    main()
