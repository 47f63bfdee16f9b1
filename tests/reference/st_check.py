#!/usr/bin/env python3
"""bertrt against sentence-transformers' own outputs: converts every folder st_models.py writes
with bertrt-convert, runs `bertrt embed` / `bertrt rerank` (and Python's Model.embed / rerank
through the C API, when --library is given) on the same inputs, and compares with the values the
upstream library computed (expected/sentence_transformers.json, written by st_upstream.py).

The two sides are float32 end to end and differ only in summation order and in libm: two layers
of attention, feed-forward and LayerNorm over 36-wide rows (sums of at most 37 products, each
rounding up to 37 ulps in the worst case), then the pooling's sum over at most 24 tokens and the
Dense modules. The bound, 2e-5 of each row's largest magnitude (about 170 float32 ulps), is that
worst case over the chain; the differences seen are 30× smaller (6.4e-7), and a real mistake (a
mis-handled mask, prompt or truncation) moves values by 1e-2 and more.

Also checks the round trip: `bertrt-convert --to sentence-transformers` of each .brt writes a
folder that converts back to a .brt whose export is the same folder, byte for byte.

Usage: st_check.py --cli build/bertrt --convert build/bertrt-convert --work DIR
                   [--library build/libbertrt.so]
Exit status 77 when torch is missing (st_models.py needs it; the caller skips).
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOL = 2e-5


def run(cmd, stdin=None):
    p = subprocess.run(cmd, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(cmd)}: exit {p.returncode}\n{p.stderr}")
    return p.stdout


def close(got, want, what):
    """Max |got − want| / max(1, max |want|) over the row, against TOL; returns the worst ratio."""
    if len(got) != len(want):
        raise SystemExit(f"FAIL: {what}: {len(got)} rows, expected {len(want)}")
    worst = 0.0
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = (g if isinstance(g, list) else [g]), (w if isinstance(w, list) else [w])
        if len(g) != len(w):
            raise SystemExit(f"FAIL: {what}: row {i} has {len(g)} values, expected {len(w)}")
        scale = max([1.0] + [abs(x) for x in w])
        err = max(abs(a - b) for a, b in zip(g, w)) / scale
        worst = max(worst, err)
        if err > TOL:
            raise SystemExit(f"FAIL: {what}: row {i} differs by {err:.3g} of its scale "
                             f"(bound {TOL}):\n  got  {g[:6]}...\n  want {w[:6]}...")
    return worst


def tree(folder):
    """Every file under `folder` (relative path → bytes) and every subfolder (→ None)."""
    out = {}
    for root, dirs, files in os.walk(folder):
        for d in dirs:
            out[os.path.relpath(os.path.join(root, d), folder)] = None
        for f in files:
            with open(os.path.join(root, f), "rb") as fh:
                out[os.path.relpath(os.path.join(root, f), folder)] = fh.read()
    return out


def embed_flags(case):
    flags = []
    enc = case.get("encode", {})
    if not enc.get("normalize_embeddings"):
        flags.append("--no-normalize")
    if case.get("truncate_dim"):
        flags += ["--dimensions", str(case["truncate_dim"])]
    if "prompt_name" in enc:
        flags += ["--prompt-name", enc["prompt_name"]]
    if "prompt" in enc:
        flags += ["--prompt", enc["prompt"]]
    unknown = set(enc) - {"normalize_embeddings", "prompt_name", "prompt"}
    if unknown:
        raise SystemExit(f"FAIL: encode arguments this check cannot map: {sorted(unknown)}")
    return flags


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--convert", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--library")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    models = os.path.join(a.work, "models")
    p = subprocess.run([sys.executable, os.path.join(HERE, "st_models.py"), "--out", models])
    if p.returncode == 77:
        sys.exit(77)
    if p.returncode != 0:
        raise SystemExit("FAIL: st_models.py")
    expected = json.load(open(os.path.join(HERE, "expected", "sentence_transformers.json")))
    sentences, pairs = expected["sentences"], expected["pairs"]
    api = None
    if a.library:
        sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
        os.environ["BERTRT_LIBRARY"] = a.library
        import bertrt as api  # noqa: E402
    checked, worst = 0, 0.0
    for name, v in expected["variants"].items():
        brt = os.path.join(a.work, name + ".brt")
        run([a.convert, "-q", os.path.join(models, v["folder"]), "-o", brt])
        for cid, case in v["cases"].items():
            what = f"{name}/{cid}"
            if v["kind"] == "CrossEncoder":
                raw = case["predict"].get("activation_fn") == "torch.nn.modules.linear.Identity"
                got = []
                for q, passage in pairs:
                    out = run([a.cli, "rerank", "--model", brt, "--query", q]
                              + (["--raw-scores"] if raw else []), stdin=passage + "\n")
                    got.append(json.loads(out)["score"])
                worst = max(worst, close(got, case["scores"], what + " (bertrt rerank)"))
                if api:
                    with api.Model(brt) as m:
                        py = [m.rerank(q, [passage], raw_scores=raw)[0]["score"] for q, passage in pairs]
                    worst = max(worst, close(py, case["scores"], what + " (Model.rerank)"))
            else:
                flags = embed_flags(case)
                out = run([a.cli, "embed", "--model", brt] + flags, stdin="".join(s + "\n" for s in sentences))
                got = [json.loads(line)["embedding"] for line in out.splitlines()]
                worst = max(worst, close(got, case["embeddings"], what + " (bertrt embed)"))
                if api:
                    enc = case.get("encode", {})
                    with api.Model(brt) as m:
                        py = m.embed(sentences, dimensions=case.get("truncate_dim"),
                                     normalize=bool(enc.get("normalize_embeddings")),
                                     prompt_name=enc.get("prompt_name"), prompt=enc.get("prompt"))
                    worst = max(worst, close(py.tolist(), case["embeddings"], what + " (Model.embed)"))
            checked += 1
        if v["kind"] == "SentenceTransformer":
            # The export: its folder converts back to a .brt whose export is the same folder, byte
            # for byte (every tensor, config and prompt survives the trip).
            folder = os.path.join(a.work, name + ".st")
            run([a.convert, "-q", "--to", "sentence-transformers", brt, "-o", folder])
            again = os.path.join(a.work, name + ".again.brt")
            run([a.convert, "-q", folder, "-o", again])
            folder2 = os.path.join(a.work, name + ".again.st")
            run([a.convert, "-q", "--to", "sentence-transformers", again, "-o", folder2])
            if tree(folder) != tree(folder2):
                raise SystemExit(f"FAIL: {name}: {folder} and {folder2} differ: the export does "
                                 "not convert back unchanged")
            e1 = run([a.cli, "embed", "--model", brt], stdin="".join(s + "\n" for s in sentences))
            e2 = run([a.cli, "embed", "--model", again], stdin="".join(s + "\n" for s in sentences))
            if e1 != e2:
                raise SystemExit(f"FAIL: {name}: the exported folder embeds differently")
    quantized = 0
    if api:
        # Python's quantize_embeddings (bertrt_quantize_embeddings) on the float32 inputs of
        # expected/st_quantize.json: the same codes as the library's own quantize_embeddings.
        import numpy as np  # noqa: E402
        q = json.load(open(os.path.join(HERE, "expected", "st_quantize.json")))
        for case in q["cases"]:
            x = np.array(case["embeddings"], dtype=np.float32)
            cal = case.get("calibration")
            for precision, want in case["outputs"].items():
                got = api.quantize_embeddings(
                    x, precision, calibration_embeddings=None if cal is None else np.array(cal, np.float32))
                if not np.array_equal(got.astype(int), np.array(want)):
                    raise SystemExit(f"FAIL: quantize_embeddings {case['name']} {precision}: codes "
                                     "differ from sentence-transformers'")
                quantized += 1
    print(f"st_check: {checked} cases of {len(expected['variants'])} models equal sentence-transformers "
          f"{expected['upstream']['sentence_transformers']}'s outputs (worst {worst:.2g} of a row's "
          f"scale, bound {TOL}); every export converts back unchanged"
          + (f"; {quantized} quantize_embeddings cases give its codes" if quantized else ""))


if __name__ == "__main__":
    main()
