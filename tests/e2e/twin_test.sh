#!/usr/bin/env bash
# The PyTorch twin of a `bertrt pretrain` run, in a few seconds:
#   - --dump-instances does not change the run (the .brt is byte-identical to one without it) and
#     writes every micro-batch (K per step) in the documented format;
#   - tests/reference/pretrain_twin.py trained on the dump from the same init agrees with bertrt
#     step by step (loss, MLM, NSP, gradient norm, rate) and in every final weight, with NSP and
#     gradient accumulation, and without NSP;
#   - the twin's HF folder converts back with bertrt-convert; `bertrt plot` draws both curves;
#   - the data bertrt made follows create_pretraining_data.py's rules by statistics
#     (tests/reference/pretraining_data_stats.py --check: 5 σ binomial bounds).
# Usage: twin_test.sh BERTRT_BINARY BERTRT_CONVERT_BINARY DATA_DIR
set -uo pipefail
CONVERT=$2
set -- "$1" "$3"
source "$(dirname "$0")/harness.sh"
REF=$(cd "$(dirname "$0")/../reference" && pwd)
PY=/usr/bin/python3
TEXT=$DATA/corpus/enwiki/enwiki_valid_1000docs.txt
if [ ! -f "$TEXT" ]; then
  if [ "${BERTRT_REQUIRE_DATA:-0}" = 1 ]; then echo "required data missing: $TEXT"; exit 1; fi
  echo "SKIP: data missing ($TEXT)"; exit 0
fi
if ! "$PY" -c 'import torch, numpy' 2>/dev/null; then
  if [ "${BERTRT_REQUIRE_DATA:-0}" = 1 ]; then echo "required: $PY with torch and numpy"; exit 1; fi
  echo "SKIP: $PY has no torch/numpy"; exit 0
fi

head -c 400000 "$TEXT" > "$T/corpus.txt"
"$BIN" init --preset tiny --vocab "$VOCAB" --seed 5 -o "$T/init.brt" > /dev/null || { echo "init failed"; exit 1; }
"$CONVERT" -q --to hf "$T/init.brt" -o "$T/init-hf" > /dev/null 2>&1 || { echo "convert --to hf failed"; exit 1; }

# Compares bertrt's and the twin's metrics (per step) and final weights: float32 noise only.
compare() {  # NAME BERTRT_JSONL TWIN_JSONL BERTRT_HF TWIN_HF STEPS
  "$PY" - "$@" <<'EOF'
import json, sys
sys.path.insert(0, sys.argv[7])
from make_hf_models import load_folder
name, a, b, ha, hb, steps = sys.argv[1:7]
A = [json.loads(l) for l in open(a)]
B = [json.loads(l) for l in open(b)]
A = [r for r in A if "eval" not in r]
assert len(A) == len(B) == int(steps), (name, len(A), len(B))
worst = 0.0
for x, y in zip(A, B):
    assert x["step"] == y["step"]
    for k in ("loss", "mlm_loss", "nsp_loss", "grad_norm", "learning_rate"):
        if k not in x:  # bertrt leaves NSP out of an MLM-only run; the twin writes 0
            assert k == "nsp_loss" and y[k] == 0, (name, k, y[k])
            continue
        d = abs(x[k] - y[k]) / max(abs(y[k]), 1e-3)
        worst = max(worst, d)
        # float32 sums in another order: ~1e-6; 1e-4 leaves room for Adam's amplification of
        # near-zero gradients over 3 steps, and is far below any real difference (a wrong rate,
        # mask or label changes the loss at the 1e-2 level).
        assert d < 1e-4, f"{name}: step {x['step']} {k}: bertrt {x[k]} twin {y[k]}"
wa, wb = load_folder(ha), load_folder(hb)
assert set(wa) == set(wb), set(wa) ^ set(wb)
lr = max(r["learning_rate"] for r in A)
for n in wa:
    d = (wa[n].double() - wb[n].double()).abs().max().item()
    # Each step moves a weight by at most ~lr (Adam): float noise is far below 1 % of one step.
    assert d < 0.01 * lr, f"{name}: {n} differs by {d} (lr {lr})"
print(f"{name}: {len(A)} steps, max relative difference {worst:.2e}")
EOF
}

