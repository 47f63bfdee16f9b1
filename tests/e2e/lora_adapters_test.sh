#!/usr/bin/env bash
# LoRA adapters over a shared base in the CLI: --adapter on forward and embed (as on eval and
# predict) gives the merged model's outputs, the base file is never written; finetune --task
# sentence-embedding --lora-r writes an adapter that embed, eval --task sts and merge run; an
# adapter of another base or a model given as the adapter is refused before any output.
# Usage: lora_adapters_test.sh BERTRT_BINARY DATA_DIR
set -uo pipefail
source "$(dirname "$0")/harness.sh"

head -n 120 "$DATA/glue/SST-2/train.tsv" > "$T/train.tsv"
expect_ok init "$BIN" init --preset tiny --vocab "$VOCAB" --seed 3 -o "$T/base.brt"
cp "$T/base.brt" "$T/base_copy.brt"
LORA=(--task sst2 --train "$T/train.tsv" --max-steps 4 --batch-size 8 --learning-rate 1e-2
      --lora-r 4 --lora-alpha 8)
expect_ok "finetune a" "$BIN" finetune --model "$T/base.brt" "${LORA[@]}" --lora-target query,value -o "$T/a.brt"
expect_ok "finetune b" "$BIN" finetune --model "$T/base.brt" "${LORA[@]}" --lora-target dense --seed 7 -o "$T/b.brt"
expect_ok "merge a" "$BIN" merge --model "$T/base.brt" --adapter "$T/a.brt" -o "$T/merged_a.brt"

# forward: the tokens of two sentences, through the base with each adapter, and the merged model.
printf 'a gorgeous, witty movie\nthe plot is thin and the acting worse\n' > "$T/text.txt"
"$BIN" tokenize --model "$T/base.brt" --json < "$T/text.txt" > "$T/ids.jsonl" && ok || bad "tokenize"
for x in a b; do
  "$BIN" forward --model "$T/base.brt" --adapter "$T/$x.brt" < "$T/ids.jsonl" > "$T/fwd_$x.jsonl" \
    && ok || bad "forward --adapter $x"
done
"$BIN" forward --model "$T/merged_a.brt" < "$T/ids.jsonl" > "$T/fwd_merged.jsonl" && ok || bad "forward merged"
"$BIN" forward --model "$T/base.brt" < "$T/ids.jsonl" > "$T/fwd_base.jsonl" && ok || bad "forward base"
# The adapter's head gives logits [2] a line; the merged weights round differently from the two
# products (tiny model, O(1) logits): 1e-4. The two adapters and the base differ.
/usr/bin/python3 - "$T" <<'EOF' && ok || bad "forward --adapter outputs"
import json, sys
t = sys.argv[1]
read = lambda n: [json.loads(l) for l in open(f"{t}/{n}.jsonl")]
a, b, m, base = read("fwd_a"), read("fwd_b"), read("fwd_merged"), read("fwd_base")
assert len(a) == len(m) == 2
for x, y in zip(a, m):
    assert len(x["logits"]) == 2, x.keys()
    assert max(abs(p - q) for p, q in zip(x["logits"], y["logits"])) < 1e-4, (x["logits"], y["logits"])
    hx = [v for row in x["last_hidden_state"] for v in row]
    hy = [v for row in y["last_hidden_state"] for v in row]
    assert max(abs(p - q) for p, q in zip(hx, hy)) < 1e-4
assert "logits" not in base[0]
assert a[0]["last_hidden_state"] != b[0]["last_hidden_state"] != base[0]["last_hidden_state"]
EOF

# embed: mean pooling of the adapted encoder, as the merged model's.
expect_ok "embed --adapter" "$BIN" embed --model "$T/base.brt" --adapter "$T/a.brt" --pooling mean --input "$T/text.txt"
cp "$T/stdout" "$T/emb_a.jsonl"
expect_ok "embed merged" "$BIN" embed --model "$T/merged_a.brt" --pooling mean --input "$T/text.txt"
cp "$T/stdout" "$T/emb_merged.jsonl"
expect_ok "embed base" "$BIN" embed --model "$T/base.brt" --pooling mean --input "$T/text.txt"
cp "$T/stdout" "$T/emb_base.jsonl"
/usr/bin/python3 - "$T" <<'EOF' && ok || bad "embed --adapter outputs"
import json, sys
t = sys.argv[1]
read = lambda n: [json.loads(l)["embedding"] for l in open(f"{t}/{n}.jsonl")]
a, m, base = read("emb_a"), read("emb_merged"), read("emb_base")
assert len(a) == 2
for x, y in zip(a, m):
    assert max(abs(p - q) for p, q in zip(x, y)) < 1e-5, "adapter and merged embeddings differ"
