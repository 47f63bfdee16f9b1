#!/usr/bin/env bash
# Sentence embeddings: bertrt beside ONNX Runtime on the SAME random weights, an all-MiniLM-L6-v2-
# shaped model (6 layers, hidden 384, 12 heads, intermediate 1536, Hugging Face BertModel names)
# with mean pooling and normalization, on a mix of SQuAD v1.1 paragraphs and questions (one text a
# line). Interleaved rounds in one run; a benchmark: it prints figures and asserts nothing.
#
# usage: bench/embed_side_by_side.sh [BUILD_DIR] [OUT_DIR]    (from the project's root; build/ default)
# env:   PARAGRAPHS=200 QUESTIONS=200 (the texts), ROUNDS=3, THREADS=2 (every runtime), BATCH=32,
#        MAX_BATCH_TOKENS=2048, BERTRT_DATA (default ../shared/data: the vocab and SQuAD)
# Needs: Debian python3-numpy python3-onnx, nodejs + npm (onnxruntime-node is installed into
# OUT_DIR/ort on first use). Everything it writes goes to OUT_DIR (default /tmp/bertrt-embed-sbs).
#
# Rows (time to embed every text; best of ROUNDS rounds, each round runs every row once, in turn):
#   ort fp32, ort int8    ORT's fused fp32 graph / quantize_dynamic's int8 graph with QAttention
#                         (bench/peers/make_bert_onnx.py), mean pooling and normalization in
#                         JavaScript as fastembed does them in numpy; batches of BATCH padded to
#                         their longest, in input order (fastembed) and sorted by length
#                         (sentence-transformers' encode: the least padding). Tokenizing is not
#                         timed: the ids come from `bertrt tokenize`.
#   bertrt fp32, int8     `bertrt embed --output` (int8: `bertrt quantize` PTQ calibrated on 256
#                         other SQuAD texts), padded (--no-packing: BATCH a forward, longest first)
#                         and packed (MAX_BATCH_TOKENS tokens a forward, no padding). Its time is the
#                         wall (and CPU) time of embedding every text less that of embedding one, so
#                         process start and model loading are left out and its tokenizing is counted.
# Each row has its wall time and its CPU time (user + system): on a machine other jobs keep busy,
# wall times follow the load, and CPU time with THREADS=1 is the fairer figure.
# Then: the ratios bertrt packed / ORT sorted (below 1: bertrt takes less time), the packed-batch
# gain, and the embeddings' agreement (cosine of ORT fp32 and bertrt fp32; int8 against fp32).
set -u -o pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
# shellcheck source-path=SCRIPTDIR
. "$HERE/lib_checks.sh"
USAGE="usage: $0 [BUILD_DIR] [OUT_DIR]   (defaults: build, /tmp/bertrt-embed-sbs)
  env: PARAGRAPHS=200 QUESTIONS=200 ROUNDS=3 THREADS=2 BATCH=32 MAX_BATCH_TOKENS=2048 BERTRT_DATA=../shared/data