twin() {  # NAME STEPS PRETRAIN_FLAGS...
  local name=$1 steps=$2; shift 2
  local flags=(--corpus "$T/corpus.txt" --max-steps "$steps" --learning-rate 1e-3 --warmup-steps 1 "$@")
  "$BIN" pretrain --model "$T/init.brt" "${flags[@]}" --metrics "$T/$name.jsonl" \
    --dump-instances "$T/$name.inst" -o "$T/$name.brt" > "$T/out" 2>&1 || { bad "$name: pretrain: $(tail -3 "$T/out")"; return; }
  "$BIN" pretrain --model "$T/init.brt" "${flags[@]}" -o "$T/$name-nodump.brt" > /dev/null 2>&1
  cmp -s "$T/$name.brt" "$T/$name-nodump.brt" && ok || bad "$name: --dump-instances changed the run"
  "$PY" "$REF/pretrain_twin.py" --init "$T/init-hf" --instances "$T/$name.inst" --learning-rate 1e-3 \
    --warmup-steps 1 --metrics "$T/$name-twin.jsonl" --out "$T/$name-twin-hf" > "$T/out" 2>&1 \
    || { bad "$name: twin: $(tail -3 "$T/out")"; return; }
  "$CONVERT" -q --to hf "$T/$name.brt" -o "$T/$name-hf" > /dev/null 2>&1 || { bad "$name: export"; return; }
  compare "$name" "$T/$name.jsonl" "$T/$name-twin.jsonl" "$T/$name-hf" "$T/$name-twin-hf" "$steps" "$REF" \
    > "$T/out" 2>&1 && { ok; cat "$T/out"; } || bad "$(tail -3 "$T/out")"
  "$CONVERT" -q "$T/$name-twin-hf" -o "$T/$name-twin.brt" > "$T/out" 2>&1 && ok || bad "$name: convert twin: $(cat "$T/out")"
}

SMALL=(--batch-size 8 --max-seq-length 64 --max-predictions-per-seq 10 --seed 7)
twin nsp-accum 3 "${SMALL[@]}" --gradient-accumulation-steps 2
twin mlm-only 3 "${SMALL[@]}" --dynamic-masking --no-nsp

# One picture of both curves: `bertrt plot` takes several metrics files.
"$BIN" plot "$T/nsp-accum.jsonl" "$T/nsp-accum-twin.jsonl" --label bertrt --label twin \
  -o "$T/both.svg" > /dev/null 2> "$T/err" && ok || bad "plot of two runs: $(cat "$T/err")"
"$PY" - "$T/both.svg" <<'EOF' && ok || bad "plot of two runs: series"
import sys, xml.etree.ElementTree as ET
ids = {e.get("id") for e in ET.parse(sys.argv[1]).iter() if e.get("class") == "series"}
want = {f"{run}-train-{k}" for run in ("bertrt", "twin") for k in ("loss", "mlm_loss", "nsp_loss")}
assert want <= ids, want - ids
EOF
expect_error "plot: labels must match files" "$T/x.svg" "--label given 1 times for 2" -- \
  "$BIN" plot "$T/nsp-accum.jsonl" "$T/nsp-accum-twin.jsonl" --label one -o "$T/x.svg"

# The dump's layout: header, then K records per step with steps 1..N.
"$PY" - "$T/nsp-accum.inst" "$REF" <<'EOF' && ok || bad "dump layout"
import sys
sys.path.insert(0, sys.argv[2])
from instance_dump import read_instances
h, rs = read_instances(sys.argv[1])
assert h == {"seq_len": 64, "micro_batch_size": 4, "accumulation": 2}, h
assert [(r["step"], r["micro"]) for r in rs] == [(s, k) for s in (1, 2, 3) for k in (0, 1)]
for r in rs:
    assert r["input_ids"].shape == (4, 64) and set(r["next_sentence_labels"]) <= {0, 1}
    assert (r["masked_lm_positions"] < 4 * 64).all() and len(r["masked_lm_ids"]) == len(r["masked_lm_positions"])
EOF

# --data-only writes the very batches a training run dumps (same stream, same slicing).
"$BIN" pretrain --model "$T/init.brt" --corpus "$T/corpus.txt" --max-steps 3 --learning-rate 1e-3 \
  --warmup-steps 1 "${SMALL[@]}" --gradient-accumulation-steps 2 --data-only \
  --dump-instances "$T/data-only.inst" > /dev/null 2>&1 || bad "--data-only run"
cmp -s "$T/data-only.inst" "$T/nsp-accum.inst" && ok || bad "--data-only dump differs from the training dump"

# The recipe by statistics on real text: 40 × 32 sequences of 128 (~24,000 chosen tokens), with
# NSP and static masking (the defaults), then without NSP.
for mode in "" "--no-nsp --dynamic-masking"; do
  # shellcheck disable=SC2086
  "$BIN" pretrain --model "$T/init.brt" --corpus "$T/corpus.txt" --max-steps 40 --batch-size 32 \
    $mode --data-only --dump-instances "$T/stats.inst" > /dev/null 2>&1 || bad "stats run $mode"
  "$PY" "$REF/pretraining_data_stats.py" "$T/stats.inst" --vocab "$VOCAB" --check > "$T/out" 2>&1 \
    && ok || bad "data statistics $mode: $(cat "$T/out")"
done

expect_error "--data-only without a dump" "" "needs --dump-instances" -- \
  "$BIN" pretrain --model "$T/init.brt" --corpus "$T/corpus.txt" --max-steps 1 --data-only
expect_error "dump into a missing folder" "" "dump-instances" -- \
  "$BIN" pretrain --model "$T/init.brt" --corpus "$T/corpus.txt" --max-steps 1 \
  --dump-instances "$T/no/such/dir/x.inst" -o "$T/x.brt"

echo "twin_e2e: $pass passed, $fail failed"
[ $fail -eq 0 ]
