#!/usr/bin/env bash
# End-to-end checks of `bertrt embed`, `bertrt rerank`, `bertrt eval --task sts|retrieval` and the
# converter's sentence-transformers input and output, on tests/reference/st_models.py's folders:
# outputs in input order, the .npy matrix, and bad input (each must exit non-zero naming the
# file, line, key or flag, and leave no output behind). The numbers against sentence-transformers
# are tests/reference/st_check.py's.
# Usage: embed_test.sh BERTRT_BINARY BERTRT_CONVERT DATA_DIR SOURCE_DIR
set -uo pipefail
CONVERT=$2
SRC=$4
set -- "$1" "$3"
source "$(dirname "$0")/harness.sh"

/usr/bin/python3 "$SRC/tests/reference/st_models.py" --out "$T/st" --weights safetensors
rc=$?
if [ $rc -eq 77 ]; then echo "SKIP: python3-torch missing"; exit 0; fi
[ $rc -eq 0 ] || { echo "FAIL: st_models.py"; exit 1; }
expect_ok "convert embedding model" "$CONVERT" -q "$T/st/dense_normalize" -o "$T/emb.brt"
expect_ok "convert prompts model" "$CONVERT" -q "$T/st/prompts" -o "$T/prompts.brt"
expect_ok "convert cross-encoder" "$CONVERT" -q "$T/st/cross_encoder" -o "$T/ce.brt"
expect_ok "init plain BERT" "$BIN" init --preset tiny --vocab "$VOCAB" -o "$T/plain.brt"

# --- embed ------------------------------------------------------------------------------------------
printf 'the cat\n\na dog\n' | "$BIN" embed --model "$T/emb.brt" > "$T/e.jsonl" 2>"$T/stderr" \
  && [ "$(wc -l < "$T/e.jsonl")" -eq 3 ] && [ "$(grep -c '^{"embedding":\[' "$T/e.jsonl")" -eq 3 ] \
  && ok || bad "embed: 3 lines in, 3 embeddings out: $(cat "$T/e.jsonl" "$T/stderr")"
# A long input is truncated and counted (the truncation model keeps 8 tokens).
expect_ok "convert truncation model" "$CONVERT" -q "$T/st/truncation" -o "$T/trunc.brt"
printf 'the big red dog and the small blue cat sat on the green mat\na dog\n' \
  | "$BIN" embed --model "$T/trunc.brt" > /dev/null 2>"$T/stderr" \
  && grep -q "1 of 2 inputs were longer than 8 tokens and were truncated" "$T/stderr" \
  && ok || bad "truncation notice: $(cat "$T/stderr")"
printf 'the cat\na dog\n' > "$T/in.txt"
expect_ok "embed --output .npy" "$BIN" embed --model "$T/emb.brt" --input "$T/in.txt" --dimensions 5 \
  --output "$T/e.npy"
/usr/bin/python3 -c "
import numpy as np, sys
e = np.load('$T/e.npy')
sys.exit(0 if e.shape == (2, 5) and e.dtype == np.float32 and abs(np.linalg.norm(e, axis=1) - 1).max() < 1e-6 else 1)
" && ok || bad "e.npy is not a float32 [2, 5] matrix of unit rows"
# Packed (the default, here 5 tokens a forward: several forwards) and padded batches: the same
# embeddings up to float rounding (tests/unit/packed_batch_test.cpp bounds it at 1e-5).
printf 'the cat sat on the mat\n\na dog\nthe big red dog and the small blue cat\nit\n' > "$T/mix.txt"
expect_ok "embed packed" "$BIN" embed --model "$T/emb.brt" --input "$T/mix.txt" --max-batch-tokens 5 --output "$T/packed.npy"
expect_ok "embed padded" "$BIN" embed --model "$T/emb.brt" --input "$T/mix.txt" --no-packing --batch-size 2 --output "$T/padded.npy"
/usr/bin/python3 -c "
import numpy as np, sys
a, b = np.load('$T/packed.npy'), np.load('$T/padded.npy')
sys.exit(0 if a.shape == b.shape == (5, 12) and abs(a - b).max() <= 1e-5 else 1)
" && ok || bad "packed and padded embeddings differ"
"$BIN" embed --model "$T/emb.brt" --input "$T/in.txt" --max-batch-tokens 0 >/dev/null 2>&1
[ $? -eq 2 ] && ok || bad "--max-batch-tokens 0 is a usage error (exit 2)"
expect_error "dimensions above the width" "$T/x.npy" "--dimensions 13 is outside \[1, 12\]" -- \
  "$BIN" embed --model "$T/emb.brt" --input "$T/in.txt" --dimensions 13 --output "$T/x.npy"
