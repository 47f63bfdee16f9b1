#!/usr/bin/env bash
# End-to-end checks of the `bertrt` command on real data: every subcommand on a tiny model, then
# bad inputs — each must exit non-zero, name the file/line/flag, and leave no
# output file behind.
# Usage: cli_test.sh BERTRT_BINARY DATA_DIR
set -uo pipefail
source "$(dirname "$0")/harness.sh"

# --- the happy path on a tiny model ---------------------------------------------------------------
head -c 300000 "$DATA/corpus/enwiki/enwiki_valid_1000docs.txt" > "$T/corpus.txt"
head -n 200 "$DATA/glue/SST-2/train.tsv" > "$T/train.tsv"
head -n 101 "$DATA/glue/SST-2/dev.tsv" > "$T/dev.tsv"
expect_ok init "$BIN" init --preset tiny --vocab "$VOCAB" --seed 3 -o "$T/init.brt"
expect_ok info "$BIN" info "$T/init.brt" --json
grep -q '"num_hidden_layers": 2' "$T/stdout" && ok || bad "info --json lacks num_hidden_layers"
# float32 config values as written (HF's defaults 1e-12, 0.02, 0.1), not widened to double.
for kv in '"layer_norm_eps": 1e-12' '"initializer_range": 0.02' '"hidden_dropout_prob": 0.1,'; do
  grep -qF "$kv" "$T/stdout" && ok || bad "info --json lacks $kv: $(grep -E 'eps|range|dropout' "$T/stdout")"
done
expect_ok "info text" "$BIN" info "$T/init.brt"
grep -qF '"layer_norm_eps":1e-12' "$T/stdout" && grep -qF '"attention_probs_dropout_prob":0.1,' "$T/stdout" \
  && ok || bad "info text config: $(grep '^config' "$T/stdout")"
printf 'Hello, world!\tSecond sentence.\n' | "$BIN" tokenize --model "$T/init.brt" --json > "$T/tok.json" \
  && grep -q '"tokens":\["\[CLS\]","hello",",","world","!","\[SEP\]","second","sentence",".","\[SEP\]"\]' "$T/tok.json" \
  && ok || bad "tokenize: $(cat "$T/tok.json")"
expect_error "tokenize of three texts" "" "line 1: more than two tab-separated texts" -- sh -c "printf 'a\tb\tc\n' | '$BIN' tokenize --model '$T/init.brt'"
echo '{"input_ids":[101,7592,102],"attention_mask":[1,1,1]}' | "$BIN" forward --model "$T/init.brt" > "$T/fwd.json" \
  && grep -q '"last_hidden_state"' "$T/fwd.json" && grep -q '"prediction_logits"' "$T/fwd.json" \
  && grep -q '"seq_relationship_logits"' "$T/fwd.json" && ok || bad "forward"
expect_ok pretrain "$BIN" pretrain --model "$T/init.brt" --corpus "$T/corpus.txt" --valid "$T/corpus.txt" \
  --max-steps 4 --batch-size 4 --max-seq-length 64 --learning-rate 1e-3 --valid-examples 16 \
  --metrics "$T/pt.jsonl" -o "$T/pt.brt"
[ "$(grep -c '"step"' "$T/pt.jsonl")" -ge 4 ] && grep -q '"tokens_per_second"' "$T/pt.jsonl" && ok || bad "pretrain metrics"
# Seeded and deterministic: the same flags give a byte-identical model.
expect_ok pretrain-again "$BIN" pretrain --model "$T/init.brt" --corpus "$T/corpus.txt" --valid "$T/corpus.txt" \
  --max-steps 4 --batch-size 4 --max-seq-length 64 --learning-rate 1e-3 --valid-examples 16 -o "$T/pt2.brt"
cmp -s "$T/pt.brt" "$T/pt2.brt" && ok || bad "two runs with the same seed differ"
expect_ok fill-mask "$BIN" fill-mask --model "$T/pt.brt" --top-k 3 "the cat sat on the [MASK] ."
[ "$(wc -l < "$T/stdout")" -eq 3 ] && ok || bad "fill-mask prints 3 candidates: $(cat "$T/stdout")"
expect_ok finetune "$BIN" finetune --model "$T/pt.brt" --task sst2 --train "$T/train.tsv" --dev "$T/dev.tsv" \
  --max-steps 3 --batch-size 8 --learning-rate 1e-4 --metrics "$T/ft.jsonl" -o "$T/sst2.brt"
