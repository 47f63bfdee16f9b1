#!/usr/bin/env bash
# End-to-end checks of quantization in the `bertrt` command on a tiny model and real
# SST-2 lines: finetune --qat int8 (int8 -o + --save-fake-quant), eval/predict/forward/info on both
# files, fake-quant vs int8 agreement, quantize (PTQ), and the errors: quantize without or with
# empty calibration data, training or quantizing an int8 model, bad --qat values.
# Usage: qat_cli_test.sh BERTRT_BINARY DATA_DIR
set -uo pipefail
source "$(dirname "$0")/harness.sh"
export BERTRT_NUM_THREADS=${BERTRT_NUM_THREADS:-1}

head -n 400 "$DATA/glue/SST-2/train.tsv" > "$T/train.tsv"
head -n 61 "$DATA/glue/SST-2/dev.tsv" > "$T/dev.tsv"
tail -n +2 "$T/dev.tsv" | cut -f1 > "$T/sentences.txt"
expect_ok init "$BIN" init --preset tiny --vocab "$VOCAB" --seed 3 -o "$T/init.brt"
expect_ok finetune-fp32 "$BIN" finetune --model "$T/init.brt" --task sst2 --train "$T/train.tsv" \
  --dev "$T/dev.tsv" --max-steps 6 --batch-size 16 --learning-rate 1e-3 -o "$T/fp32.brt"
expect_ok finetune-qat "$BIN" finetune --model "$T/init.brt" --task sst2 --train "$T/train.tsv" \
  --dev "$T/dev.tsv" --max-steps 6 --batch-size 16 --learning-rate 1e-3 --qat int8 \
  --qat-observer-momentum 0.05 --qat-freeze-observers-steps 4 --save-fake-quant "$T/fq.brt" -o "$T/int8.brt"
grep -q "int8 model:" "$T/stdout" && ok || bad "finetune --qat prints the int8 size: $(cat "$T/stdout")"

# The files: the int8 one has i8 weights with per-channel scales and ranges; ≈ 1/4 of the fake-quant.
expect_ok info-int8 "$BIN" info "$T/int8.brt"
grep -qE '^quant +bert.encoder.layer.0.attention.self.query.weight i8 \[[0-9]+, [0-9]+\] axis 0: [0-9]+ scales' "$T/stdout" \
  && grep -qE '^quant +classifier.input_observer range' "$T/stdout" \
  && grep -qE '^quant +bert.embeddings.word_embeddings.weight i8' "$T/stdout" \
  && grep -qE 'metadata +quantization = int8' "$T/stdout" && ok || bad "info int8: $(head -20 "$T/stdout")"
expect_ok info-json "$BIN" info --json "$T/int8.brt"
grep -q '"scale_max"' "$T/stdout" && ok || bad "info --json has the scale range"
ratio=$(awk -v a="$(stat -c %s "$T/int8.brt")" -v b="$(stat -c %s "$T/fq.brt")" 'BEGIN { print a / b }')
awk -v r="$ratio" 'BEGIN { exit !(r < 0.30) }' && ok || bad "int8 file is $ratio of the fake-quant one"

# eval / predict / forward take both transparently; int8 and fake-quant predictions agree.
expect_ok eval-int8 "$BIN" eval --model "$T/int8.brt" --task sst2 --data "$T/dev.tsv" --json
grep -qE '"examples":60' "$T/stdout" && ok || bad "eval int8: $(cat "$T/stdout")"
"$BIN" predict --model "$T/int8.brt" < "$T/sentences.txt" | cut -f1 > "$T/p_int8.txt" && ok || bad "predict int8"
"$BIN" predict --model "$T/fq.brt" < "$T/sentences.txt" | cut -f1 > "$T/p_fq.txt" && ok || bad "predict fq"
[ "$(wc -l < "$T/p_int8.txt")" -eq 60 ] && cmp -s "$T/p_int8.txt" "$T/p_fq.txt" && ok \
  || bad "int8 and fake-quant predictions differ: $(paste "$T/p_int8.txt" "$T/p_fq.txt" | awk '$1 != $2' | wc -l) of 60"
# (outputs go to files first: with pipefail, grep -q closing the pipe early would fail the writer)
echo '{"input_ids":[101,7592,102]}' | "$BIN" forward --model "$T/int8.brt" > "$T/fwd.json" \
  && grep -q '"logits"' "$T/fwd.json" && ok || bad "forward int8"
expect_ok bench-int8 "$BIN" bench --model "$T/int8.brt" --batch-size 2 --seq-len 16 --iters 2 --warmup 0
grep -q "(int8," "$T/stdout" && ok || bad "bench reports int8: $(cat "$T/stdout")"

# PTQ of the fp32 model.
expect_ok quantize "$BIN" quantize --model "$T/fp32.brt" --task sst2 --calibration "$T/train.tsv" \
  --calibration-examples 64 --save-fake-quant "$T/ptq_fq.brt" -o "$T/ptq.brt"