printf 'fine\n\xff\xfe\n' > "$T/bad.txt"
expect_error "non-UTF-8 line" "$T/x.npy" "bad.txt: line 2" -- \
  "$BIN" embed --model "$T/emb.brt" --input "$T/bad.txt" --output "$T/x.npy"
expect_error "no embedding head" "" "has no sentence-embedding head.*--pooling" -- \
  "$BIN" embed --model "$T/plain.brt" --input "$T/in.txt"
expect_ok "a plain BERT with --pooling" "$BIN" embed --model "$T/plain.brt" --input "$T/in.txt" --pooling mean
expect_error "unknown prompt name" "" "--prompt-name 'doc' is not one of the model's prompts \(document, passage, query\)" -- \
  "$BIN" embed --model "$T/prompts.brt" --input "$T/in.txt" --prompt-name doc
"$BIN" embed --model "$T/prompts.brt" --input "$T/in.txt" --prompt x --prompt-name query >/dev/null 2>&1
[ $? -eq 2 ] && ok || bad "--prompt with --prompt-name is a usage error (exit 2)"
expect_error "unknown pooling" "" "--pooling" -- "$BIN" embed --model "$T/plain.brt" --input "$T/in.txt" --pooling sum

# --- rerank -----------------------------------------------------------------------------------------
printf 'the cat sat on the mat .\na dog is big\nthe red dog\n' \
  | "$BIN" rerank --model "$T/ce.brt" --query 'the cat' --top-k 2 --return-text > "$T/r.jsonl" \
  && [ "$(wc -l < "$T/r.jsonl")" -eq 2 ] && grep -q '"text":' "$T/r.jsonl" \
  && ok || bad "rerank --top-k 2: $(cat "$T/r.jsonl")"
expect_error "rerank with an embedding model" "" "has a none head, not a cross-encoder" -- \
  "$BIN" rerank --model "$T/emb.brt" --query q --input "$T/in.txt"

# --- finetune --task reranker ------------------------------------------------------------------------
printf 'query\tpassage\tlabel\nthe cat\tthe cat sat on the mat .\t1\nthe cat\ta dog is big\t0\nthe dog\tthe red dog\t1\nthe dog\tthe mat\t0\n' > "$T/rr.tsv"
expect_ok "finetune a cross-encoder" "$BIN" finetune --task reranker --model "$T/ce.brt" --train "$T/rr.tsv" \
  --dev "$T/rr.tsv" --max-steps 3 --batch-size 2 --learning-rate 1e-3 --metrics "$T/rr.jsonl" -o "$T/rr.brt"
grep -q '"mrr@10":' "$T/rr.jsonl" && [ "$(grep -c '"loss":' "$T/rr.jsonl")" -eq 3 ] && ok || bad "reranker metrics: $(cat "$T/rr.jsonl")"
printf 'the cat sat on the mat .\na dog is big\n' | "$BIN" rerank --model "$T/rr.brt" --query 'the cat' > "$T/r2.jsonl" \
  && [ "$(grep -c '"score":' "$T/r2.jsonl")" -eq 2 ] && ok || bad "rerank with the fine-tuned reranker: $(cat "$T/r2.jsonl")"
expect_ok "finetune a plain BERT into a reranker" "$BIN" finetune --task reranker --model "$T/plain.brt" \
  --train "$T/rr.tsv" --max-steps 1 --batch-size 4 -o "$T/rr2.brt"
expect_error "cached-mnrl with --qat int8" "$T/x.brt" "--loss cached-mnrl with --qat int8" -- \
  "$BIN" finetune --task sentence-embedding --model "$T/emb.brt" --loss cached-mnrl --qat int8 \
  --train "$T/rr.tsv" -o "$T/x.brt"
printf 'query\tpassage\tlabel\na\tb\t1\na\tc\t3\n' > "$T/rr_bad.tsv"
expect_error "reranker label outside [0, 1]" "$T/x.brt" "rr_bad.tsv: line 3: label 3 is outside \[0, 1\]" -- \
  "$BIN" finetune --task reranker --model "$T/ce.brt" --train "$T/rr_bad.tsv" -o "$T/x.brt"

