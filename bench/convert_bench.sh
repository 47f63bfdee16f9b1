#!/usr/bin/env bash
# bertrt-convert speed and peak memory on random BERT-base / BERT-large checkpoints (the shapes
# of Google's released models, vocab 30522, BertForPreTraining), as model.safetensors and as a
# torch.save zip pytorch_model.bin. Prints wall time and peak RSS (/usr/bin/time -v) beside the
# input size. Inputs are read once before timing (warm page cache: this measures the converter,
# not the disk).
# Usage: bench/convert_bench.sh BUILD_DIR [base|large ...]   (default: base large)
#        WORK=/path/with/space to keep the (large) inputs elsewhere than /tmp.
set -euo pipefail
BUILD=${1:?usage: convert_bench.sh BUILD_DIR [base|large ...]}
shift || true
SIZES=${*:-base large}
CONV=$BUILD/bertrt-convert
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-$(mktemp -d)}
trap 'rm -rf "$WORK"' EXIT

make_model() {  # make_model NAME LAYERS HIDDEN HEADS
  /usr/bin/python3 - "$WORK/$1" "$2" "$3" "$4" "$HERE/../tests/reference" <<'PY'
import json, os, sys
import torch
out, L, H, A, ref = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
sys.path.insert(0, ref)
from make_hf_models import write_safetensors
V, P, I = 30522, 512, 4 * H
os.makedirs(out, exist_ok=True)
g = torch.Generator().manual_seed(0)
def w(*shape): return torch.randn(*shape, generator=g) * 0.02
sd = {"bert.embeddings.word_embeddings.weight": w(V, H), "bert.embeddings.position_embeddings.weight": w(P, H),
      "bert.embeddings.token_type_embeddings.weight": w(2, H),
      "bert.embeddings.LayerNorm.weight": torch.ones(H), "bert.embeddings.LayerNorm.bias": torch.zeros(H)}
for l in range(L):
    p = f"bert.encoder.layer.{l}."
    for n, (o, i) in {"attention.self.query": (H, H), "attention.self.key": (H, H), "attention.self.value": (H, H),
                      "attention.output.dense": (H, H), "intermediate.dense": (I, H), "output.dense": (H, I)}.items():
        sd[p + n + ".weight"], sd[p + n + ".bias"] = w(o, i), torch.zeros(o)
    for n in ("attention.output.LayerNorm", "output.LayerNorm"):
        sd[p + n + ".weight"], sd[p + n + ".bias"] = torch.ones(H), torch.zeros(H)
sd.update({"bert.pooler.dense.weight": w(H, H), "bert.pooler.dense.bias": torch.zeros(H),
           "cls.predictions.transform.dense.weight": w(H, H), "cls.predictions.transform.dense.bias": torch.zeros(H),
           "cls.predictions.transform.LayerNorm.weight": torch.ones(H),
           "cls.predictions.transform.LayerNorm.bias": torch.zeros(H), "cls.predictions.bias": torch.zeros(V),
           "cls.seq_relationship.weight": w(2, H), "cls.seq_relationship.bias": torch.zeros(2)})
cfg = dict(architectures=["BertForPreTraining"], model_type="bert", vocab_size=V, hidden_size=H,
           num_hidden_layers=L, num_attention_heads=A, intermediate_size=I, hidden_act="gelu",
           max_position_embeddings=P, type_vocab_size=2, layer_norm_eps=1e-12, pad_token_id=0)
for sub, fmt in (("st", "safetensors"), ("bin", "bin")):
    d = os.path.join(out, sub)
    os.makedirs(d, exist_ok=True)
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"))
    with open(os.path.join(d, "vocab.txt"), "w") as f:
        f.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"tok{i}" for i in range(5, V)]) + "\n")
    if fmt == "safetensors":
        write_safetensors(os.path.join(d, "model.safetensors"), sd, {"format": "pt"})
    else:
        torch.save(sd, os.path.join(d, "pytorch_model.bin"))
PY
}

# run NAME INPUT_FILE ARGS...: converts and prints one row.
run() {
  local name=$1 input=$2; shift 2
  cat "$input" > /dev/null  # warm the page cache
  if ! /usr/bin/time -v "$CONV" -q "$@" 2> "$WORK/time.txt"; then
    printf "%-28s FAILED: %s\n" "$name" "$(grep -m1 'error' "$WORK/time.txt")"; return
  fi
  local wall rss
  wall=$(grep "Elapsed (wall clock)" "$WORK/time.txt" | awk '{print $NF}')
  rss=$(grep "Maximum resident set size" "$WORK/time.txt" | awk '{print $NF}')
  printf "%-28s %9.0f MB %12s %10.0f MB\n" "$name" "$(($(stat -c %s "$input") / 1000000))" "$wall" "$((rss / 1000))"
}

printf "%-28s %12s %12s %13s\n" "conversion" "input" "wall" "peak RSS"
for size in $SIZES; do
  case $size in
    base) make_model base 12 768 12 ;;
    large) make_model large 24 1024 16 ;;
    *) echo "unknown size $size"; exit 2 ;;
  esac
  d=$WORK/$size
  run "$size safetensors -> f32" "$d/st/model.safetensors" "$d/st" -o "$WORK/out.brt"
  run "$size safetensors -> f16" "$d/st/model.safetensors" "$d/st" -o "$WORK/out.brt" --dtype f16
  run "$size torch zip .bin -> f32" "$d/bin/pytorch_model.bin" "$d/bin" -o "$WORK/out.brt"
  run "$size .brt -> hf" "$WORK/out.brt" --to hf "$WORK/out.brt" -o "$WORK/hf"
  rm -rf "$d" "$WORK/out.brt" "$WORK/hf"
done