example: ROUNDS=1 PARAGRAPHS=50 QUESTIONS=50 $0 build /tmp/esbs"
need_args 0 "$@"
[ $# -le 2 ] || usage
BUILD=${1:-$ROOT/build}
need_dir BUILD_DIR "$BUILD" "build first: cmake --preset default && cmake --build build; or name the build folder"
BUILD=$(cd "$BUILD" && pwd)
OUT=${2:-${TMPDIR:-/tmp}/bertrt-embed-sbs}
B=$BUILD/bertrt CV=$BUILD/bertrt-convert PY=/usr/bin/python3 PEERS=$HERE/peers
DATA=${BERTRT_DATA:-$ROOT/../shared/data}
PARAGRAPHS=${PARAGRAPHS:-200} QUESTIONS=${QUESTIONS:-200} ROUNDS=${ROUNDS:-3} THREADS=${THREADS:-2}
BATCH=${BATCH:-32} MAX_BATCH_TOKENS=${MAX_BATCH_TOKENS:-2048}
for f in "$B" "$CV"; do
  [[ -f $f && -x $f ]] || check_fail "BUILD_DIR $BUILD: no ${f##*/} in it (cmake --build $BUILD)"
done
need_dir BERTRT_DATA "$DATA" "set BERTRT_DATA to the data folder"
need_file BERTRT_DATA/vocab "$DATA/vocab/bert-base-uncased-vocab.txt"
SQUAD=$DATA/squad_v1.1/dev-v1.1-articles-00-39.json
need_file BERTRT_DATA/squad "$SQUAD"
mkdir -p "$OUT" 2>/dev/null || check_fail "OUT_DIR $OUT: cannot make the folder"

echo "host: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), $(uname -m), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), threads $THREADS"
flags=$( (grep -m1 -E '^(flags|Features)' /proc/cpuinfo || true) | tr ' ' '\n' |
  grep -xE 'avx2|fma|avx512f|avx512_vnni|avx_vnni|amx_int8|asimd|asimddp|i8mm' | tr '\n' ' ')
echo "cpu flags: ${flags:-none of the SIMD flags}"

# --- the model, its ONNX graphs, the texts -------------------------------------------------------
ORT=$OUT/ort
if [ ! -f $ORT/node_modules/onnxruntime-node/package.json ]; then
  mkdir -p $ORT && cp $PEERS/ort/package.json $PEERS/ort/package-lock.json $ORT/
  (cd $ORT && ONNXRUNTIME_NODE_INSTALL=skip npm install --onnxruntime-node-install=skip >/dev/null 2>&1) || { echo "npm install of onnxruntime-node failed"; exit 1; }
fi
cp $PEERS/ort/ort_embed.js $ORT/
d=$OUT/minilm
if [ ! -f $OUT/m.int8.brt ]; then
  $PY $PEERS/make_random_bert.py --preset minilm --bert-model --seed 0 --out-dir $d >/dev/null || exit 1
  # The sentence-transformers folder around it: all-MiniLM-L6-v2's modules and max_seq_length.
  $PY - $d <<'EOF' || exit 1
import json, os, sys
d = sys.argv[1]
H = json.load(open(f"{d}/config.json"))["hidden_size"]
def dump(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    json.dump(obj, open(path, "w"), indent=2)
dump(f"{d}/sentence_bert_config.json", {"max_seq_length": 256, "do_lower_case": False})
dump(f"{d}/1_Pooling/config.json", {"word_embedding_dimension": H, "pooling_mode_cls_token": False,
     "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
     "pooling_mode_mean_sqrt_len_tokens": False, "pooling_mode_weightedmean_tokens": False,
     "pooling_mode_lasttoken": False, "include_prompt": True})
os.makedirs(f"{d}/2_Normalize", exist_ok=True)
dump(f"{d}/modules.json", [
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])
dump(f"{d}/tokenizer_config.json", {"do_lower_case": True, "model_max_length": 512, "tokenizer_class": "BertTokenizer"})
EOF
  cp $DATA/vocab/bert-base-uncased-vocab.txt $d/vocab.txt
  $PY $PEERS/make_bert_onnx.py --model-dir $d --out $d/fp32.onnx >/dev/null || exit 1
  $PY $PEERS/make_bert_onnx.py --model-dir $d --out $d/int8qa.onnx --int8 --qattention >/dev/null || exit 1
  $PY $PEERS/embed_texts.py --data $SQUAD --paragraphs 128 --questions 128 --skip 1000 --seed 1 >$OUT/calibration.txt 2>/dev/null || exit 1
  $CV $d -o $OUT/m.brt -q &&
    $B quantize --model $OUT/m.brt --calibration $OUT/calibration.txt --calibration-examples 256 \
      -o $OUT/m.int8.brt >/dev/null 2>&1 </dev/null || { echo "convert/quantize failed"; exit 1; }
fi
$PY $PEERS/embed_texts.py --data $SQUAD --paragraphs $PARAGRAPHS --questions $QUESTIONS >$OUT/texts.txt || exit 1
head -1 $OUT/texts.txt >$OUT/one.txt
$B tokenize --model $OUT/m.brt --json <$OUT/texts.txt >$OUT/ids.jsonl || exit 1

# --- interleaved rounds --------------------------------------------------------------------------
RAW=$OUT/raw.jsonl
: >"$RAW"
row() { # row WHO SECONDS CPU_SECONDS PADDED_TOKENS
  [ -n "$2" ] && [ -n "$3" ] && echo "{\"who\":\"$1\",\"s\":$2,\"cpu\":$3,\"padded\":${4:-0}}" >>"$RAW"
}
bertrt_row() { # bertrt_row WHO MODEL OUT.npy ARGS...: (all texts) − (one text), wall and CPU
  local who=$1 model=$2 npy=$3; shift 3
  BERTRT_NUM_THREADS=$THREADS /usr/bin/time -f "%e %U %S" -o $OUT/one.time $B embed --model $model --input $OUT/one.txt --output $OUT/one.npy "$@" 2>/dev/null || return
  BERTRT_NUM_THREADS=$THREADS /usr/bin/time -f "%e %U %S" -o $OUT/all.time $B embed --model $model --input $OUT/texts.txt --output $npy "$@" 2>/dev/null || return
  read -r w1 u1 s1 <$OUT/one.time
  read -r w2 u2 s2 <$OUT/all.time
  row $who "$($PY -c "print(max(0.0, $w2 - $w1))")" "$($PY -c "print(max(0.0, $u2 + $s2 - $u1 - $s1))")"
}
ort_row() { # ort_row WHO MODEL ORDER
  local j
  j=$(node $ORT/ort_embed.js --model $2 --ids $OUT/ids.jsonl --batch $BATCH --order $3 --threads $THREADS --out $OUT/$1.f32 2>/dev/null) || return
  row $1 "$(echo "$j" | sed -n 's/.*"seconds":\([0-9.eE+-]*\).*/\1/p')" "$(echo "$j" | sed -n 's/.*"cpu_seconds":\([0-9.eE+-]*\).*/\1/p')" \
    "$(echo "$j" | sed -n 's/.*"padded_tokens":\([0-9]*\).*/\1/p')"
}
for _ in $(seq 1 "$ROUNDS"); do
  ort_row ort-fp32-input $d/fp32.onnx input
  ort_row ort-fp32-sorted $d/fp32.onnx sorted
  bertrt_row bertrt-fp32-padded $OUT/m.brt $OUT/bertrt-fp32-padded.npy --no-packing --batch-size $BATCH
  bertrt_row bertrt-fp32-packed $OUT/m.brt $OUT/bertrt-fp32-packed.npy --max-batch-tokens $MAX_BATCH_TOKENS
  ort_row ort-int8-input $d/int8qa.onnx input
  ort_row ort-int8-sorted $d/int8qa.onnx sorted
  bertrt_row bertrt-int8-padded $OUT/m.int8.brt $OUT/bertrt-int8-padded.npy --no-packing --batch-size $BATCH
  bertrt_row bertrt-int8-packed $OUT/m.int8.brt $OUT/bertrt-int8-packed.npy --max-batch-tokens $MAX_BATCH_TOKENS
done
echo "load after the rounds: $(cut -d' ' -f1-3 /proc/loadavg)"

# --- the table -----------------------------------------------------------------------------------
$PY - "$OUT" "$BATCH" "$MAX_BATCH_TOKENS" "$ROUNDS" <<'EOF'
import collections, json, os, sys
import numpy as np
out, batch, budget, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
best, cpu, padded = collections.defaultdict(lambda: float("inf")), collections.defaultdict(lambda: float("inf")), {}
for line in open(f"{out}/raw.jsonl"):
    r = json.loads(line)
    best[r["who"]] = min(best[r["who"]], r["s"])
    cpu[r["who"]] = min(cpu[r["who"]], r["cpu"])
    if r["padded"]:
        padded[r["who"]] = r["padded"]
lens = [min(len(json.loads(l)["input_ids"]), 256) for l in open(f"{out}/ids.jsonl")]
n, tokens = len(lens), sum(lens)
srt = sorted(lens, reverse=True)
padded.setdefault("bertrt-fp32-padded", sum(max(srt[i:i + batch]) * len(srt[i:i + batch]) for i in range(0, n, batch)))
padded["bertrt-int8-padded"] = padded["bertrt-fp32-padded"]
padded["bertrt-fp32-packed"] = padded["bertrt-int8-packed"] = tokens
print(f"\n{n} texts, {tokens} tokens (mean {tokens / n:.0f}, longest {max(lens)}; max_seq_length 256), best of {rounds} rounds\n")
print("| runtime | precision | batches | tokens run | seconds | CPU seconds | embeddings/s |")
print("|---|---|---|---|---|---|---|")
names = {"input": f"{batch} a batch, input order, padded", "sorted": f"{batch} a batch, longest first, padded",
         "padded": f"{batch} a batch, longest first, padded", "packed": f"{budget} tokens a batch, packed"}
for prec in ("fp32", "int8"):
    for who in (f"ort-{prec}-input", f"ort-{prec}-sorted", f"bertrt-{prec}-padded", f"bertrt-{prec}-packed"):
        if who not in best:
            continue
        rt, _, how = who.split("-")
        s = best[who]
        print(f"| {'ONNX Runtime' if rt == 'ort' else 'bertrt'} | {prec} | {names[how]} | {padded.get(who, 0)} | {s:.2f} | {cpu[who]:.2f} | {n / s:.1f} |")
def ratio(t, a, b):
    return f"{t[a] / t[b]:.2f}×" if a in t and b in t else "–"
print("\nRatios of time, wall (CPU):")
for prec, goal in (("fp32", 0.9), ("int8", 0.8)):
    p, os_, oi, pd = f"bertrt-{prec}-packed", f"ort-{prec}-sorted", f"ort-{prec}-input", f"bertrt-{prec}-padded"
    print(f"- {prec}: bertrt packed / ORT sorted {ratio(best, p, os_)} ({ratio(cpu, p, os_)}; goal ≤ {goal}×), "
          f"/ ORT input order {ratio(best, p, oi)} ({ratio(cpu, p, oi)}); "
          f"bertrt packed / padded {ratio(best, p, pd)} ({ratio(cpu, p, pd)})")
def load(name):
    p = f"{out}/{name}"
    if name.endswith(".npy"):
        return np.load(p) if os.path.exists(p) else None
    return np.fromfile(p, dtype=np.float32).reshape(n, -1) if os.path.exists(p) else None
def cos(a, b):
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
e = {k: load(f) for k, f in (("ort32", "ort-fp32-sorted.f32"), ("ort8", "ort-int8-sorted.f32"),
                             ("b32", "bertrt-fp32-packed.npy"), ("b32p", "bertrt-fp32-padded.npy"),
                             ("b8", "bertrt-int8-packed.npy"), ("b8p", "bertrt-int8-padded.npy"))}
def line(what, a, b):
    if e[a] is None or e[b] is None:
        return
    c = cos(e[a], e[b])
    print(f"- {what}: mean cosine {c.mean():.6f}, lowest {c.min():.6f}, largest |difference| {np.abs(e[a] - e[b]).max():.2e}")
print()
line("ORT fp32 vs bertrt fp32 (packed)", "ort32", "b32")
line("bertrt fp32 padded vs packed", "b32p", "b32")
line("bertrt int8 padded vs packed", "b8p", "b8")
line("bertrt int8 (PTQ) vs bertrt fp32", "b8", "b32")
line("ORT int8 (quantize_dynamic) vs ORT fp32", "ort8", "ort32")
print("\nseconds: wall, best of the rounds; CPU seconds: user + system of the process over the same work, best of")
print("the rounds (the figure to compare on a busy machine with THREADS=1). bertrt's exclude process start and")
print("model loading and include tokenizing.")
EOF