# plot draws finetune's curves too (its eval records name the split, metrics at top level).
expect_ok "plot of finetune metrics" "$BIN" plot "$T/ft.jsonl" -o "$T/ft.svg"
cp "$T/ft.jsonl" "$T/ft_copy.svg"
expect_error "plot -o its own input" "" "-o .*ft_copy.svg: is also a metrics file" -- "$BIN" plot "$T/ft_copy.svg" -o "$T/ft_copy.svg"
cmp -s "$T/ft.jsonl" "$T/ft_copy.svg" && ok || bad "plot overwrote its input"
/usr/bin/python3 - "$T/ft.svg" <<'EOF2' && ok || bad "plot of finetune metrics: $(cat "$T/stdout")"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
ids = {e.get("id") for e in root.iter(ns + "polyline")}
want = {"train-loss", "train-accuracy", "eval-loss", "eval-accuracy"}
assert want <= ids, want - ids
assert any(t.text and t.text.startswith("bertrt finetune:") for t in root.iter(ns + "text"))
EOF2
# Memory options of fine-tuning: --recompute gives the same bytes; with --freeze-embeddings and
# --freeze-layers 1 the embeddings and layer 0 come out bit for bit, layer 1 and the head move.
FRZ=(--task sst2 --train "$T/train.tsv" --max-steps 3 --batch-size 8 --learning-rate 1e-3 --freeze-embeddings --freeze-layers 1)
expect_ok finetune-frozen "$BIN" finetune --model "$T/pt.brt" "${FRZ[@]}" -o "$T/frz.brt"
expect_ok finetune-frozen-recompute "$BIN" finetune --model "$T/pt.brt" "${FRZ[@]}" --recompute -o "$T/frz2.brt"
cmp -s "$T/frz.brt" "$T/frz2.brt" && ok || bad "finetune --recompute changed the result"
CONVERT="$(dirname "$BIN")/bertrt-convert"
if [ -x "$CONVERT" ]; then
  "$CONVERT" --to hf "$T/pt.brt" -o "$T/pt_hf" -q 2>/dev/null && "$CONVERT" --to hf "$T/frz.brt" -o "$T/frz_hf" -q \
    && /usr/bin/python3 - "$T/pt_hf/model.safetensors" "$T/frz_hf/model.safetensors" <<'EOF2' && ok || bad "finetune --freeze-*: frozen tensors moved or trained ones did not"
import json, struct, sys
def tensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n])
    return {k: b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]
            for k, v in head.items() if k != "__metadata__"}
a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
frozen = [k for k in b if k.startswith(("bert.embeddings.", "bert.encoder.layer.0."))]
trained = [k for k in b if k.startswith("bert.encoder.layer.1.") and k.endswith("dense.weight")]
assert frozen and trained, (frozen, trained)
moved = [k for k in frozen if a[k] != b[k]]
still = [k for k in trained if a[k] == b[k]]
assert not moved and not still, (moved, still)
EOF2
fi
expect_error "finetune --freeze-layers past the model" "$T/o6.brt" "freeze-layers 3.*2 encoder layers" -- \
  "$BIN" finetune --model "$T/pt.brt" --task sst2 --train "$T/train.tsv" --max-steps 1 --freeze-layers 3 -o "$T/o6.brt"
expect_error "finetune --freeze-layers INT_MAX (refused at once)" "$T/o6.brt" "freeze-layers 2147483647.*2 encoder layers" -- \
  timeout 60 "$BIN" finetune --model "$T/pt.brt" --task sst2 --train "$T/train.tsv" --max-steps 1 --freeze-layers 2147483647 -o "$T/o6.brt"
expect_error "finetune --freeze-layers -1" "$T/o6.brt" "--freeze-layers must be ≥ 0" -- \
  "$BIN" finetune --model "$T/pt.brt" --task sst2 --train "$T/train.tsv" --max-steps 1 --freeze-layers -1 -o "$T/o6.brt"
expect_error "finetune --recompute --qat int8" "$T/o6.brt" "--recompute with --qat int8" -- \
  "$BIN" finetune --model "$T/pt.brt" --task sst2 --train "$T/train.tsv" --max-steps 1 --recompute --qat int8 -o "$T/o6.brt"
# QAT's own flags without --qat changed nothing and exited 0; one file for both outputs was
# written twice (the int8 model over the fake-quant one).
for flag in "--qat-observer-momentum 0.5" "--qat-freeze-observers-steps 5" "--qat-embeddings float"; do
  expect_error "finetune $flag without --qat" "$T/o6.brt" "${flag%% *} needs --qat int8" -- \
    "$BIN" finetune --model "$T/pt.brt" --task sst2 --train "$T/train.tsv" --max-steps 1 $flag -o "$T/o6.brt"
done
expect_error "finetune --save-fake-quant is -o" "$T/o6.brt" "-o .*o6.brt: is also --save-fake-quant" -- \
  "$BIN" finetune --model "$T/pt.brt" --task sst2 --train "$T/train.tsv" --max-steps 1 --qat int8 --save-fake-quant "$T/o6.brt" -o "$T/o6.brt"
# The same new file spelt two ways (weakly_canonical kept a relative path none of whose parts exist).
expect_error "finetune --save-fake-quant ./X -o X" "$T/o6.brt" "-o o6.brt: is also --save-fake-quant" -- \
  sh -c "B=\$(realpath '$BIN') && cd '$T' && \$B finetune --model pt.brt --task sst2 --train train.tsv --max-steps 1 --qat int8 --save-fake-quant ./o6.brt -o o6.brt"
expect_ok eval "$BIN" eval --model "$T/sst2.brt" --task sst2 --data "$T/dev.tsv" --json
grep -qE '^\{"accuracy":[0-9.e-]+,"examples":100,.*"task":"sst2"\}$' "$T/stdout" && ok || bad "eval json: $(cat "$T/stdout")"
printf 'a great movie\nawful\n' | "$BIN" predict --model "$T/sst2.brt" --json > "$T/pred.json" \
  && [ "$(grep -c '"probabilities"' "$T/pred.json")" -eq 2 ] && ok || bad "predict"
# predict names the SST-2 classes as Hugging Face datasets does (the file spells them 0/1), says
# nothing on stderr, skips blank lines (one note counts them: it stopped at the first), and --json
# echoes each input with its line.
printf 'a great movie\n\n  \t\nawful\n' | "$BIN" predict --model "$T/sst2.brt" > "$T/pred.txt" 2> "$T/pred.err"
[ "$(grep -cE '^(negative|positive)	negative=[0-9.]+	positive=[0-9.]+$' "$T/pred.txt")" -eq 2 ] && [ "$(wc -l < "$T/pred.txt")" -eq 2 ] \
  && ok || bad "predict labels: $(cat "$T/pred.txt")"