# --- eval --task sts / retrieval ----------------------------------------------------------------------
expect_ok "eval sts" "$BIN" eval --model "$T/emb.brt" --task sts --data "$DATA/glue/STS-B/dev.tsv" --json
grep -q '"cosine_pearson":' "$T/stdout" && grep -q '"cosine_spearman":' "$T/stdout" \
  && grep -q '"examples":1500' "$T/stdout" && ok || bad "eval sts --json: $(cat "$T/stdout")"
expect_ok "eval retrieval" "$BIN" eval --model "$T/emb.brt" --task retrieval \
  --data "$DATA/squad_v1.1/dev-v1.1-articles-00-39.json" --articles 39 --json
grep -q '"cosine_ndcg@10":' "$T/stdout" && grep -q '"cosine_mrr@10":' "$T/stdout" \
  && grep -q '"cosine_recall@10":' "$T/stdout" && ok || bad "eval retrieval --json: $(cat "$T/stdout")"
expect_error "sts data without a score column" "" "line 1: no column 'sentence1'" -- \
  "$BIN" eval --model "$T/emb.brt" --task sts --data "$DATA/glue/MRPC/dev.tsv"

# --- fine-tuning and int8 ------------------------------------------------------------------------------
printf 'anchor\tpositive\nthe cat\tthe cat sat on the mat\na dog\ta dog is big\nred dog\tthe red dog ran\nbig mat\tthe mat is big\n' > "$T/pairs.tsv"
expect_ok "finetune sentence-embedding (mnrl)" "$BIN" finetune --task sentence-embedding --model "$T/emb.brt" \
  --train "$T/pairs.tsv" --max-steps 3 --batch-size 2 -o "$T/ft.brt"
expect_ok "embed with the fine-tuned model" "$BIN" embed --model "$T/ft.brt" --input "$T/in.txt"
# int8 keeps the embeddings: per-channel int8 weights and per-tensor uint8 activations leave each
# Linear's output within about 1 % relative error, so the cosine to the fp32 embedding of the same
# text stays above 0.99 (the goal the int8 figures are held to; 0.9997 or more on this model).
printf 'the cat sat on the mat\na dog is big\nthe red dog ran\nthe cat\nbig mat\n' > "$T/cal.txt"
expect_ok "quantize an embedding model on texts" "$BIN" quantize --model "$T/emb.brt" --calibration "$T/cal.txt" -o "$T/emb8.brt"
grep -q "on 5 texts" "$T/stdout" && ok || bad "quantize: 5 calibration texts: $(cat "$T/stdout")"
expect_ok "quantize an embedding model on a pair file" "$BIN" quantize --model "$T/emb.brt" --calibration "$T/pairs.tsv" \
  --calibration-examples 6 -o "$T/emb8p.brt"
grep -q "on 6 texts" "$T/stdout" && ok || bad "quantize on pairs: 6 texts: $(cat "$T/stdout")"
expect_ok "embed fp32" "$BIN" embed --model "$T/emb.brt" --input "$T/cal.txt" --output "$T/e32.npy"
expect_ok "embed int8" "$BIN" embed --model "$T/emb8.brt" --input "$T/cal.txt" --output "$T/e8.npy"
/usr/bin/python3 -c "
import numpy as np, sys
a, b = np.load('$T/e32.npy'), np.load('$T/e8.npy')
sys.exit(0 if a.shape == b.shape and (a * b).sum(1).min() >= 0.99 else 1)
" && ok || bad "int8 embeddings: cosine to fp32 below 0.99"
expect_error "quantize an embedding model with --max-seq-length" "$T/x.brt" "--max-seq-length: an embedding model truncates at its own max_seq_length" -- \
  "$BIN" quantize --model "$T/emb.brt" --calibration "$T/cal.txt" --max-seq-length 8 -o "$T/x.brt"
expect_ok "finetune sentence-embedding --qat int8" "$BIN" finetune --task sentence-embedding --model "$T/emb.brt" \
  --train "$T/pairs.tsv" --max-steps 3 --batch-size 2 --qat int8 -o "$T/ftq.brt"
"$BIN" info "$T/ftq.brt" > "$T/info.txt" && grep -q "quantization.source = qat" "$T/info.txt" \
  && ok || bad "--qat int8 wrote no int8 model"
