#!/usr/bin/env python3
"""bertrt search's exact inner-product search beside FAISS's IndexFlatIP (Debian's python3-faiss)
on the same random unit vectors: one query at a time (what `bertrt search` runs per stdin line)
and 100 queries at once, top-10, at each corpus size. Also checks that both find the same top-10.

  bench/search_vs_faiss.py --bench build/bench_search [--dim 384] [--sizes 10000,100000]
                           [--threads T]

Timings: the fastest of repeated calls (bench/best_seconds.h's rule on both sides). --threads T
gives both T threads (BERTRT_NUM_THREADS for bertrt's cpu backend, faiss.omp_set_num_threads);
without it each takes its default (bertrt's adaptive pool, OpenMP's one thread a core).
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

import numpy as np


def best_seconds(f, budget):
    f()
    best, total, r = 1e30, 0.0, 0
    while r < 200 and (r < 3 or total < budget):
        t = time.perf_counter()
        f()
        s = time.perf_counter() - t
        best, total, r = min(best, s), total + s, r + 1
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    import faiss
    env = dict(os.environ)
    if args.threads:
        env["BERTRT_NUM_THREADS"] = str(args.threads)
        faiss.omp_set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run([args.bench, "--dim", str(args.dim), "--sizes", args.sizes, "--dump", d],
                             check=True, stdout=subprocess.PIPE, text=True, env=env).stdout
        ours = {r["n"]: r for r in map(json.loads, out.splitlines())}
        q = np.fromfile(os.path.join(d, "queries.f32"), dtype=np.float32).reshape(-1, args.dim)
        print(f"faiss {faiss.__version__}, omp threads {faiss.omp_get_max_threads()}")
        print("| corpus | bertrt 1 query | FAISS 1 query | bertrt 100 queries | FAISS 100 queries | same top-10 |")
        print("|---|---|---|---|---|---|")
        for n in sorted(ours):
            c = np.fromfile(os.path.join(d, f"corpus_{n}.f32"), dtype=np.float32).reshape(n, args.dim)
            index = faiss.IndexFlatIP(args.dim)
            index.add(c)
            one = best_seconds(lambda: index.search(q[:1], 10), 2.0)
            batch = best_seconds(lambda: index.search(q, 10), 4.0)
            _, idx = index.search(q, 10)
            top = np.fromfile(os.path.join(d, f"top10_{n}.i64"), dtype=np.int64).reshape(-1, 10)
            same = int((idx == top).all(axis=1).sum())
            print(f"| {n:,} × {args.dim} | {ours[n]['one_query_ms']:.3f} ms | {one * 1e3:.3f} ms | "
                  f"{ours[n]['100_queries_ms']:.2f} ms | {batch * 1e3:.2f} ms | {same}/{len(q)} queries |")


if __name__ == "__main__":
    main()