[ "$(cat "$T/pred.err")" = "bertrt: note: skipped 2 blank lines of stdin (lines 2, 3)" ] && ok || bad "predict blank lines: $(cat "$T/pred.err")"
printf 'a great movie\n\nawful\n' | "$BIN" predict --model "$T/sst2.brt" --json > "$T/pred.json" 2> /dev/null
/usr/bin/python3 - "$T/pred.json" <<'EOF2' && ok || bad "predict --json echo: $(cat "$T/pred.json")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [(r["line"], r["text"]) for r in rows] == [(1, "a great movie"), (3, "awful")], rows
assert all(list(r) == ["line", "text", "label", "probabilities"] for r in rows), rows
assert all(list(r["probabilities"]) == ["negative", "positive"] for r in rows), rows
assert all(r["label"] == max(r["probabilities"], key=r["probabilities"].get) for r in rows), rows
EOF2
# --input FILE with --text-column: a TSV file with a header (the dev file itself); by index
# without one (--no-header); the outputs agree with stdin's.
expect_ok "predict --input --text-column" "$BIN" predict --model "$T/sst2.brt" --input "$T/dev.tsv" --text-column sentence --json
[ "$(wc -l < "$T/stdout")" -eq 100 ] && head -1 "$T/stdout" | grep -q '^{"line":2,"text":' && ok || bad "predict --input dev.tsv: $(head -2 "$T/stdout")"
cp "$T/stdout" "$T/pred_named.json"
tail -n +2 "$T/dev.tsv" | awk -F'\t' -v OFS='\t' '{print $2, $1}' > "$T/dev_noheader.tsv"
expect_ok "predict --no-header --text-column 1" "$BIN" predict --model "$T/sst2.brt" --input "$T/dev_noheader.tsv" --no-header --text-column 1 --json
/usr/bin/python3 - "$T/pred_named.json" "$T/stdout" <<'EOF2' && ok || bad "predict by column name and by index differ"
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
assert [(x["text"], x["label"]) for x in a] == [(x["text"], x["label"]) for x in b]
assert [x["line"] for x in b] == list(range(1, 101))
EOF2
tail -n +2 "$T/dev.tsv" | cut -f1 | head -5 | "$BIN" predict --model "$T/sst2.brt" > "$T/pred_stdin.txt"
"$BIN" predict --model "$T/sst2.brt" --input "$T/dev.tsv" --text-column 0 | head -5 > "$T/pred_file.txt"
cmp -s "$T/pred_stdin.txt" "$T/pred_file.txt" && ok || bad "predict --input differs from stdin"
expect_error "predict --text-column not in the header" "" "--text-column review: no such column in the header of .*dev.tsv \(line 1: sentence, label\)" -- \
  "$BIN" predict --model "$T/sst2.brt" --input "$T/dev.tsv" --text-column review
expect_error "predict --text-column beyond the columns" "" "--text-column 5: .*dev.tsv line 1 has 2 tab-separated columns \(indices 0 to 1\)" -- \
  "$BIN" predict --model "$T/sst2.brt" --input "$T/dev.tsv" --text-column 5
expect_error "predict --input missing" "" "--input .*nope.tsv: no such file" -- "$BIN" predict --model "$T/sst2.brt" --input "$T/nope.tsv"
for usage in "--text-pair-column label --text-column sentence" "--no-header" "--text-pair-column 1"; do
  # shellcheck disable=SC2086
  "$BIN" predict --model "$T/sst2.brt" --input "$T/dev.tsv" $usage > /dev/null 2> "$T/err" < /dev/null
  rc=$?
  [ $rc -eq 2 ] && grep -q "^bertrt: error: " "$T/err" && ok || bad "predict $usage: exit $rc (expected 2): $(cat "$T/err")"
done
# tokenize --json feeds forward as it is ("tokens" is ignored; a misspelt key is still refused).
printf 'Hello, world!\tSecond sentence.\n' | "$BIN" tokenize --model "$T/init.brt" --json | "$BIN" forward --model "$T/init.brt" > "$T/tokfwd.json" 2> "$T/err" \
  && [ "$(wc -l < "$T/tokfwd.json")" -eq 1 ] && grep -q '"last_hidden_state"' "$T/tokfwd.json" && ok || bad "tokenize --json | forward: $(cat "$T/err")"
# The fp32 GEMM's OpenBLAS core (backends/cpu/blas_core.h): a core the user names is kept as is;
# without one, never the SSE3 fallback on a CPU with AVX2 + FMA.
if [ "$(uname -m)" = x86_64 ]; then
  bench1=(bench --model "$T/init.brt" --batch-size 1 --seq-len 8 --warmup 0 --iters 1 --json)
  OPENBLAS_CORETYPE=Haswell "$BIN" "${bench1[@]}" > "$T/bench.json" \
    && grep -q '"blas":"OpenBLAS [0-9.]*, core Haswell"' "$T/bench.json" && ok || bad "bench keeps OPENBLAS_CORETYPE: $(cat "$T/bench.json")"
  if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
    "$BIN" "${bench1[@]}" > "$T/bench.json" && grep -q '"blas":"OpenBLAS' "$T/bench.json" \
      && ! grep -q 'core Prescott' "$T/bench.json" && ok || bad "bench on an AVX2 CPU runs OpenBLAS's SSE3 core: $(cat "$T/bench.json")"
  fi
