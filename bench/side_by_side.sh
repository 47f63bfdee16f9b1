#!/usr/bin/env bash
# bertrt beside ONNX Runtime and PyTorch on the SAME random weights, interleaved in one run, with
# ratios. A benchmark: it prints figures and asserts nothing. Compare only rows of one run.
#
# usage: bench/side_by_side.sh [BUILD_DIR] [OUT_DIR]        (from the project's root; build/ default)
# env:   CONFIGS="mini base"  BATCHES="1 8"  SEQ=128  ROUNDS=2  THREADS=2 (every runtime)
#        TORCH=1 (PyTorch eager rows), TRAIN=0 (1: training-step rows, B8, MLM on 15 % gathered,
#        with their model GFLOP/s against the OpenBLAS sgemm peak of the same run)
#        BERTRT_DATA (default ../shared/data: the vocab, 64 SST-2 lines for PTQ, the corpus)
# Needs: Debian python3-torch python3-onnx, nodejs + npm (onnxruntime-node is installed into
# OUT_DIR/ort on first use). Everything it writes goes to OUT_DIR (default /tmp/bertrt-side-by-side).
#
# Rows (S = SEQ, best median of ROUNDS rounds; each round runs every row once, in turn):
#   ort-fp32            ORT's fused fp32 graph (Attention, SkipLayerNorm, BiasGelu after its optimizer)
#   ort-int8            ORT int8: quantize_dynamic's graph with QAttention (u8 activations, s8 weights)
#   torch-fp32          PyTorch eager, model.eval() under no_grad
#   bertrt-fp32         the fine-tuned fp32 file (bertrt bench)
#   bertrt-int8         its PTQ int8 file on the int8 kernel bertrt picks for this CPU
#   bertrt-int8-avx2    the same forced to the AVX2 kernel (BERTRT_Q8_KERNEL=avx2), where it differs,
#                       with fp32 on fma3 too (BERTRT_F32_KERNEL=fma3: attention, the GELU table)
#   bertrt-int8-avxvnni the same forced to the AVX-VNNI kernel (ymm, no AVX-512), where it differs
#   bertrt-fp32-fma3    the fp32 file forced to the AVX2/FMA kernel (BERTRT_F32_KERNEL=fma3), where
#                       it differs: what an AVX2-only (or AVX-VNNI-only) CPU runs for fp32 (auto
#                       then leaves XNNPACK, which would pick its AVX-512 kernels by CPUID here)
# then the ratios bertrt / ORT (below 1: bertrt faster) and bertrt int8 / bertrt fp32, and a second
# table of the narrower paths: int8 avx2 and avxvnni against fp32 fma3, the speed-ups a CPU
# without AVX-512 would see (the same core, so a proxy, not that CPU's figures).
# The first lines give the CPU (model name, the SIMD flags that decide the kernels) and the kernel.
set -u -o pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
# shellcheck source-path=SCRIPTDIR
. "$HERE/lib_checks.sh"
USAGE="usage: $0 [BUILD_DIR] [OUT_DIR]   (defaults: build, /tmp/bertrt-side-by-side)
  env: CONFIGS=\"mini base\" BATCHES=\"1 8\" SEQ=128 ROUNDS=2 THREADS=2 TORCH=1 TRAIN=0 BERTRT_DATA=../shared/data
