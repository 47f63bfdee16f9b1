#!/usr/bin/env bash
# Several LoRA adapters over one base in one process, side by side in one run, through the Python
# module over libbertrt.so (the C API's bertrt_adapter_load / bertrt_model_set_adapter):
#   - peak RSS (VmHWM) of a process that loads the base and runs one forward, against one that
#     loads the base and ten adapters and runs one forward with each;
#   - the time to switch between two loaded adapters (Model.set_adapter, mean of 2,000), and the
#     forward right after a switch against a forward on the same adapter (median of 20 each).
# The base comes from `bertrt init --preset P` (the weights' values do not change memory or
# time); the ten adapters from `bertrt finetune --lora-r 8 --lora-target query,value` (one step
# each, seeds 1-10). Forward: 8 rows of 128 pieces, 2 threads.
# Usage: bench/lora_adapters.sh BERTRT_BINARY LIBBERTRT_SO [DATA_DIR] [PRESETS...]
#        (default presets: mini base)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
. "$(dirname "$0")/lib_checks.sh"
USAGE="usage: $0 BERTRT_BINARY LIBBERTRT_SO [DATA_DIR] [PRESETS...]
  DATA_DIR default: bench/../../shared/data (the vocab, glue/SST-2); PRESETS: mini base
example: $0 build/bertrt build/libbertrt.so ../shared/data mini"
need_args 2 "$@"
need_exe BERTRT_BINARY "$1"
need_file LIBBERTRT_SO "$2"
BIN=$(realpath "$1")
export BERTRT_LIBRARY
BERTRT_LIBRARY=$(realpath "$2")
DATA=${3:-$(dirname "$0")/../../shared/data}
need_dir DATA_DIR "$DATA" "give the data folder as the third argument: $0 $1 $2 DATA_DIR [PRESETS...]"
need_file DATA_DIR/SST-2 "$DATA/glue/SST-2/train.tsv"
need_file DATA_DIR/vocab "$DATA/vocab/bert-base-uncased-vocab.txt"
shift $(( $# >= 3 ? 3 : 2 ))
PRESETS=("$@"); [ ${#PRESETS[@]} -eq 0 ] && PRESETS=(mini base)
export PYTHONPATH
PYTHONPATH=$(realpath "$(dirname "$0")/../python")
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 BERTRT_NUM_THREADS=2
head -n 257 "$DATA/glue/SST-2/train.tsv" > "$T/train.tsv"

# One process: load the base, then N adapters (N = 0: the base alone), a forward with each (or
# one on the base), VmHWM; with N ≥ 2 also the switch timings. Prints one JSON line.
cat > "$T/run.py" <<'PY'
import json, statistics, sys, time
import numpy as np
import bertrt

base, n = sys.argv[1], int(sys.argv[2])
adapters = sys.argv[3:3 + n]
m = bertrt.Model(base)
rng = np.random.default_rng(0)
B, T = 8, 128
batch = {"input_ids": rng.integers(1000, m.config["vocab_size"], (B, T), dtype=np.int32)}
loaded = [m.load_adapter(a) for a in adapters]
if not loaded:
    m.forward(**batch)
for a in loaded:
    m.set_adapter(a)
    m.forward(**batch)
out = {}
if len(loaded) >= 2:
    a, b = loaded[0], loaded[1]
    t0 = time.perf_counter()
    for _ in range(1000):
        m.set_adapter(a)
        m.set_adapter(b)
    out["switch_us"] = (time.perf_counter() - t0) / 2000 * 1e6
    same, switched = [], []
    for i in range(20):
        m.set_adapter(a)
        t0 = time.perf_counter(); m.forward(**batch); switched.append(time.perf_counter() - t0)
        t0 = time.perf_counter(); m.forward(**batch); same.append(time.perf_counter() - t0)
        m.set_adapter(b)
        m.forward(**batch)
    out["forward_same_ms"] = statistics.median(same) * 1e3
    out["forward_switched_ms"] = statistics.median(switched) * 1e3
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        out["peak_mb"] = int(line.split()[1]) / 1024
print(json.dumps(out))
PY

printf '%-5s %-28s %9s %12s %14s %16s\n' model process "peak MB" "switch µs" "fwd same ms" "fwd switched ms"
for p in "${PRESETS[@]}"; do
  "$BIN" init --preset "$p" --vocab "$DATA/vocab/bert-base-uncased-vocab.txt" -o "$T/$p.brt" > /dev/null
  files=()
  for s in $(seq 1 10); do
    "$BIN" finetune --model "$T/$p.brt" --task sst2 --train "$T/train.tsv" --batch-size 8 \
      --max-seq-length 32 --max-steps 1 --seed "$s" --lora-r 8 --lora-target query,value \
      -o "$T/$p-$s.lora.brt" > /dev/null 2> "$T/log" || { cat "$T/log" >&2; exit 1; }
    files+=("$T/$p-$s.lora.brt")
  done
  base_mb=$(du -m "$T/$p.brt" | cut -f1)
  adapter_kb=$(du -k "${files[0]}" | cut -f1)
  for n in 0 10; do
    r=$(/usr/bin/python3 "$T/run.py" "$T/$p.brt" "$n" "${files[@]}")
    /usr/bin/python3 - "$p" "$n" "$r" <<'PY'
import json, sys
p, n, r = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
what = "base alone" if n == 0 else f"base + {n} adapters"
f = lambda k, w: format(r[k], f"{w}.1f") if k in r else "-".rjust(w)
print(f"{p:<5} {what:<28} {r['peak_mb']:9.0f} {f('switch_us', 12)} "
      f"{f('forward_same_ms', 14)} {f('forward_switched_ms', 16)}")
PY
  done
  echo "      (files: base ${base_mb} MB, one adapter ${adapter_kb} KB)"
done
