#!/usr/bin/env python3
"""Expected quantized embeddings computed by sentence-transformers' own quantize_embeddings.

  st_quantize.py --library SITE_OR_FILE --out tests/reference/expected/st_quantize.json

SITE_OR_FILE is a folder holding sentence_transformers/ (an installed copy, e.g. pip --target) or
the library's sentence_transformers/quantization.py itself (e.g. from a git checkout). The module
file is loaded on its own (it imports only numpy and torch), so the rest of the package and its
dependencies need not import; the function that runs is the library's, unchanged.

The inputs are float32 matrices drawn here (a fixed seed) with the cases the arithmetic must get
right: exact zeros (binary: x > 0 is 0), values at a dimension's minimum and maximum (codes 0 and
255, −128 and 127 up to float32 rounding of (x − start) / step), ranges from the embeddings
themselves (upstream's default) and from separate calibration embeddings, and a width that is not
a multiple of 8 (one row: upstream packs the flattened matrix, which keeps rows apart only then).
Every float32 is written as the decimal of its exact value (Python's repr of the double).
tests/unit/embedding_precision_test.cpp quantizes the same inputs and requires equal codes.

Run it on Debian's python3 (numpy, torch); it is not part of the test suite.
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np


def load_quantize(library):
    path = library
    if os.path.isdir(library):
        path = os.path.join(library, "sentence_transformers", "quantization.py")
    spec = importlib.util.spec_from_file_location("st_quantization", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.quantize_embeddings, path


def library_version(path):
    """The version beside the file: an installed dist-info, else the git commit of a checkout."""
    site = os.path.dirname(os.path.dirname(path))
    for name in sorted(os.listdir(site)):
        if name.startswith("sentence_transformers-") and name.endswith(".dist-info"):
            return name[len("sentence_transformers-"):-len(".dist-info")]
    try:
        return "git " + subprocess.check_output(["git", "-C", site, "rev-parse", "HEAD"],
                                                text=True).strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def floats(m):
    return [[float(np.float32(v)) for v in row] for row in np.asarray(m, dtype=np.float32)]


def ints(m):
    return [[int(v) for v in row] for row in np.asarray(m)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--library", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    quantize, path = load_quantize(args.library)

    rng = np.random.default_rng(20240607)
    cases = []

    # Ranges from the embeddings themselves (encode(precision=...)'s default).
    e = rng.standard_normal((9, 16)).astype(np.float32)
    e[0, 0] = 0.0
    e[1, 3] = -0.0
    e[2, :] = 0.0
    e /= np.linalg.norm(e, axis=1, keepdims=True).clip(min=1e-12).astype(np.float32)
    e = e.astype(np.float32)
    case = {"name": "self_ranges", "embeddings": floats(e), "outputs": {}}
    for precision in ("int8", "uint8", "binary", "ubinary"):
        case["outputs"][precision] = ints(quantize(e, precision))
    cases.append(case)

    # Ranges from calibration embeddings; the inputs lie inside them (outside, numpy's C cast is
    # not defined: bertrt saturates there).
    cal = rng.standard_normal((40, 24)).astype(np.float32)
    lo, hi = cal.min(axis=0), cal.max(axis=0)
    x = rng.standard_normal((6, 24)).astype(np.float32)
    x = np.clip(x, lo, hi).astype(np.float32)
    x[0] = lo
    x[1] = hi
    case = {"name": "calibration", "embeddings": floats(x), "calibration": floats(cal),
            "outputs": {}}
    for precision in ("int8", "uint8"):
        case["outputs"][precision] = ints(quantize(x, precision, calibration_embeddings=cal))
    cases.append(case)

    # A width that is not a multiple of 8, one row.
    y = rng.standard_normal((1, 12)).astype(np.float32)
    case = {"name": "width_12", "embeddings": floats(y), "outputs": {}}
    for precision in ("binary", "ubinary"):
        case["outputs"][precision] = ints(quantize(y, precision))
    cases.append(case)

    doc = {
        "generator": "tests/reference/st_quantize.py",
        "library": {"sentence-transformers": library_version(path), "numpy": np.__version__},
        "cases": cases,
    }
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    os.replace(tmp, args.out)
    print(f"wrote {args.out}: {len(cases)} cases, sentence-transformers "
          f"{doc['library']['sentence-transformers']}, numpy {np.__version__}", file=sys.stderr)


if __name__ == "__main__":
    main()