grep -q "on 64 examples" "$T/stdout" && ok || bad "quantize: $(cat "$T/stdout")"
expect_ok eval-ptq "$BIN" eval --model "$T/ptq.brt" --task sst2 --data "$T/dev.tsv"
"$BIN" info "$T/ptq.brt" > "$T/info_ptq.txt" && grep -q "quantization.source = ptq" "$T/info_ptq.txt" \
  && ok || bad "ptq metadata"

# PTQ of token-classification and generic-TSV models, with the task the model records (quantize
# read GLUE TSVs only: "unknown task 'tsv'"); calibration windows at the fine-tuning length.
head -n 200 "$DATA/conll2003/eng.train" > "$T/ner.conll"
expect_ok finetune-ner "$BIN" finetune --model "$T/init.brt" --task conll2003 --train "$T/ner.conll" \
  --max-steps 2 --batch-size 8 --max-seq-length 32 -o "$T/ner.brt"
expect_ok quantize-ner "$BIN" quantize --model "$T/ner.brt" --calibration "$T/ner.conll" \
  --calibration-examples 8 -o "$T/ner_q.brt"
grep -q "on 8 examples" "$T/stdout" && ok || bad "quantize-ner: $(cat "$T/stdout")"
expect_ok eval-ner-int8 "$BIN" eval --model "$T/ner_q.brt" --data "$T/ner.conll" --json
grep -q '"overall_f1"' "$T/stdout" && ok || bad "eval-ner-int8: $(cat "$T/stdout")"
expect_ok finetune-tsv "$BIN" finetune --model "$T/init.brt" --task tsv --text-column sentence \
  --label-column label --labels 0,1 --train "$T/train.tsv" --max-steps 2 --batch-size 8 -o "$T/tsv.brt"
expect_ok quantize-tsv "$BIN" quantize --model "$T/tsv.brt" --task tsv --calibration "$T/train.tsv" \
  --calibration-examples 32 -o "$T/tsv_q.brt"
expect_ok eval-tsv-int8 "$BIN" eval --model "$T/tsv_q.brt" --data "$T/dev.tsv"

# Errors.
expect_error "quantize without calibration" "$T/e1.brt" "calibration" -- "$BIN" quantize --model "$T/fp32.brt" --task sst2 -o "$T/e1.brt"
head -n 1 "$T/train.tsv" > "$T/header_only.tsv"
expect_error "quantize with empty calibration" "$T/e2.brt" "header_only.tsv: no examples" -- "$BIN" quantize --model "$T/fp32.brt" --task sst2 --calibration "$T/header_only.tsv" -o "$T/e2.brt"
expect_error "quantize an int8 model" "$T/e3.brt" "already an int8 model" -- "$BIN" quantize --model "$T/int8.brt" --task sst2 --calibration "$T/train.tsv" -o "$T/e3.brt"
expect_error "quantize an untuned model" "$T/e4.brt" "fine-tune it first" -- "$BIN" quantize --model "$T/init.brt" --task sst2 --calibration "$T/train.tsv" -o "$T/e4.brt"
head -n 20 "$DATA/glue/MRPC/dev.tsv" > "$T/mrpc.tsv"
expect_error "quantize for another task" "$T/e8.brt" "fp32.brt: the model was fine-tuned for task sst2, not mrpc" -- "$BIN" quantize --model "$T/fp32.brt" --task mrpc --calibration "$T/mrpc.tsv" -o "$T/e8.brt"
# -o over --model is refused: the fp32 source is what a later quantization starts from.
cp "$T/fp32.brt" "$T/same.brt"
expect_error "quantize in place" "" "-o .*same.brt: is also --model" -- "$BIN" quantize --model "$T/same.brt" --task sst2 --calibration "$T/train.tsv" -o "$T/same.brt"
cmp -s "$T/fp32.brt" "$T/same.brt" && ok || bad "quantize in place replaced its fp32 source"
expect_error "finetune an int8 model" "$T/e5.brt" "int8 inference model|inference only" -- "$BIN" finetune --model "$T/int8.brt" --task sst2 --train "$T/train.tsv" --dev "$T/dev.tsv" --max-steps 1 -o "$T/e5.brt"
expect_error "--qat int4" "$T/e6.brt" "qat" -- "$BIN" finetune --model "$T/init.brt" --task sst2 --train "$T/train.tsv" --dev "$T/dev.tsv" --max-steps 1 --qat int4 -o "$T/e6.brt"
expect_error "--save-fake-quant without --qat" "$T/e7.brt" "save-fake-quant needs --qat" -- "$BIN" finetune --model "$T/init.brt" --task sst2 --train "$T/train.tsv" --dev "$T/dev.tsv" --max-steps 1 --save-fake-quant "$T/x.brt" -o "$T/e7.brt"
expect_error "momentum 0" "$T/e8.brt" "qat-observer-momentum" -- "$BIN" finetune --model "$T/init.brt" --task sst2 --train "$T/train.tsv" --dev "$T/dev.tsv" --max-steps 1 --qat int8 --qat-observer-momentum 0 -o "$T/e8.brt"

echo "qat_cli_test: $pass passed, $fail failed"
[ $fail -eq 0 ]
