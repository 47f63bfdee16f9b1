#!/usr/bin/env bash
# LoRA adapters over an int8 base in the CLI: `finetune --lora-r` over a model `bertrt quantize`
# wrote trains an adapter (the int8 file unchanged), eval and predict run it over that int8 model,
# with --recompute the same adapter; an adapter of the float base is refused on the int8 model and
# the other way round (naming both checksums), merge and full fine-tuning of the int8 model are
# refused.
# Usage: lora_int8_test.sh BERTRT_BINARY DATA_DIR
set -uo pipefail
source "$(dirname "$0")/harness.sh"

head -n 120 "$DATA/glue/SST-2/train.tsv" > "$T/train.tsv"
head -n 41 "$DATA/glue/SST-2/dev.tsv" > "$T/dev.tsv"
expect_ok init "$BIN" init --preset tiny --vocab "$VOCAB" --seed 3 -o "$T/pre.brt"
expect_ok "finetune a head" "$BIN" finetune --model "$T/pre.brt" --task sst2 --train "$T/train.tsv" \
  --max-steps 2 --batch-size 8 -o "$T/base.brt"
expect_ok quantize "$BIN" quantize --model "$T/base.brt" --task sst2 --calibration "$T/train.tsv" \
  --calibration-examples 32 -o "$T/base8.brt"
cp "$T/base8.brt" "$T/base8_copy.brt"
LORA=(--task sst2 --train "$T/train.tsv" --max-steps 3 --batch-size 8 --learning-rate 1e-3
      --lora-r 4 --lora-alpha 8 --lora-target query,value,dense --lora-dropout 0.1)
expect_ok "finetune --lora-r over int8" "$BIN" finetune --model "$T/base8.brt" "${LORA[@]}" -o "$T/a8.brt"
grep -q "adapted Linears over the int8 base" "$T/stdout" && ok || bad "no int8 base line: $(cat "$T/stdout")"
cmp -s "$T/base8.brt" "$T/base8_copy.brt" && ok || bad "finetune --lora-r changed its int8 base"
# --recompute runs the same forward again: the same adapter, bit for bit.
expect_ok "over int8 --recompute" "$BIN" finetune --model "$T/base8.brt" "${LORA[@]}" --recompute -o "$T/a8r.brt"
cmp -s "$T/a8.brt" "$T/a8r.brt" && ok || bad "--recompute changed the adapter"
expect_ok "eval --adapter over int8" "$BIN" eval --model "$T/base8.brt" --adapter "$T/a8.brt" --data "$T/dev.tsv" --json
grep -q '"accuracy"' "$T/stdout" && ok || bad "eval: $(cat "$T/stdout")"
expect_ok "predict --adapter over int8" "$BIN" predict --model "$T/base8.brt" --adapter "$T/a8.brt" \
  --input "$T/dev.tsv" --text-column sentence --json
[ "$(wc -l < "$T/stdout")" -eq 40 ] && ok || bad "predict: $(wc -l < "$T/stdout") lines"

# --- bad input -------------------------------------------------------------------------------------
expect_ok "finetune --lora-r over fp32" "$BIN" finetune --model "$T/base.brt" "${LORA[@]}" -o "$T/a.brt"
expect_error "fp32 adapter on the int8 model" "" \
  "a.brt was trained on a float32 base \(crc32c:[0-9a-f]{8}\); --model .*base8.brt is an int8 model \(crc32c:[0-9a-f]{8}\)" -- \
  "$BIN" eval --model "$T/base8.brt" --adapter "$T/a.brt" --data "$T/dev.tsv"
expect_error "int8 adapter on the fp32 model" "" \
  "a8.brt was trained on an int8 base \(crc32c:[0-9a-f]{8}\); --model .*base.brt is a float32 model \(crc32c:[0-9a-f]{8}\)" -- \
  "$BIN" predict --model "$T/base.brt" --adapter "$T/a8.brt" --input "$T/dev.tsv"
expect_error "merge over int8" "$T/m.brt" "base8.brt is an int8 model; an adapter over an int8 base runs unmerged" -- \
  "$BIN" merge --model "$T/base8.brt" --adapter "$T/a8.brt" -o "$T/m.brt"
expect_error "full fine-tuning of int8" "$T/x.brt" "int8 inference model" -- \
  "$BIN" finetune --model "$T/base8.brt" --task sst2 --train "$T/train.tsv" --max-steps 1 -o "$T/x.brt"

echo "lora_int8_test: $pass passed, $fail failed"
[ $fail -eq 0 ]