fi

# --threads fixes the cpu backend's count (capped at the usable cores) over BERTRT_NUM_THREADS and
# turns the adaptive width off; --spin is accepted; a bad BERTRT_SPIN is named.
bench1=(bench --model "$T/init.brt" --batch-size 1 --seq-len 8 --warmup 0 --iters 1 --json)
BERTRT_NUM_THREADS=2 "$BIN" "${bench1[@]}" --threads 1 --spin > "$T/bench.json" \
  && grep -q '"threads":1,"threads_active":1,"threads_adaptive":false,"threads_spin":true' "$T/bench.json" && ok || bad "bench --threads 1: $(cat "$T/bench.json")"
"$BIN" "${bench1[@]}" --threads 1000 > "$T/bench.json" \
  && grep -q "\"threads\":$(nproc)," "$T/bench.json" && grep -q '"threads_adaptive":false' "$T/bench.json" && ok || bad "bench --threads 1000: $(cat "$T/bench.json")"
expect_error "BERTRT_SPIN=maybe" "" "BERTRT_SPIN: 'maybe' is not a switch" -- env BERTRT_SPIN=maybe "$BIN" "${bench1[@]}"
expect_error "--threads 0" "" "--threads: must be ≥ 1, got 0" -- "$BIN" "${bench1[@]}" --threads 0

# --- bad input -------------------------------------------------------------------------------------
: > "$T/empty.txt"
printf '\n\n   \n' > "$T/blank.txt"
expect_error "empty corpus" "$T/o1.brt" "empty.txt" -- "$BIN" pretrain --model "$T/init.brt" --corpus "$T/empty.txt" --max-steps 1 -o "$T/o1.brt"
expect_error "blank corpus" "$T/o1.brt" "blank.txt" -- "$BIN" pretrain --model "$T/init.brt" --corpus "$T/blank.txt" --max-steps 1 -o "$T/o1.brt"
printf 'sentence\tlabel\nfine movie\n' > "$T/missing_col.tsv"
expect_error "tsv missing column" "$T/o2.brt" "missing_col.tsv.*line 2" -- "$BIN" finetune --model "$T/pt.brt" --task sst2 --train "$T/missing_col.tsv" --dev "$T/dev.tsv" --max-steps 1 -o "$T/o2.brt"
printf 'sentence\tlabel\nfine movie\tgood\n' > "$T/bad_label.tsv"
expect_error "tsv non-numeric label" "$T/o2.brt" "bad_label.tsv.*line 2" -- "$BIN" finetune --model "$T/pt.brt" --task sst2 --train "$T/dev.tsv" --dev "$T/bad_label.tsv" --max-steps 1 -o "$T/o2.brt"
# A regression dev set of one example: refused before training (pearson needs 2; the run trained
# a whole epoch, then failed on it and wrote nothing).
head -n 41 "$DATA/glue/STS-B/train.tsv" > "$T/stsb.tsv"; head -n 2 "$DATA/glue/STS-B/dev.tsv" > "$T/stsb1.tsv"
expect_error "stsb --dev of one example" "$T/o2.brt" "--dev .*stsb1.tsv: 1 example, and stsb's pearson and spearmanr need at least 2" -- \
  "$BIN" finetune --model "$T/pt.brt" --task stsb --train "$T/stsb.tsv" --dev "$T/stsb1.tsv" --max-steps 1 -o "$T/o2.brt"
