#!/usr/bin/env python3
"""Load on `bertrt serve` over loopback: throughput and latency percentiles for 1 to 64
concurrent clients, with dynamic batching (the default) against one request a forward
(--max-batch-requests 1), in one run, on the same model and machine; and the server's resident
memory after warm-up and after the load.

Each client is a keep-alive connection of wrk (Debian's wrk; its Lua script sends POST /embed
bodies of one text each, a sentence of SST-2's dev set in turn) for a fixed time per point.

Usage: bench/serve_load.py --model M.brt [--bertrt build/bertrt] [--clients 1,4,16,64]
                           [--seconds 8] [--texts ../shared/data/glue/SST-2/dev.tsv] [--threads N]
Prints a Markdown table: mode, clients, requests, throughput (requests/s), p50 and p99 (ms), and
the server's CPU time per request (user + system, /proc/PID/stat).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid):
    """The server's user + system CPU time: on a shared machine the work a request costs, where
    wall-clock throughput also measures the other programs' load."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start(bertrt, model, extra):
    p = subprocess.Popen([bertrt, "serve", "--model", model, "--port", "0"] + extra,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    m = re.match(r"bertrt serve: listening on (http://\S+)", line)
    if not m:
        p.kill()
        sys.exit(f"serve_load: the server did not start: {line}{p.stderr.read()}")
    return p, m.group(1)


def lua_script(texts, path):
    # Lua long strings: the JSON bodies go in verbatim.
    bodies = ",\n".join("[==[" + json.dumps({"inputs": t}) + "]==]" for t in texts if "]==]" not in t)
    with open(path, "w") as f:
        f.write("local bodies = {\n" + bodies + "\n}\n"
                "local i = 0\n"
                "wrk.method = \"POST\"\n"
                "wrk.headers[\"Content-Type\"] = \"application/json\"\n"
                "request = function()\n"
                "  i = i % #bodies + 1\n"
                "  return wrk.format(nil, \"/embed\", nil, bodies[i])\n"
                "end\n"
                "done = function(summary, latency, requests)\n"
                "  io.write(string.format(\"RESULT %d %d %d %.1f %.1f\\n\", summary.requests,\n"
                "    summary.errors.status + summary.errors.connect + summary.errors.read +\n"
                "    summary.errors.write + summary.errors.timeout, summary.duration,\n"
                "    latency:percentile(50), latency:percentile(99)))\n"
                "end\n")


def run_wrk(url, script, clients, seconds):
    out = subprocess.run(["wrk", "-t", str(min(clients, 2)), "-c", str(clients), "-d", f"{seconds}s",
                          "--timeout", "30s", "-s", script, url],
                         capture_output=True, text=True, check=True).stdout
    m = re.search(r"RESULT (\d+) (\d+) (\d+) ([\d.]+) ([\d.]+)", out)
    if not m:
        sys.exit("serve_load: no result from wrk:\n" + out)
    n, errors, micros, p50, p99 = int(m[1]), int(m[2]), int(m[3]), float(m[4]), float(m[5])
    return n, errors, n / (micros / 1e6), p50 / 1000, p99 / 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--bertrt", default="build/bertrt")
    ap.add_argument("--clients", default="1,4,16,64")
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--texts", default="../shared/data/glue/SST-2/dev.tsv")
    ap.add_argument("--threads", type=int, default=0, help="the server's --threads (default: its own)")
    a = ap.parse_args()
    if not shutil.which("wrk"):
        sys.exit("serve_load: needs wrk (apt-get install wrk)")
    with open(a.texts) as f:
        texts = [line.split("\t")[0] for line in f.read().splitlines()[1:] if line.strip()][:512]
    clients = [int(c) for c in a.clients.split(",")]
    tmp = tempfile.mkdtemp()
    script = os.path.join(tmp, "embed.lua")
    lua_script(texts, script)
    extra = ["--threads", str(a.threads)] if a.threads else []
    print("| mode | clients | requests | errors | requests/s | p50 ms | p99 ms | server CPU ms/request |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    # Both servers run side by side (the idle one costs nothing) and each point measures one
    # right after the other: the machine's load drifts less between them.
    modes = (("dynamic batching", []), ("batch size 1", ["--max-batch-requests", "1"]))
    servers = [start(a.bertrt, a.model, extra + flags + ["--max-concurrent-requests", "128"])
               for _, flags in modes]
    rows = {}
    try:
        warm = []
        for p, url in servers:
            run_wrk(url, script, max(clients), 3)  # warm-up: the largest batches size the buffers
            warm.append(rss_kib(p.pid))
        for c in clients:
            for (mode, _), (p, url) in zip(modes, servers):
                cpu0 = cpu_seconds(p.pid)
                n, errors, rps, p50, p99 = run_wrk(url, script, c, a.seconds)
                cpu = (cpu_seconds(p.pid) - cpu0) * 1000 / max(n, 1)
                rows[(mode, c)] = f"| {mode} | {c} | {n} | {errors} | {rps:.0f} | {p50:.1f} | {p99:.1f} | {cpu:.2f} |"
        for mode, _ in modes:
            for c in clients:
                print(rows[(mode, c)])
        print()
        for (mode, _), (p, _), w in zip(modes, servers, warm):
            print(f"{mode}: server RSS {w / 1024:.1f} MiB after warm-up, {rss_kib(p.pid) / 1024:.1f} MiB after the load")
    finally:
        for p, _ in servers:
            p.terminate()
            p.wait(timeout=60)
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