expect_ok "embed with the QAT int8 model" "$BIN" embed --model "$T/ftq.brt" --input "$T/in.txt"

# --- the converter: refused folders name the file and the key --------------------------------------
cp -r "$T/st/pool_mean" "$T/unknown_module"
sed -i 's/sentence_transformers.models.Pooling/sentence_transformers.models.WordWeights/' "$T/unknown_module/modules.json"
expect_error "unknown module type" "$T/x.brt" "modules.json: module 1 must be sentence_transformers.models.Pooling" -- \
  "$CONVERT" "$T/unknown_module" -o "$T/x.brt"
cp -r "$T/st/pool_mean" "$T/unknown_key"
sed -i 's/"include_prompt"/"pooling_mode_sum_tokens": false, "include_prompt"/' "$T/unknown_key/1_Pooling/config.json"
expect_error "unknown pooling key" "$T/x.brt" "1_Pooling/config.json: key 'pooling_mode_sum_tokens'" -- \
  "$CONVERT" "$T/unknown_key" -o "$T/x.brt"
expect_error "export without an embedding head" "" "has no sentence-embedding head" -- \
  "$CONVERT" --to sentence-transformers "$T/ce.brt" -o "$T/ce-st"

# --- the head on the Vulkan backend ----------------------------------------------------------------
# The same embeddings as on cpu, and the same fine-tuning losses step by step, within the bound
# platforms/compare_runs.py puts on two runs that differ only in float rounding (rtol 1e-5,
# atol 1e-6). Every pooling mode (pool_all), Dense and Normalize, a skipped prompt.
if "$BIN" info --devices 2>/dev/null | grep -q '^0:'; then
  expect_ok "convert pool_all" "$CONVERT" -q "$T/st/pool_all" -o "$T/all.brt"
  printf 'the cat sat on the mat\n\na dog\nthe big red dog and the small blue cat\n' > "$T/vk.txt"
  for m in emb:"" all:"" prompts:"--prompt-name query" emb:"--dimensions 5"; do
    name=${m%%:*} flags=${m#*:}
    # shellcheck disable=SC2086
    "$BIN" embed --backend cpu --model "$T/$name.brt" --input "$T/vk.txt" $flags --output "$T/cpu.npy" &&
    BERTRT_VULKAN_VALIDATION=${BERTRT_VULKAN_VALIDATION:-1} \
      "$BIN" embed --backend vulkan --model "$T/$name.brt" --input "$T/vk.txt" $flags \
      --output "$T/vk.npy" 2>"$T/stderr" && ! grep -q "vulkan validation" "$T/stderr" &&
    /usr/bin/python3 -c "
import numpy as np, sys
a, b = np.load('$T/vk.npy'), np.load('$T/cpu.npy')
sys.exit(0 if a.shape == b.shape and np.all(np.abs(a - b) <= 1e-5 * np.abs(b) + 1e-6) else 1)
" && ok || bad "embed --backend vulkan differs from cpu ($name $flags): $(cat "$T/stderr")"
  done
  printf 'sentence1\tsentence2\tscore\nthe cat\ta cat\t0.9\na dog\tthe mat\t0.1\nred dog\tbig dog\t0.6\nthe sun\ta cat sat\t0.2\n' \
    > "$T/sts.tsv"
  for be in cpu vulkan; do
    "$BIN" finetune --backend "$be" --task sentence-embedding --loss cosent --model "$T/emb.brt" \
      --train "$T/sts.tsv" --max-steps 3 --batch-size 4 --learning-rate 1e-3 \
      --metrics "$T/ft-$be.jsonl" -o "$T/ft-$be.brt" > "$T/ft-$be.log" 2>&1 \
      || bad "finetune sentence-embedding --backend $be: $(tail -3 "$T/ft-$be.log")"
  done
  /usr/bin/python3 -c "
import json, sys
loss = lambda p: [json.loads(l)['loss'] for l in open(p) if 'eval' not in l]
a, b = loss('$T/ft-vulkan.jsonl'), loss('$T/ft-cpu.jsonl')
sys.exit(0 if len(a) == len(b) == 3 and all(abs(x - y) <= 1e-5 * abs(y) + 1e-6 for x, y in zip(a, b)) else 1)
" && ok || bad "finetune sentence-embedding: vulkan losses differ from cpu"
else
  echo "embed_test: no Vulkan device; the vulkan checks are skipped"
fi

echo "embed_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