grep -q "^train " "$T/stdout" && ! grep -q "finetune stsb" "$T/stderr" && ok || bad "stsb --dev of one example: trained first: $(cat "$T/stderr")"
grep -v '^\[MASK\]$' "$VOCAB" > "$T/vocab_nomask.txt"
expect_error "vocab without [MASK]" "$T/o3.brt" "vocab_nomask.txt.*\[MASK\]" -- "$BIN" init --preset tiny --vocab "$T/vocab_nomask.txt" -o "$T/o3.brt"
expect_error "max-seq-length too long" "$T/o4.brt" "max-seq-length.*512" -- "$BIN" pretrain --model "$T/init.brt" --corpus "$T/corpus.txt" --max-steps 1 --max-seq-length 1000 -o "$T/o4.brt"
expect_error "initializer range 0" "$T/o3.brt" "--initializer-range must be in \(0, 1\], got 0" -- "$BIN" init --preset tiny --vocab "$VOCAB" --initializer-range 0 -o "$T/o3.brt"
expect_ok "initializer range 0.05" "$BIN" init --preset tiny --vocab "$VOCAB" --initializer-range 0.05 -o "$T/ir.brt"
"$BIN" info "$T/ir.brt" | grep -q '"initializer_range":0.05' && ok || bad "info lacks initializer_range 0.05: $("$BIN" info "$T/ir.brt" | grep config)"
expect_error "output in missing folder" "" "-o.*no/such/dir" -- "$BIN" init --preset tiny --vocab "$VOCAB" -o "$T/no/such/dir/x.brt"
[ -e "$T/no" ] && bad "created the missing folder" || ok
expect_error "truncated model" "" "trunc.brt" -- sh -c "head -c 5000 '$T/init.brt' > '$T/trunc.brt' && '$BIN' info '$T/trunc.brt'"
expect_error "foreign model" "" "BRT1|not a bertrt" -- "$BIN" info "$VOCAB"
expect_error "fill-mask without [MASK]" "" "MASK" -- "$BIN" fill-mask --model "$T/pt.brt" "no mask here"
expect_error "fill-mask of Latin-1 text" "" "text: byte 4 \\(0xE9\\) is not UTF-8" -- "$BIN" fill-mask --model "$T/pt.brt" "$(printf 'caf\xe9 is [MASK].')"
expect_error "unknown task" "$T/o5.brt" "task" -- "$BIN" finetune --model "$T/pt.brt" --task nope --train "$T/train.tsv" --dev "$T/dev.tsv" -o "$T/o5.brt"
# eval named the model's task instead ("fine-tuned for task sst2, not nope").
# Bad inputs that were once accepted or unnamed.
expect_error "predict of a line that is not UTF-8" "" "stdin: line 2: byte 4 \(0xE9\) is not UTF-8" -- sh -c "printf 'fine\\ncaf\\351 au lait\\n' | '$BIN' predict --model '$T/sst2.brt' --json"
expect_error "predict of a zero-width space" "" "line 1: the sentence is empty \(no tokens" -- sh -c "printf '\342\200\213\\n' | '$BIN' predict --model '$T/sst2.brt'"
: > "$T/empty_valid.txt"
expect_error "pretrain --valid empty" "$T/o9.brt" "--valid .*empty_valid.txt: corpus is empty" -- "$BIN" pretrain --model "$T/init.brt" --corpus "$T/corpus.txt" --valid "$T/empty_valid.txt" --max-steps 1 -o "$T/o9.brt"
expect_error "pretrain --valid-examples -1" "$T/o9.brt" "valid-examples: must be ≥ 0, got -1" -- "$BIN" pretrain --model "$T/init.brt" --corpus "$T/corpus.txt" --valid-examples -1 --max-steps 1 -o "$T/o9.brt"
expect_error "eval --articles empty" "" "--articles: expected an article range like 0-29 or 7, got an empty value" -- "$BIN" eval --model "$T/sst2.brt" --data "$T/dev.tsv" --articles ""
{ printf '\357\273\277'; cat "$VOCAB"; } > "$T/bom_vocab.txt"
expect_ok "init with a vocab that starts with a BOM" "$BIN" init --preset tiny --vocab "$T/bom_vocab.txt" -o "$T/bom.brt"
# A NER line of only zero-width characters got a made-up tag; integer
# flags out of range exit 2 like the other usage errors (they exited 1); bench takes at most the
# model's positions by default.
expect_error "bench --batch-size 0" "" "^bertrt: error: --batch-size: must be ≥ 1, got 0$" -- "$BIN" bench --model "$T/init.brt" --batch-size 0
"$BIN" eval --model "$T/sst2.brt" --data "$T/dev.tsv" --batch-size 0 > /dev/null 2>&1; [ $? -eq 2 ] && ok || bad "eval --batch-size 0 did not exit 2"
"$BIN" pretrain --model "$T/init.brt" --corpus "$T/corpus.txt" --max-steps 1 --max-predictions-per-seq 0 -o "$T/o9.brt" > /dev/null 2>&1; [ $? -eq 2 ] && ok || bad "--max-predictions-per-seq 0 did not exit 2"
expect_error "eval --task unknown" "" "--task: unknown task 'nope' \(known: sst2, " -- "$BIN" eval --model "$T/sst2.brt" --task nope --data "$T/dev.tsv"
expect_error "unknown backend" "" "backend" -- "$BIN" fill-mask --backend gpu --model "$T/pt.brt" "[MASK]"
expect_error "eval --batch-size 0" "" "batch-size" -- "$BIN" eval --model "$T/sst2.brt" --task sst2 --data "$T/dev.tsv" --batch-size 0
expect_error "forward id that would wrap" "" "line 1.*32-bit" -- sh -c "echo '{\"input_ids\":[101,4294967397,102]}' | '$BIN' forward --model '$T/init.brt'"
# A value nested 100,000 deep is named by its kind, not dumped (that overflowed the stack: exit 139).
python3 -c "print('{\"input_ids\":' + '[' * 100000 + ']' * 100000 + '}')" > "$T/deep.jsonl"
expect_error "forward with a deeply nested id" "" "line 1.*32-bit integers \\(one sequence a line\\), but entry 0 is an array of 1 entries" -- sh -c "'$BIN' forward --model '$T/init.brt' < '$T/deep.jsonl'"
expect_error "forward id outside vocab names the line" "" "line 2.*outside the vocabulary" -- sh -c "printf '{\"input_ids\":[101,102]}\n{\"input_ids\":[101,-5]}\n' | '$BIN' forward --model '$T/init.brt'"
expect_error "learning rate inf" "$T/o6.brt" "learning-rate" -- "$BIN" pretrain --model "$T/init.brt" --corpus "$T/corpus.txt" --max-steps 1 --learning-rate inf -o "$T/o6.brt"
expect_error "unwritable output folder, before training" "" "cannot write" -- "$BIN" pretrain --model "$T/init.brt" --corpus "$T/corpus.txt" --max-steps 1 -o /proc/x.brt
expect_error "diverged run writes nothing" "$T/o7.brt" "non-finite" -- "$BIN" pretrain --model "$T/init.brt" --corpus "$T/corpus.txt" --max-steps 3 --batch-size 2 --max-seq-length 32 --learning-rate 1e30 --warmup-ratio 0 -o "$T/o7.brt"
expect_error "predict --max-seq-length above 512" "" "max-seq-length.*512" -- "$BIN" predict --model "$T/sst2.brt" --max-seq-length 600
expect_error "--eval-steps without --valid" "$T/o8.brt" "eval-steps.*--valid" -- "$BIN" pretrain --model "$T/init.brt" --corpus "$T/corpus.txt" --max-steps 1 --eval-steps 5 -o "$T/o8.brt"
# Integer flags: 0 or a negative value was taken as "the default" (or ignored) with exit 0.
expect_error "predict --max-seq-length -5" "" "max-seq-length: must be ≥ 3, got -5" -- "$BIN" predict --model "$T/sst2.brt" --max-seq-length -5
expect_error "finetune --max-steps 0" "$T/o9.brt" "max-steps: must be ≥ 1, got 0" -- "$BIN" finetune --model "$T/pt.brt" --task sst2 --train "$T/train.tsv" --max-steps 0 -o "$T/o9.brt"
# The same bounds give the same usage error (exit 2) wherever they are spelled: --epochs 0 and
# --max-seq-length 1 exited 1, pretrain --max-steps 0 wrote the model unchanged, tokenize took -1.
expect_error "finetune --epochs 0" "$T/o9.brt" "epochs: must be ≥ 1, got 0" -- "$BIN" finetune --model "$T/pt.brt" --task sst2 --train "$T/train.tsv" --epochs 0 -o "$T/o9.brt"
expect_error "finetune --max-seq-length 1" "$T/o9.brt" "max-seq-length: must be ≥ 3, got 1" -- "$BIN" finetune --model "$T/pt.brt" --task sst2 --train "$T/train.tsv" --max-steps 1 --max-seq-length 1 -o "$T/o9.brt"
expect_error "pretrain --max-steps 0" "$T/o9.brt" "max-steps: must be ≥ 1, got 0" -- "$BIN" pretrain --model "$T/init.brt" --corpus "$T/corpus.txt" --max-steps 0 -o "$T/o9.brt"
expect_error "tokenize --max-seq-length -1" "" "max-seq-length: must be 0 \(no limit\) or ≥ 3, got -1" -- sh -c "echo hi | '$BIN' tokenize --model '$T/init.brt' --max-seq-length -1"
expect_error "--device -7" "" "device: must be ≥ 0, got -7" -- "$BIN" eval --model "$T/sst2.brt" --task sst2 --data "$T/dev.tsv" --device -7
expect_error "--device with the cpu backend" "" "--device 1 selects a Vulkan device: it needs --backend vulkan" -- "$BIN" eval --model "$T/sst2.brt" --task sst2 --data "$T/dev.tsv" --device 1
expect_error "info --devices with a model" "" "reads no model: run \`bertrt info $T/sst2.brt\`" -- "$BIN" info --devices "$T/sst2.brt"
expect_error "finetune --learning-rate 1e40 (past float)" "$T/o14.brt" "learning-rate must be a finite number > 0, got inf \(or a number past float's" -- "$BIN" finetune --model "$T/pt.brt" --task sst2 --train "$T/train.tsv" --max-steps 1 --learning-rate 1e40 -o "$T/o14.brt"
# plot drew nonsense and exited 0: a string loss, records without a loss or accuracy, a lone line
# that is not JSON ("no step or eval records").
printf '{"step":1,"loss":"x"}\n' > "$T/m_str.jsonl"
expect_error "plot: a string loss" "$T/m_str.svg" "m_str.jsonl: line 1: \"loss\" must be a number" -- "$BIN" plot "$T/m_str.jsonl" -o "$T/m_str.svg"
printf '{"step":1}\n{"step":2}\n' > "$T/m_none.jsonl"
expect_error "plot: nothing to draw" "$T/m_none.svg" "its 2 records hold no loss or accuracy" -- "$BIN" plot "$T/m_none.jsonl" -o "$T/m_none.svg"
printf '{"step":1,"loss":1.5,"accuracy":2.5}\n' > "$T/m_acc.jsonl"
expect_error "plot: accuracy past 1" "$T/m_acc.svg" "line 1: \"accuracy\" must be in \[0, 1\], got 2.5" -- "$BIN" plot "$T/m_acc.jsonl" -o "$T/m_acc.svg"
printf 'garbage\n' > "$T/m_bad.jsonl"
expect_error "plot: a lone line that is not JSON" "$T/m_bad.svg" "m_bad.jsonl: line 1: not a JSON object" -- "$BIN" plot "$T/m_bad.jsonl" -o "$T/m_bad.svg"
expect_error "init --seed -1" "$T/o13.brt" "seed: expected an integer from 0 to 18446744073709551615, got '-1'" -- "$BIN" init --preset tiny --vocab "$VOCAB" --seed -1 -o "$T/o13.brt"
expect_error "forward with a misspelt key" "" "line 1: unknown key \"atention_mask\"" -- sh -c "echo '{\"input_ids\":[101,102],\"atention_mask\":[1,0]}' | '$BIN' forward --model '$T/init.brt'"
expect_error "bench --iters 0" "" "^bertrt: error: --iters: must be ≥ 1, got 0$" -- "$BIN" bench --model "$T/init.brt" --iters 0
expect_error "bertrt convert" "" "^bertrt: error: 'convert' is not a subcommand.*bertrt-convert" -- "$BIN" convert x
# --help: the usage line names the program (not the path it was run by), no help text names a
# source file, --task does not say "GLUE task" where conll2003 and squad work too, and the words
# of the field are explained where they appear.
expect_ok "--help" "$BIN" --help
head -3 "$T/stdout" | grep -q "^Usage: bertrt \[OPTIONS\] SUBCOMMAND" && ok || bad "--help usage line: $(grep -m1 Usage "$T/stdout")"
for sub in init info tokenize forward pretrain finetune eval predict fill-mask plot quantize bench; do
  "$BIN" $sub --help > "$T/help_$sub.txt" 2>&1 || bad "$sub --help failed"
  grep -q "^Usage: bertrt $sub \[OPTIONS\]" "$T/help_$sub.txt" && ok || bad "$sub --help usage line: $(grep -m1 Usage "$T/help_$sub.txt")"
  ! grep -qE "(src|tests|tools|backends)/[A-Za-z0-9_/]+\.(h|cpp|py)" "$T/help_$sub.txt" && ok || bad "$sub --help names a source file: $(grep -E '\.(h|cpp|py)' "$T/help_$sub.txt")"
