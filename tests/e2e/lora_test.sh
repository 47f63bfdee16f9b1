#!/usr/bin/env bash
# LoRA adapters in the CLI: finetune --lora-r writes an adapter file (the base unchanged), eval and
# predict run it over its base with --adapter, merge folds it into a plain model with the same
# outputs; bad adapters and flags are refused before any work, naming the file or flag.
# Usage: lora_test.sh BERTRT_BINARY DATA_DIR
set -uo pipefail
source "$(dirname "$0")/harness.sh"

head -n 120 "$DATA/glue/SST-2/train.tsv" > "$T/train.tsv"
head -n 41 "$DATA/glue/SST-2/dev.tsv" > "$T/dev.tsv"
expect_ok init "$BIN" init --preset tiny --vocab "$VOCAB" --seed 3 -o "$T/base.brt"
cp "$T/base.brt" "$T/base_copy.brt"
LORA=(--task sst2 --train "$T/train.tsv" --max-steps 3 --batch-size 8 --learning-rate 1e-3
      --lora-r 4 --lora-alpha 8 --lora-target query,value,dense --lora-dropout 0.1)
expect_ok "finetune --lora-r" "$BIN" finetune --model "$T/base.brt" "${LORA[@]}" --dev "$T/dev.tsv" -o "$T/a.brt"
grep -q "adapted Linears; .* trainable parameters of" "$T/stdout" && ok || bad "no trainable-parameter line: $(cat "$T/stdout")"
cmp -s "$T/base.brt" "$T/base_copy.brt" && ok || bad "finetune --lora-r changed its base file"
# The adapter holds adapters and the head only: far smaller than the model.
[ "$(stat -c %s "$T/a.brt")" -lt "$(( $(stat -c %s "$T/base.brt") / 2 ))" ] && ok || bad "adapter not small"
expect_ok "finetune --lora-r again" "$BIN" finetune --model "$T/base.brt" "${LORA[@]}" -o "$T/a2.brt"
cmp -s "$T/a.brt" "$T/a2.brt" && ok || bad "two LoRA runs with the same seed differ"

expect_ok "eval --adapter" "$BIN" eval --model "$T/base.brt" --adapter "$T/a.brt" --data "$T/dev.tsv" --json
grep -q '"accuracy"' "$T/stdout" && ok || bad "eval --adapter: $(cat "$T/stdout")"
cp "$T/stdout" "$T/eval_adapter.json"
expect_ok "predict --adapter" "$BIN" predict --model "$T/base.brt" --adapter "$T/a.brt" --input "$T/dev.tsv" --text-column sentence --json
cp "$T/stdout" "$T/pred_adapter.jsonl"
[ "$(wc -l < "$T/pred_adapter.jsonl")" -eq 40 ] && ok || bad "predict --adapter: $(wc -l < "$T/pred_adapter.jsonl") lines"
expect_ok merge "$BIN" merge --model "$T/base.brt" --adapter "$T/a.brt" -o "$T/merged.brt"
expect_ok "eval merged" "$BIN" eval --model "$T/merged.brt" --data "$T/dev.tsv" --json
# The merged weights round differently from the two products: the metrics agree, the loss to 1e-4.
/usr/bin/python3 - "$T/eval_adapter.json" "$T/stdout" <<'EOF' && ok || bad "merged eval differs: $(cat "$T/eval_adapter.json" "$T/stdout")"
import json, sys
a, m = (json.load(open(p)) for p in sys.argv[1:])
assert a["accuracy"] == m["accuracy"], (a, m)
assert abs(a["loss"] - m["loss"]) < 1e-4, (a, m)
EOF

# --- bad input, before any work --------------------------------------------------------------------
expect_ok "init another base" "$BIN" init --preset tiny --vocab "$VOCAB" --seed 4 -o "$T/other.brt"
expect_error "adapter on another base" "" "a.brt was trained on another base: it expects base weights crc32c:" -- \
  "$BIN" eval --model "$T/other.brt" --adapter "$T/a.brt" --data "$T/dev.tsv"
expect_error "merge on another base" "$T/m2.brt" "trained on another base" -- \
  "$BIN" merge --model "$T/other.brt" --adapter "$T/a.brt" -o "$T/m2.brt"
expect_error "an adapter as --model" "" "a.brt: a LoRA adapter, not a model: pass it as --adapter" -- \
  "$BIN" eval --model "$T/a.brt" --data "$T/dev.tsv"
expect_error "a model as --adapter" "" "--adapter .*merged.brt: a model file, not a LoRA adapter" -- \
  "$BIN" predict --model "$T/base.brt" --adapter "$T/merged.brt" --input "$T/dev.tsv"
expect_error "unknown target" "$T/x.brt" "--lora-target query,foo: target 'foo' matches no module" -- \
  "$BIN" finetune --model "$T/base.brt" --task sst2 --train "$T/train.tsv" --lora-r 4 --lora-target query,foo -o "$T/x.brt"
expect_error "non-Linear target" "$T/x.brt" "target 'intermediate' matches bert.encoder.layer.0.intermediate .*not a Linear" -- \
  "$BIN" finetune --model "$T/base.brt" --task sst2 --train "$T/train.tsv" --lora-r 4 --lora-target intermediate -o "$T/x.brt"
expect_error "r above the width" "$T/x.brt" "LoRA rank r = 1000 exceeds bert.encoder.layer.0.attention.self.query's width" -- \
  "$BIN" finetune --model "$T/base.brt" --task sst2 --train "$T/train.tsv" --lora-r 1000 -o "$T/x.brt"
"$BIN" finetune --model "$T/base.brt" --task sst2 --train "$T/train.tsv" --lora-r 1000 -o "$T/x.brt" > /dev/null 2>&1
[ $? -eq 2 ] && ok || bad "--lora-r above the width did not exit 2"
expect_error "r = 0" "$T/x.brt" "--lora-r" -- \
  "$BIN" finetune --model "$T/base.brt" --task sst2 --train "$T/train.tsv" --lora-r 0 -o "$T/x.brt"
expect_error "--lora-alpha without --lora-r" "$T/x.brt" "--lora-alpha applies with --lora-r" -- \
  "$BIN" finetune --model "$T/base.brt" --task sst2 --train "$T/train.tsv" --lora-alpha 16 -o "$T/x.brt"
expect_error "--lora-r with --qat" "$T/x.brt" "--lora-r with --qat int8" -- \
  "$BIN" finetune --model "$T/base.brt" --task sst2 --train "$T/train.tsv" --lora-r 4 --qat int8 -o "$T/x.brt"

echo "lora_test: $pass passed, $fail failed"
[ $fail -eq 0 ]
