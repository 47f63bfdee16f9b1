#!/usr/bin/env bash
# PEFT folders in the CLI: `bertrt-convert --to peft` writes a bertrt adapter as a PEFT folder that
# --adapter reads back on predict, eval and merge with the same outputs as the adapter file; bad
# folders exit 1 naming the file and key, before any output; a failed export leaves no folder;
# usage errors exit 2. (Against PEFT itself: peft_reference_test and peft_round_trip.)
# Usage: peft_test.sh BERTRT_BINARY BERTRT_CONVERT DATA_DIR
set -uo pipefail
CONV=$2
set -- "$1" "$3"
source "$(dirname "$0")/harness.sh"

head -n 60 "$DATA/glue/SST-2/train.tsv" > "$T/train.tsv"
head -n 21 "$DATA/glue/SST-2/dev.tsv" > "$T/dev.tsv"
expect_ok init "$BIN" init --preset tiny --vocab "$VOCAB" --seed 3 -o "$T/base.brt"
expect_ok "finetune --lora-r" "$BIN" finetune --model "$T/base.brt" --task sst2 --train "$T/train.tsv" \
  --max-steps 2 --batch-size 8 --learning-rate 1e-3 --lora-r 4 --lora-target query,value,dense -o "$T/a.brt"
expect_ok "--to peft" "$CONV" --to peft "$T/a.brt" -o "$T/peft"
[ -f "$T/peft/adapter_config.json" ] && [ -f "$T/peft/adapter_model.safetensors" ] && ok || bad "--to peft: $(ls "$T/peft")"
grep -q '"peft_type": "LORA"' "$T/peft/adapter_config.json" && ok || bad "adapter_config.json: $(cat "$T/peft/adapter_config.json")"

# The folder runs as the file does, bit for bit (the same f32 values).
expect_ok "predict --adapter FILE" "$BIN" predict --model "$T/base.brt" --adapter "$T/a.brt" --input "$T/dev.tsv" --text-column sentence --json
cp "$T/stdout" "$T/file.jsonl"
expect_ok "predict --adapter FOLDER" "$BIN" predict --model "$T/base.brt" --adapter "$T/peft" --task sst2 --input "$T/dev.tsv" --text-column sentence --json
cmp -s "$T/stdout" "$T/file.jsonl" && ok || bad "predict differs between the adapter file and its PEFT folder"
expect_ok "eval --adapter FOLDER" "$BIN" eval --model "$T/base.brt" --adapter "$T/peft" --task sst2 --data "$T/dev.tsv" --json
grep -q '"accuracy"' "$T/stdout" && ok || bad "eval --adapter FOLDER: $(cat "$T/stdout")"
expect_error "eval --adapter FOLDER without --task" "" "name its task with --task" -- \
  "$BIN" eval --model "$T/base.brt" --adapter "$T/peft" --data "$T/dev.tsv"
expect_ok "merge --adapter FOLDER" "$BIN" merge --model "$T/base.brt" --adapter "$T/peft" -o "$T/merged.brt"
expect_ok "merge --adapter FILE" "$BIN" merge --model "$T/base.brt" --adapter "$T/a.brt" -o "$T/merged_file.brt"
"$BIN" eval --model "$T/merged.brt" --task sst2 --data "$T/dev.tsv" --json > "$T/m1.json" 2> /dev/null
"$BIN" eval --model "$T/merged_file.brt" --task sst2 --data "$T/dev.tsv" --json > "$T/m2.json" 2> /dev/null
[ -s "$T/m1.json" ] && cmp -s "$T/m1.json" "$T/m2.json" && ok || bad "merge of the folder and of the file differ: $(cat "$T/m1.json" "$T/m2.json")"

# --- bad input -------------------------------------------------------------------------------------
bad_folder() {  # NAME SED_EXPRESSION PATTERN: the export's config edited, refused with exit 1
  local d="$T/bad_$1"
  cp -r "$T/peft" "$d"
  sed -i "$2" "$d/adapter_config.json"
  "$BIN" predict --model "$T/base.brt" --adapter "$d" --task sst2 --input "$T/dev.tsv" --text-column sentence \
    > "$T/stdout" 2> "$T/stderr" < /dev/null
  local rc=$?
  [ $rc -eq 1 ] || { bad "$1: exit $rc"; return; }
  [ -s "$T/stdout" ] && { bad "$1: printed predictions before the error"; return; }
  grep -qF "$d/adapter_config.json: " "$T/stderr" && grep -qE -- "$3" "$T/stderr" && ok || bad "$1: $(cat "$T/stderr")"
}
bad_folder prefix_tuning 's/"LORA"/"PREFIX_TUNING"/' 'peft_type "PREFIX_TUNING"'
bad_folder ia3 's/"LORA"/"IA3"/' 'peft_type "IA3"'
bad_folder dora 's/"use_dora": false/"use_dora": true/' 'use_dora true'
bad_folder rslora 's/"use_rslora": false/"use_rslora": true/' 'use_rslora true'
bad_folder bias 's/"bias": "none"/"bias": "all"/' 'bias "all"'
bad_folder fan_in 's/"fan_in_fan_out": false/"fan_in_fan_out": true/' 'fan_in_fan_out true'
bad_folder r0 's/"r": 4/"r": 0/' 'r 0'
bad_folder r_wide 's/"r": 4/"r": 4096/' 'r = 4096 exceeds'
bad_folder target 's/"query",/"q_proj",/' "target 'q_proj' matches no module"
mkdir "$T/empty"
expect_error "folder without adapter_config.json" "" "$T/empty: no adapter_config.json" -- \
  "$BIN" predict --model "$T/base.brt" --adapter "$T/empty" --task sst2 --input "$T/dev.tsv"
cp -r "$T/peft" "$T/no_weights" && rm "$T/no_weights/adapter_model.safetensors"
expect_error "folder without weights" "" "no adapter_model.safetensors" -- \
  "$BIN" merge --model "$T/base.brt" --adapter "$T/no_weights" -o "$T/x.brt"
[ -e "$T/x.brt" ] && bad "merge left x.brt" || ok

# A failed export leaves no folder; usage errors exit 2.
expect_error "--to peft of a model" "$T/out" "a model, not a LoRA adapter" -- "$CONV" --to peft "$T/base.brt" -o "$T/out"
"$CONV" --to peft "$T/a.brt" -o "$T/out2" --dtype f16 > /dev/null 2> "$T/stderr"
[ $? -eq 2 ] && grep -q -- "--dtype applies" "$T/stderr" && [ ! -e "$T/out2" ] && ok || bad "--to peft --dtype: $(cat "$T/stderr")"

echo "peft_test: $pass passed, $fail failed"
[ $fail -eq 0 ]