done
! grep -q "GLUE task" "$T/help_eval.txt" "$T/help_predict.txt" "$T/help_quantize.txt" && ok || bad "--task help says GLUE task: $(grep 'GLUE task' "$T"/help_*.txt)"
grep -q "pieces (WordPiece tokens)" "$T/help_finetune.txt" && grep -q "doc-stride" "$T/help_finetune.txt" && grep -q "A window is" "$T/help_finetune.txt" \
  && grep -q "fully-connected (Linear)" "$T/help_bench.txt" && grep -q "OUT.resume" "$T/help_pretrain.txt" && grep -q "OUT.resume" "$T/help_finetune.txt" \
  && ok || bad "--help does not explain pieces, windows, the fc provider or OUT.resume"
expect_ok "--version" "$BIN" --version
head -1 "$T/stdout" | grep -qE '^bertrt [0-9]+\.[0-9]+\.[0-9]+( \(commit [0-9a-f]+\))?$' && grep -q '^backends: cpu' "$T/stdout" \
  && grep -q '^cpu kernels on this host: fp32 ' "$T/stdout" && ok || bad "--version: $(cat "$T/stdout")"
# An output that is also an input would overwrite it (--metrics over --train emptied the data).
cp "$T/train.tsv" "$T/train_copy.tsv"
expect_error "--metrics is --train" "$T/o10.brt" "metrics.*is also --train" -- "$BIN" finetune --model "$T/pt.brt" --task sst2 --train "$T/train_copy.tsv" --max-steps 1 --metrics "$T/train_copy.tsv" -o "$T/o10.brt"
cmp -s "$T/train.tsv" "$T/train_copy.tsv" && ok || bad "--metrics clobbered --train"
expect_error "--metrics is -o" "" "metrics.*is also -o" -- "$BIN" pretrain --model "$T/init.brt" --corpus "$T/corpus.txt" --max-steps 1 --metrics "$T/o11.brt" -o "$T/o11.brt"
cp "$T/init.brt" "$T/init_copy.brt"
expect_error "--metrics is --model" "$T/o12.brt" "metrics.*is also --model" -- "$BIN" pretrain --model "$T/init_copy.brt" --corpus "$T/corpus.txt" --max-steps 1 --metrics "$T/init_copy.brt" -o "$T/o12.brt"
cmp -s "$T/init.brt" "$T/init_copy.brt" && ok || bad "--metrics clobbered --model"
# -o never replaces the model a run starts from (a fine-tune over its pre-trained model, an int8
# file over its fp32 source).
expect_error "pretrain -o is --model" "" "-o .*init_copy.brt: is also --model" -- "$BIN" pretrain --model "$T/init_copy.brt" --corpus "$T/corpus.txt" --max-steps 1 -o "$T/init_copy.brt"
cmp -s "$T/init.brt" "$T/init_copy.brt" && ok || bad "pretrain -o replaced --model"
cp "$T/pt.brt" "$T/pt_copy.brt"
expect_error "finetune -o is --model" "" "-o .*pt_copy.brt: is also --model" -- "$BIN" finetune --model "$T/pt_copy.brt" --task sst2 --train "$T/train.tsv" --max-steps 1 -o "$T/pt_copy.brt"
cmp -s "$T/pt.brt" "$T/pt_copy.brt" && ok || bad "finetune -o replaced --model"
cp "$T/sst2.brt" "$T/sst2_copy.brt"
expect_error "quantize -o is --model" "" "-o .*sst2_copy.brt: is also --model" -- "$BIN" quantize --model "$T/sst2_copy.brt" --calibration "$T/dev.tsv" -o "$T/sst2_copy.brt"
cmp -s "$T/sst2.brt" "$T/sst2_copy.brt" && ok || bad "quantize -o replaced --model"
# Out-of-range values and flags that cannot go together exit 2 as CLI11's usage errors do (these
# exited 1).
PT1=(pretrain --model "$T/init.brt" --corpus "$T/corpus.txt" --max-steps 1 -o "$T/o14.brt")
for bad_flags in "--freeze-layers -1" "--warmup-ratio 1.5" "--weight-decay -1" "--resume $T/init.brt"; do
  # shellcheck disable=SC2086
  "$BIN" "${PT1[@]}" $bad_flags > /dev/null 2> "$T/err"
  rc=$?
  [ $rc -eq 2 ] && [ ! -e "$T/o14.brt" ] && ok || bad "pretrain $bad_flags: exit $rc (expected 2): $(cat "$T/err")"