example: CONFIGS=mini TORCH=0 $0 build /tmp/sbs"
need_args 0 "$@"
[ $# -le 2 ] || usage
BUILD=${1:-$ROOT/build}
need_dir BUILD_DIR "$BUILD" "build first: cmake --preset default && cmake --build build; or name the build folder"
BUILD=$(cd "$BUILD" && pwd)
OUT=${2:-${TMPDIR:-/tmp}/bertrt-side-by-side}
B=$BUILD/bertrt CV=$BUILD/bertrt-convert PY=/usr/bin/python3 PEERS=$HERE/peers
DATA=${BERTRT_DATA:-$ROOT/../shared/data}
CONFIGS=${CONFIGS:-"mini base"} BATCHES=${BATCHES:-"1 8"} SEQ=${SEQ:-128} ROUNDS=${ROUNDS:-2}
THREADS=${THREADS:-2} TORCH=${TORCH:-1} TRAIN=${TRAIN:-0}
for f in "$B" "$CV"; do
  [[ -f $f && -x $f ]] || check_fail "BUILD_DIR $BUILD: no ${f##*/} in it (cmake --build $BUILD)"
done
need_dir BERTRT_DATA "$DATA" "set BERTRT_DATA to the data folder"
need_file BERTRT_DATA/vocab "$DATA/vocab/bert-base-uncased-vocab.txt"
# Only now: a mistyped BUILD_DIR or data folder leaves no OUT_DIR behind.
mkdir -p "$OUT" 2>/dev/null || check_fail "OUT_DIR $OUT: cannot make the folder"

# --- the host ------------------------------------------------------------------------------------
fam=$(sed -n 's/^cpu family\s*: //p' /proc/cpuinfo | head -1) mod=$(sed -n 's/^model\s*: //p' /proc/cpuinfo | head -1)
echo "host: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)${fam:+ (family $fam model $mod)}, $(uname -m), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), threads $THREADS"
flags=$( (grep -m1 -E '^(flags|Features)' /proc/cpuinfo || true) | tr ' ' '\n' |
  grep -xE 'avx2|fma|avx512f|avx512bw|avx512vl|avx512_vnni|avx_vnni|avx512_bf16|amx_int8|asimd|asimddp|i8mm|sve' |
  tr '\n' ' ')
echo "cpu flags: ${flags:-none of the SIMD flags}"
[ -n "${OPENBLAS_CORETYPE:-}" ] && echo "OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE (set by the environment)"

# --- the same weights for every runtime ----------------------------------------------------------
ORT=$OUT/ort
if [ ! -f $ORT/node_modules/onnxruntime-node/package.json ]; then
  mkdir -p $ORT && cp $PEERS/ort/ort_bench.js $PEERS/ort/package.json $PEERS/ort/package-lock.json $ORT/
  (cd $ORT && ONNXRUNTIME_NODE_INSTALL=skip npm install --onnxruntime-node-install=skip >/dev/null 2>&1) || { echo "npm install of onnxruntime-node failed"; exit 1; }
fi
cp $PEERS/ort/ort_bench.js $ORT/
for cfg in $CONFIGS; do
  d=$OUT/models/bert-$cfg m=$OUT/$cfg
  [ -f $d/model.safetensors ] || $PY $PEERS/make_random_bert.py --preset $cfg --seed 0 --out-dir $d >/dev/null || exit 1
  [ -f $d/fp32.onnx ] || $PY $PEERS/make_bert_onnx.py --model-dir $d --out $d/fp32.onnx >/dev/null || exit 1
  [ -f $d/int8qa.onnx ] || $PY $PEERS/make_bert_onnx.py --model-dir $d --out $d/int8qa.onnx --int8 --qattention >/dev/null || exit 1
  if [ ! -f $m.int8.brt ]; then
    # random MLM weights, no NSP head: say so, as HF's BertForMaskedLM would
    $PY -c "import json,sys; p=sys.argv[1]; c=json.load(open(p)); c['architectures']=['BertForMaskedLM']; json.dump(c,open(p,'w'),indent=2)" $d/config.json
    cp $DATA/vocab/bert-base-uncased-vocab.txt $d/vocab.txt
    head -65 $DATA/glue/SST-2/train.tsv > $OUT/sst64.tsv
    $CV $d -o $m.brt -q &&
      $B finetune --model $m.brt --task sst2 --train $OUT/sst64.tsv --max-steps 1 --batch-size 1 \
        --max-seq-length $SEQ -o $m.cls.brt >/dev/null 2>&1 </dev/null &&
      $B quantize --model $m.cls.brt --task sst2 --calibration $OUT/sst64.tsv \
        --calibration-examples 64 -o $m.int8.brt >/dev/null 2>&1 </dev/null ||
      { echo "$cfg: convert/finetune/quantize failed"; exit 1; }
  fi
done
probe=$($B bench --model $OUT/$(set -- $CONFIGS; echo $1).int8.brt --batch-size 1 --seq-len 8 --warmup 0 --iters 1 --json)
kernel=$(echo "$probe" | sed -n 's/.*"int8_kernel":"\([a-z0-9]*\)".*/\1/p')
f32kernel=$(echo "$probe" | sed -n 's/.*"f32_kernel":"\([a-z0-9]*\)".*/\1/p')
blas=$(echo "$probe" | sed -n 's/.*"blas":"\([^"]*\)".*/\1/p')
echo "bertrt int8 kernel: ${kernel:-?} (BERTRT_Q8_KERNEL to force one); fp32 GEMM: ${blas:-?}"
# PyTorch (Debian's python3-torch) runs its GEMMs on the same OpenBLAS: where bertrt had to replace
# OpenBLAS's fallback core (backends/cpu/blas_core.h), PyTorch gets the same core, or its rows
# would time OpenBLAS's SSE3 kernels.
TORCH_ENV=()
core=$(echo "$blas" | sed -n 's/.*core \([A-Za-z0-9]*\) (bertrt replaced.*/\1/p')
if [ -n "$core" ] && [ -z "${OPENBLAS_CORETYPE:-}" ]; then
  TORCH_ENV=(env OPENBLAS_CORETYPE=$core)
  echo "PyTorch rows: OPENBLAS_CORETYPE=$core (the core bertrt runs; OpenBLAS's own choice is its SSE3 fallback here)"
fi

# --- interleaved rounds --------------------------------------------------------------------------
RAW=$OUT/raw.jsonl
: >"$RAW"
ms_of() { sed -n 's/.*"median_ms": *\([0-9.eE+-]*\).*/\1/p' | tail -1; }
runs() { # runs VAR=KERNEL... MODEL: true when this CPU can run the forced kernel(s)
  env "${@:1:$#-1}" $B bench --model "${@: -1}" --batch-size 1 --seq-len 8 --warmup 0 --iters 1 >/dev/null 2>&1
}
row() { # row WHO CFG BATCH MS
  [ -n "$4" ] && echo "{\"who\":\"$1\",\"cfg\":\"$2\",\"batch\":$3,\"ms\":$4}" >>"$RAW"
}
for r in $(seq 1 $ROUNDS); do
  # The yardstick of the training rows (the step's GEMM rate against the sgemm peak of the same
  # run): OpenBLAS sgemm 3072^3 on THREADS threads, once a round, the best kept.
  [ "$TRAIN" = 1 ] && [ -x "$BUILD/bench_sgemm_peak" ] &&
    BERTRT_NUM_THREADS=$THREADS "$BUILD/bench_sgemm_peak" --json |
      sed -n 's/.*"openblas_sgemm_gflops":\([0-9.]*\).*/{"who":"sgemm-peak","cfg":"-","batch":0,"ms":0,"gflops":\1}/p' >>"$RAW"
  for cfg in $CONFIGS; do
    d=$OUT/models/bert-$cfg m=$OUT/$cfg
    for bs in $BATCHES; do
      it=20; [ $cfg = base ] && it=8; [ $bs -ge 8 ] && it=$((it / 2))
      common=(-B $bs -S $SEQ --threads $THREADS --warmup 2 --iters $it)
      row ort-fp32 $cfg $bs "$(node $ORT/ort_bench.js --model $d/fp32.onnx --config $d/config.json "${common[@]}" 2>/dev/null | ms_of)"
      row ort-int8 $cfg $bs "$(node $ORT/ort_bench.js --model $d/int8qa.onnx --config $d/config.json "${common[@]}" 2>/dev/null | ms_of)"
      [ "$TORCH" = 1 ] && row torch-fp32 $cfg $bs "$("${TORCH_ENV[@]}" $PY $PEERS/torch_bench.py --model-dir $d --mode infer "${common[@]}" 2>/dev/null | ms_of)"
      bb=(--batch-size $bs --seq-len $SEQ --warmup 2 --iters $it --json)
      export BERTRT_NUM_THREADS=$THREADS
      row bertrt-fp32 $cfg $bs "$($B bench --model $m.cls.brt "${bb[@]}" 2>/dev/null | ms_of)"
      row bertrt-int8 $cfg $bs "$($B bench --model $m.int8.brt "${bb[@]}" 2>/dev/null | ms_of)"
      # A CPU without AVX-512 runs fp32 (attention, the int8 GELU's table path) on fma3 too.
      narrow=(); [ -n "$f32kernel" ] && [ "$f32kernel" != fma3 ] && narrow=(BERTRT_F32_KERNEL=fma3)
      for k in avx2 avxvnni; do
        if [ -n "$kernel" ] && [ "$kernel" != $k ] && runs BERTRT_Q8_KERNEL=$k "${narrow[@]}" $m.int8.brt; then
          row bertrt-int8-$k $cfg $bs "$(env BERTRT_Q8_KERNEL=$k "${narrow[@]}" $B bench --model $m.int8.brt "${bb[@]}" 2>/dev/null | ms_of)"
        fi
      done
      if [ -n "$f32kernel" ] && [ "$f32kernel" != fma3 ] && runs BERTRT_F32_KERNEL=fma3 $m.cls.brt; then
        row bertrt-fp32-fma3 $cfg $bs "$(BERTRT_F32_KERNEL=fma3 $B bench --model $m.cls.brt "${bb[@]}" 2>/dev/null | ms_of)"
      fi
    done
    if [ "$TRAIN" = 1 ]; then
      steps=6; [ $cfg = base ] && steps=3
      /usr/bin/time -v "${TORCH_ENV[@]}" $PY $PEERS/torch_bench.py --model-dir $d --mode train-masked -B 8 -S $SEQ --threads $THREADS \
        --warmup 1 --iters $steps >$OUT/t.json 2>$OUT/t.time && row torch-train $cfg 8 "$(ms_of <$OUT/t.json)"
      rm -f $OUT/p.jsonl
      BERTRT_NUM_THREADS=$THREADS /usr/bin/time -v $B pretrain --model $m.brt --corpus $DATA/corpus/enwiki/enwiki_valid_1000docs.txt \
        --dynamic-masking --no-nsp --max-steps $((steps + 1)) --batch-size 8 --max-seq-length $SEQ \
        --learning-rate 1e-4 --metrics $OUT/p.jsonl -o $OUT/p.brt >/dev/null 2>$OUT/p.time </dev/null &&
        row bertrt-train $cfg 8 "$($PY -c '
import json,statistics,sys
t=[r["tokens_per_second"] for r in map(json.loads,open(sys.argv[1])) if "tokens_per_second" in r][1:]
print(8*int(sys.argv[2])*1e3/statistics.median(t))' $OUT/p.jsonl $SEQ)"
    fi
  done
done

# --- the table -----------------------------------------------------------------------------------
$PY - "$RAW" "${kernel:-?}" "$OUT/models" "$SEQ" <<'EOF'
import collections, json, sys
best = collections.defaultdict(lambda: float("inf"))
peak = 0.0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["who"] == "sgemm-peak":
        peak = max(peak, r["gflops"])
        continue
    k = (r["cfg"], r["batch"], r["who"])
    best[k] = min(best[k], r["ms"])
kernel = sys.argv[2]
# The picked kernel is not run again forced (e.g. avx2 on AVX-512 CPUs without VNNI): its row is
# the forced one's figure.
for (c, b, w), v in list(best.items()):
    if w == "bertrt-int8" and kernel in ("avx2", "avxvnni"):
        best.setdefault((c, b, f"bertrt-int8-{kernel}"), v)
def ms(cfg, b, who):
    v = best.get((cfg, b, who))
    return f"{v:.1f}" if v is not None else "–"
def ratio(cfg, b, a, c):
    x, y = best.get((cfg, b, a)), best.get((cfg, b, c))
    return f"{x / y:.2f}×" if x is not None and y is not None else "–"
keys = sorted({(c, b) for c, b, _ in best}, key=lambda k: (k[0] != "mini", k[1]))
print(f"\n| model, batch (S128) | ORT fp32 | PyTorch fp32 | bertrt fp32 | bertrt/ORT fp32 | ORT int8 | bertrt int8 ({kernel}) | bertrt/ORT int8 | int8/fp32 bertrt |")
print("|---|---|---|---|---|---|---|---|---|")
infer = [(c, b) for c, b in keys if any((c, b, w) in best for w in ("ort-fp32", "bertrt-int8"))]
for c, b in infer:
    print(f"| {c} B{b} | {ms(c,b,'ort-fp32')} | {ms(c,b,'torch-fp32')} | {ms(c,b,'bertrt-fp32')} | {ratio(c,b,'bertrt-fp32','ort-fp32')} "
          f"| {ms(c,b,'ort-int8')} | {ms(c,b,'bertrt-int8')} | {ratio(c,b,'bertrt-int8','ort-int8')} "
          f"| {ratio(c,b,'bertrt-int8','bertrt-fp32')} |")
narrow = [(c, b) for c, b in infer if (c, b, "bertrt-fp32-fma3") in best]
if narrow:
    # CPUs without AVX-512: int8's gain over fp32 on AVX2 only and with VNNI. Speed-up = fp32 time / int8 time, both on the narrower kernels of this core.
    def speedup(c, b, q):
        x, y = best.get((c, b, "bertrt-fp32-fma3")), best.get((c, b, q))
        return f"{x / y:.2f}×" if x is not None and y is not None else "–"
    print("\n| model, batch (S128) | bertrt fp32 fma3 | int8 avx2 | int8 avxvnni | speed-up avx2 | speed-up avxvnni |")
    print("|---|---|---|---|---|---|")
    for c, b in narrow:
        print(f"| {c} B{b} | {ms(c,b,'bertrt-fp32-fma3')} | {ms(c,b,'bertrt-int8-avx2')} | {ms(c,b,'bertrt-int8-avxvnni')} "
              f"| {speedup(c,b,'bertrt-int8-avx2')} | {speedup(c,b,'bertrt-int8-avxvnni')} |")
    print("speed-up: bertrt fp32 on the fma3 kernel over int8 on that kernel, the same core (a proxy for a CPU without AVX-512).")
train = [(c, b) for c, b in keys if (c, b, "bertrt-train") in best or (c, b, "torch-train") in best]
if train:
    # Model FLOPs of one step (matmuls only, as MFU counts them): per token and layer the Linears
    # (4H² + 2HI) and attention's QKᵀ and PV (2SH), forward ×1 and backward ×2; the MLM head on
    # the masked positions (15 % of S per sequence, the recipe's round(0.15 × 128) = 19):
    # transform H² + decoder H·V. Embeddings, LayerNorm, softmax and GELU are not counted.
    def step_gflop(c):
        cfg = json.load(open(f"{sys.argv[3]}/bert-{c}/config.json"))
        H, I, L, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
        S = int(sys.argv[4]); N = 8 * S; P = 8 * round(0.15 * S)
        return 3 * 2 * (L * N * (4 * H * H + 2 * H * I + 2 * S * H) + P * (H * H + H * V)) * 1e-9
    print(f"\n| training step B8 (MLM on 15 % gathered) | PyTorch ms | bertrt ms | bertrt/PyTorch | model GFLOP | bertrt GFLOP/s | of the sgemm peak ({peak:.0f} GFLOP/s) |\n|---|---|---|---|---|---|---|")
    for c, b in train:
        g = step_gflop(c)
        t = best.get((c, b, "bertrt-train"))
        rate = f"{g / t * 1e3:.0f}" if t else "–"
        share = f"{g / t * 1e3 / peak:.0%}" if t and peak else "–"
        print(f"| {c} | {ms(c,b,'torch-train')} | {ms(c,b,'bertrt-train')} | {ratio(c,b,'bertrt-train','torch-train')} | {g:.0f} | {rate} | {share} |")
    if peak:
        print("sgemm peak: OpenBLAS cblas_sgemm 3072³ on the same threads, best of the rounds (build/bench_sgemm_peak).")
print("\nms: best of the rounds' medians; ratios below 1 mean bertrt takes less time.")
EOF
