#!/usr/bin/env bash
# LoRA against full fine-tuning on BERT-tiny, the accuracy side: SST-2 with 2,000 labels (the first
# 2,000 lines of train) and MRPC, dev sets, three seeds, from a pre-trained model and from random
# init. The recipe is docs/explanation/pretraining.md's "SST-2 with 2,000 labels": --epochs 10
# --batch-size 32 --max-seq-length 64, both dropouts 0.1, one thread. Full fine-tuning at lr 1e-3;
# LoRA r=8, alpha 16 on query,value and on every Linear (query,key,value,dense), each at lr 1e-3
# and 3e-3 (LoRA trains fewer, smaller-scaled weights and usually wants a larger rate: Hu et al.
# 2021 use 4e-4–5e-4 for RoBERTa-base where full fine-tuning uses 1e-5–3e-5).
# Prints a table (mean over the seeds and each seed) and the adapter's and the model's file sizes.
# RESULTS=FILE keeps every run as a JSON line there, and a run already in it is not run again (an
# interrupted benchmark resumes). METHODS="full 1e-3|LoRA q,v 3e-3" picks rows by name.
# Usage: bench/lora_accuracy.sh BERTRT DATA_DIR PRETRAINED.brt [SEEDS]   (SEEDS default "1 2 3")
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: bench/lora_accuracy.sh BERTRT DATA_DIR PRETRAINED.brt [SEEDS]" >&2; exit 2; }
BIN=$1 DATA=$2 PRE=$3 SEEDS=${4:-1 2 3}
[ -x "$BIN" ] || { echo "lora_accuracy: $BIN is not an executable" >&2; exit 2; }
[ -f "$PRE" ] || { echo "lora_accuracy: $PRE: no such model file" >&2; exit 2; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
RESULTS=${RESULTS:-$T/results.jsonl}
touch "$RESULTS"

head -n 2001 "$DATA/glue/SST-2/train.tsv" > "$T/sst2-2k.tsv"  # the header and 2,000 sentences
"$BIN" init --preset tiny --seed 1 --vocab "$DATA/vocab/bert-base-uncased-vocab.txt" -o "$T/random.brt" >/dev/null
COMMON=(--epochs 10 --batch-size 32 --max-seq-length 64 --hidden-dropout-prob 0.1
        --attention-probs-dropout-prob 0.1 --threads 1)
declare -A TRAIN=([sst2]="$T/sst2-2k.tsv" [mrpc]="$DATA/glue/MRPC/train.tsv")
declare -A DEV=([sst2]="$DATA/glue/SST-2/dev.tsv" [mrpc]="$DATA/glue/MRPC/dev.tsv")
declare -A METRIC=([sst2]=accuracy [mrpc]=f1)
# name|finetune flags
ALL_METHODS=("full 1e-3|--learning-rate 1e-3"
         "LoRA q,v 1e-3|--learning-rate 1e-3 --lora-r 8 --lora-alpha 16 --lora-target query,value"
         "LoRA q,v 3e-3|--learning-rate 3e-3 --lora-r 8 --lora-alpha 16 --lora-target query,value"
         "LoRA all 1e-3|--learning-rate 1e-3 --lora-r 8 --lora-alpha 16 --lora-target query,key,value,dense"
         "LoRA all 3e-3|--learning-rate 3e-3 --lora-r 8 --lora-alpha 16 --lora-target query,key,value,dense")
METHODS_SEL=()
for m in "${ALL_METHODS[@]}"; do
  if [ -z "${METHODS:-}" ] || [[ "|${METHODS}|" == *"|${m%%|*}|"* ]]; then METHODS_SEL+=("$m"); fi
done
((${#METHODS_SEL[@]})) || { echo "lora_accuracy: METHODS=$METHODS names no method" >&2; exit 2; }

for start in pre-trained random; do
  base=$PRE; [ "$start" = random ] && base=$T/random.brt
  for task in sst2 mrpc; do
    for m in "${METHODS_SEL[@]}"; do
      name=${m%%|*}; read -r -a flags <<< "${m#*|}"
      for seed in $SEEDS; do
        grep -qF "\"start\": \"$start\", \"task\": \"$task\", \"method\": \"$name\", \"seed\": $seed," "$RESULTS" &&
          continue  # already run
        out=$T/out.brt; eval_args=(--model "$out")
        if [[ $name == LoRA* ]]; then eval_args=(--model "$base" --adapter "$out"); fi
        "$BIN" finetune --model "$base" --task "$task" --train "${TRAIN[$task]}" "${COMMON[@]}" \
          "${flags[@]}" --seed "$seed" -o "$out" > "$T/ft.log" 2>&1 ||
          { echo "lora_accuracy: finetune failed ($start $task $name seed $seed):" >&2; tail -5 "$T/ft.log" >&2; exit 1; }
        score=$("$BIN" eval "${eval_args[@]}" --task "$task" --data "${DEV[$task]}" --json |
                /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['${METRIC[$task]}'])")
        printf '{"start": "%s", "task": "%s", "method": "%s", "seed": %s, "%s": %s, "bytes": %s}\n' \
          "$start" "$task" "$name" "$seed" "${METRIC[$task]}" "$score" "$(stat -c %s "$out")" >> "$RESULTS"
        echo "$start $task $name seed $seed: ${METRIC[$task]} $score" >&2
      done
    done
  done
done

/usr/bin/python3 - "$RESULTS" <<'EOF'
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1])]
key = lambda r: (r["start"], r["task"], r["method"])
groups = {}
for r in rows:
    groups.setdefault(key(r), []).append(r)
print("| start | task (metric) | method | mean | seeds | file size |")
print("|---|---|---|---|---|---|")
for (start, task, method), rs in groups.items():
    metric = "accuracy" if task == "sst2" else "f1"
    vals = [r[metric] for r in rs]
    print(f"| {start} | {task} ({metric}) | {method} | {statistics.mean(vals):.4f} | "
          + " / ".join(f"{v:.4f}" for v in vals) + f" | {rs[0]['bytes'] / 1e6:.2f} MB |")
EOF