done
"$BIN" bench --model "$T/init.brt" --seq-len 513 > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && ok || bad "bench --seq-len 513: exit $rc (expected 2)"
# The .txt files of a --corpus folder are inputs too: an output among them replaced training text.
mkdir "$T/cdir" && cp "$T/corpus.txt" "$T/cdir/a.txt" && cp "$T/corpus.txt" "$T/cdir/b.txt"
for flag in --metrics --dump-instances -o; do
  args=(--metrics "$T/m13.jsonl" --dump-instances "$T/d13.inst" -o "$T/o13.brt")
  for i in 0 2 4; do [ "${args[$i]}" = "$flag" ] && args[i + 1]=$T/cdir/b.txt; done
  expect_error "pretrain $flag in the --corpus folder" "" "$flag .*cdir/b.txt: is also a file of --corpus .*cdir" -- \
    "$BIN" pretrain --model "$T/init.brt" --corpus "$T/cdir" --max-steps 1 "${args[@]}"
  cmp -s "$T/corpus.txt" "$T/cdir/b.txt" && ok || bad "pretrain $flag replaced a file of the --corpus folder"
done
# Nor a new .txt file there: the next run over the folder read it as training text.
expect_error "pretrain --metrics a new .txt in the --corpus folder" "$T/cdir/m.txt" \
  "--metrics .*cdir/m.txt: a .txt file in --corpus folder .*cdir" -- \
  "$BIN" pretrain --model "$T/init.brt" --corpus "$T/cdir" --max-steps 1 --metrics "$T/cdir/m.txt" -o "$T/o13.brt"