assert max(abs(p - q) for p, q in zip(a[0], base[0])) > 1e-4, "the adapter changed nothing"
EOF
cmp -s "$T/base.brt" "$T/base_copy.brt" && ok || bad "running adapters changed the base file"

# --- sentence-embedding LoRA: finetune writes an adapter with the embedding head's settings ----------
printf 'anchor\tpositive\nthe cat\tthe cat sat on the mat\na dog\ta dog is big\nred dog\tthe red dog ran\nbig mat\tthe mat is big\n' > "$T/pairs.tsv"
expect_ok "finetune sentence-embedding --lora-r" "$BIN" finetune --task sentence-embedding --model "$T/base.brt" \
  --pooling mean --train "$T/pairs.tsv" --max-steps 3 --batch-size 2 --learning-rate 1e-2 --lora-r 4 \
  --lora-target query,value -o "$T/emb.lora.brt"
grep -q "adapted Linears" "$T/stderr" && ok || bad "no LoRA summary: $(cat "$T/stderr")"
[ "$(stat -c %s "$T/emb.lora.brt")" -lt "$(( $(stat -c %s "$T/base.brt") / 2 ))" ] && ok || bad "embedding adapter not small"
cmp -s "$T/base.brt" "$T/base_copy.brt" && ok || bad "finetune sentence-embedding --lora-r changed its base"
# The adapter carries the mean pooling: embed needs no --pooling, and gives the merged model's.
expect_ok "embed --adapter (embedding adapter)" "$BIN" embed --model "$T/base.brt" --adapter "$T/emb.lora.brt" --input "$T/text.txt"
cp "$T/stdout" "$T/emb_lora.jsonl"
expect_ok "merge the embedding adapter" "$BIN" merge --model "$T/base.brt" --adapter "$T/emb.lora.brt" -o "$T/emb_merged.brt"
expect_ok "embed merged embedding model" "$BIN" embed --model "$T/emb_merged.brt" --input "$T/text.txt"
cp "$T/stdout" "$T/emb_lora_merged.jsonl"
/usr/bin/python3 - "$T" <<'EOF2' && ok || bad "embedding adapter outputs"
import json, sys
t = sys.argv[1]
read = lambda n: [json.loads(l)["embedding"] for l in open(f"{t}/{n}.jsonl")]
a, m, base = read("emb_lora"), read("emb_lora_merged"), read("emb_base")
for x, y in zip(a, m):
    assert max(abs(p - q) for p, q in zip(x, y)) < 1e-5, "adapter and merged embeddings differ"
assert max(abs(p - q) for p, q in zip(a[0], base[0])) > 1e-4, "the adapter changed nothing"
EOF2
expect_ok "eval sts --adapter" "$BIN" eval --model "$T/base.brt" --adapter "$T/emb.lora.brt" --task sts \
  --data "$DATA/glue/STS-B/dev.tsv" --json
grep -q '"cosine_spearman":' "$T/stdout" && ok || bad "eval sts --adapter: $(cat "$T/stdout")"
expect_error "reranker --lora-r" "$T/x.brt" "--lora-r with --task reranker is not supported yet" -- \
  "$BIN" finetune --task reranker --model "$T/base.brt" --train "$T/pairs.tsv" --lora-r 4 -o "$T/x.brt"

# --- bad input -------------------------------------------------------------------------------------
expect_ok "init another base" "$BIN" init --preset tiny --vocab "$VOCAB" --seed 4 -o "$T/other.brt"
expect_error "forward: adapter of another base" "" "a.brt was trained on another base" -- \
  "$BIN" forward --model "$T/other.brt" --adapter "$T/a.brt"
expect_error "embed: adapter of another base" "$T/e.npy" "a.brt was trained on another base" -- \
  "$BIN" embed --model "$T/other.brt" --adapter "$T/a.brt" --pooling mean --input "$T/text.txt" --output "$T/e.npy"
expect_error "embed: a model as --adapter" "" "merged_a.brt: a model file, not a LoRA adapter" -- \
  "$BIN" embed --model "$T/base.brt" --adapter "$T/merged_a.brt" --pooling mean --input "$T/text.txt"
expect_error "forward: missing adapter" "" "--adapter .*missing.brt" -- \
  "$BIN" forward --model "$T/base.brt" --adapter "$T/missing.brt"
expect_error "embed: --output over the adapter" "" "--output .*a.brt: is also --adapter" -- \
  "$BIN" embed --model "$T/base.brt" --adapter "$T/a.brt" --pooling mean --input "$T/text.txt" --output "$T/a.brt"

echo "lora_adapters_test: $pass passed, $fail failed"
[ $fail -eq 0 ]