# init's -o over its --vocab replaced the vocabulary with a model.
cp "$VOCAB" "$T/v.txt"
expect_error "init -o is --vocab" "" "-o .*v.txt: is also --vocab" -- "$BIN" init --preset tiny --vocab "$T/v.txt" -o "$T/v.txt"
cmp -s "$VOCAB" "$T/v.txt" && ok || bad "init -o replaced its --vocab"
# Outputs through symbolic links: checked where the write lands, before any training.
FT1=(finetune --model "$T/pt.brt" --task sst2 --train "$T/train.tsv" --max-steps 1)
ln -s loopB "$T/loopA"; ln -s loopA "$T/loopB"
expect_error "-o a link loop (an error, not an abort)" "" "-o .*loopA: cannot write: too many levels of symbolic links" -- \
  "$BIN" "${FT1[@]}" -o "$T/loopA"
ln -s missing/x.brt "$T/lmiss"
expect_error "-o a link into a missing folder" "" "lmiss \(the link's target .*missing/x.brt\): folder .* does not exist" -- \
  "$BIN" "${FT1[@]}" -o "$T/lmiss"
ln -s fq7.brt "$T/lfq7"
expect_error "--save-fake-quant and -o one file through a dangling link" "$T/fq7.brt" "lfq7: is also --save-fake-quant" -- \
  "$BIN" "${FT1[@]}" --qat int8 --save-fake-quant "$T/fq7.brt" -o "$T/lfq7"
mkfifo "$T/fifo7"; ln -s fifo7 "$T/lfifo7"
expect_error "-o a link to a FIFO" "" "lfifo7 \(the link's target .*fifo7\): is a device, FIFO or socket" -- \
  "$BIN" "${FT1[@]}" -o "$T/lfifo7"
[ -p "$T/fifo7" ] && ok || bad "the FIFO was replaced"
ln -s o13.brt "$T/l13"
expect_ok "-o through a link" "$BIN" "${FT1[@]}" -o "$T/l13"
[ -L "$T/l13" ] && [ -f "$T/o13.brt" ] && ok || bad "-o through a link: the link or its target is missing"
# A file of the wrong kind: the header error quotes at most 80 bytes, escaped (a .brt has NULs;
# a SQuAD JSON file is one 4 MB line).
expect_error "eval of a .brt as tsv" "" "expected the sst2 header.*BRT1.*\\\\x00" -- "$BIN" eval --model "$T/sst2.brt" --task sst2 --data "$T/sst2.brt"
[ "$(wc -c < "$T/stderr")" -lt 600 ] && ok || bad "header error of $(wc -c < "$T/stderr") bytes"
{ head -c 5000 /dev/zero | tr '\0' 'a'; echo; } > "$T/long.tsv"
expect_error "eval of one long line" "" "got 'a{80}\\.\\.\\. \\(5000 bytes\\)'" -- "$BIN" eval --model "$T/sst2.brt" --task sst2 --data "$T/long.tsv"
# A diverged loss (1e20) in the metrics: the flat panel's ticks never advanced (a hang).
printf '{"step":1,"loss":1e20}\n{"step":2,"loss":1e20}\n' > "$T/big.jsonl"
expect_ok "plot a flat 1e20 curve" timeout 20 "$BIN" plot "$T/big.jsonl" -o "$T/big.svg"
[ "$(wc -c < "$T/big.svg")" -lt 100000 ] && ok || bad "plot of a flat curve: $(wc -c < "$T/big.svg") bytes"
# A failed run never destroys the last good file.
cp "$T/pt.brt" "$T/keep.brt"
expect_error "failed run keeps old output" "" "empty.txt" -- "$BIN" pretrain --model "$T/init.brt" --corpus "$T/empty.txt" --max-steps 1 -o "$T/keep.brt"
cmp -s "$T/pt.brt" "$T/keep.brt" && ok || bad "the old output file changed"

echo "cli_test: $pass passed, $fail failed"
[ $fail -eq 0 ]
