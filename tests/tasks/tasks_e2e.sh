#!/usr/bin/env bash
# End-to-end checks of `bertrt finetune / eval / predict` for every task family on a
# tiny model and slices of the real data: GLUE presets (single, pair, regression), the generic TSV
# task, CoNLL-2003 NER and SQuAD v1.1; then the bad inputs — each must exit non-zero, name the
# file and line (or the question id of a one-line SQuAD JSON, or stdin's line), and leave no
# output file behind.
# Usage: tasks_e2e.sh BERTRT_BINARY DATA_DIR
set -uo pipefail
source "$(dirname "$0")/../e2e/harness.sh"
# check NAME REGEX FILE: FILE matches the extended REGEX.
check() { if grep -qE -- "$2" "$3"; then ok; else bad "$1: /$2/ not in: $(head -c 600 "$3")"; fi; }
# same_metrics NAME FINETUNE_LOG EVAL_JSON KEY: the last "dev after step" value of KEY equals the
# eval JSON's to 4 decimals (finetune's dev pass and `eval` run the same code on the same data).
same_metrics() {
  local a b
  a=$(grep '^dev after step' "$2" | tail -1 | grep -oE "$4 -?[0-9.]+" | head -1 | awk '{print $2}')
  b=$(grep -oE "\"$4\":-?[0-9.e-]+" "$3" | head -1 | cut -d: -f2)
  if [ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" 'BEGIN{exit !((a-b)^2 < 1e-8)}'; then ok
  else bad "$1: finetune dev $4 '$a' vs eval '$b'"; fi
}

# same_json NAME JSON KEY ALIAS: the JSON object has KEY and ALIAS with the same value.
same_json() {
  if /usr/bin/python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); assert sys.argv[2] in j and j[sys.argv[2]] == j[sys.argv[3]], j' \
      "$2" "$3" "$4" 2>/dev/null; then ok; else bad "$1: $3 and $4 differ or are missing in $(cat "$2")"; fi
}

"$BIN" init --preset tiny --vocab "$VOCAB" --seed 3 -o "$T/init.brt" >/dev/null || { echo "init failed"; exit 1; }
FT=(--max-steps 2 --batch-size 8 --max-seq-length 64 --learning-rate 1e-3 --eval-batch-size 16)
G=$DATA/glue
slice() { head -n "$2" "$1"; }  # header (if any) + first lines

# --- GLUE presets: every one fine-tunes, evaluates with its metrics, and predicts -----------------
slice "$G/SST-2/train.tsv" 41 > "$T/sst2_train.tsv"; slice "$G/SST-2/dev.tsv" 31 > "$T/sst2_dev.tsv"
slice "$G/CoLA/train.tsv" 40 > "$T/cola_train.tsv"; slice "$G/CoLA/dev.tsv" 30 > "$T/cola_dev.tsv"
slice "$G/MRPC/train.tsv" 41 > "$T/mrpc_train.tsv"; slice "$G/MRPC/dev.tsv" 31 > "$T/mrpc_dev.tsv"
slice "$G/STS-B/train.tsv" 41 > "$T/stsb_train.tsv"; slice "$G/STS-B/dev.tsv" 31 > "$T/stsb_dev.tsv"
slice "$G/RTE/train.tsv" 41 > "$T/rte_train.tsv"; slice "$G/RTE/dev.tsv" 31 > "$T/rte_dev.tsv"
slice "$G/QNLI/dev.tsv" 41 > "$T/qnli_train.tsv"; sed -n '1p;42,71p' "$G/QNLI/dev.tsv" > "$T/qnli_dev.tsv"
# The keys of Hugging Face evaluate's glue metric (+ run_glue.py's combined_score); ALIASES: the
# deprecated names still written beside them (JSON only), with the same value.
declare -A KEYS=([sst2]="accuracy" [cola]="matthews_correlation" [mrpc]="accuracy f1 combined_score"
                 [stsb]="pearson spearmanr combined_score" [rte]="accuracy" [qnli]="accuracy")
declare -A ALIASES=([cola]="matthews_correlation=matthews" [stsb]="spearmanr=spearman")
for t in sst2 cola mrpc stsb rte qnli; do
  grouped=(); [ $t = cola ] && grouped=(--group-by-length)
  expect_ok "finetune $t" "$BIN" finetune --model "$T/init.brt" --task $t --train "$T/${t}_train.tsv" \
    --dev "$T/${t}_dev.tsv" "${FT[@]}" "${grouped[@]}" -o "$T/$t.brt"
  cp "$T/stdout" "$T/$t.log"
  expect_ok "eval $t" "$BIN" eval --model "$T/$t.brt" --data "$T/${t}_dev.tsv" --json
  cp "$T/stdout" "$T/$t.json"
  check "eval $t json" "^\{.*\"examples\":30,.*\"task\":\"$t\"\}$" "$T/$t.json"
  for k in ${KEYS[$t]}; do
    check "eval $t has $k" "\"$k\":(-?[0-9.e-]+|null)" "$T/$t.json"
    [ "$t" = stsb ] || same_metrics "$t $k" "$T/$t.log" "$T/$t.json" "$k"
  done
  for a in ${ALIASES[$t]:-}; do same_json "$t alias ${a#*=}" "$T/$t.json" "${a%=*}" "${a#*=}"; done
done
# eval --task must name the model's task.
expect_error "eval with another task" "" "fine-tuned for task sst2, not rte" -- \
  "$BIN" eval --model "$T/sst2.brt" --task rte --data "$T/rte_dev.tsv"
# predict: the model's task decides the input.
printf 'a great movie\nawful\n' | "$BIN" predict --model "$T/sst2.brt" > "$T/p_sst2.txt"
[ "$(grep -cE '^[01]	0=[0-9.]+	1=[0-9.]+$' "$T/p_sst2.txt")" = 2 ] && ok || bad "predict sst2: $(cat "$T/p_sst2.txt")"
printf 'The cat sat.\tA cat was sitting.\n' | "$BIN" predict --model "$T/mrpc.brt" --json > "$T/p_mrpc.json"
check "predict mrpc json" '^\{"label":"[01]","probabilities":\{"0":[0-9.e-]+,"1":[0-9.e-]+\}\}$' "$T/p_mrpc.json"
printf 'The cat sat.\tA cat was sitting.\n' | "$BIN" predict --model "$T/stsb.brt" --json > "$T/p_stsb.json"
check "predict stsb score" '^\{"score":-?[0-9.e-]+\}$' "$T/p_stsb.json"
printf 'It rains.\tIt is wet.\n' | "$BIN" predict --model "$T/rte.brt" > "$T/p_rte.txt"
check "predict rte label names" '^(entailment|not_entailment)	entailment=' "$T/p_rte.txt"

# --- generic TSV: named columns, labels as spelled in the file; no header with indices; regression --
printf 'id\ttext\tlabel\n' > "$T/g_train.tsv"
for i in $(seq 1 8); do printf '%d\tgood film number %d\tpos\n%d\tbad film number %d\tneg\n%d\tsome film %d\tmeh\n' $i $i $i $i $i $i >> "$T/g_train.tsv"; done
expect_ok "finetune tsv" "$BIN" finetune --model "$T/init.brt" --task tsv --text-column text --label-column label \
  --labels neg,meh,pos --train "$T/g_train.tsv" --dev "$T/g_train.tsv" "${FT[@]}" -o "$T/g.brt"
expect_ok "eval tsv (columns from the model)" "$BIN" eval --model "$T/g.brt" --data "$T/g_train.tsv" --json
check "eval tsv json" '^\{"accuracy":[0-9.e-]+,"examples":24,.*"task":"tsv"\}$' "$T/stdout"
printf 'a good film\n' | "$BIN" predict --model "$T/g.brt" --json > "$T/p_g.json"
check "predict tsv labels" '"probabilities":\{"meh":[0-9.e-]+,"neg":[0-9.e-]+,"pos":[0-9.e-]+\}' "$T/p_g.json"
tail -n +2 "$T/g_train.tsv" | awk -F'\t' -v OFS='\t' '{print $2, $2 " again", ($3=="pos")?4.5:1.0}' > "$T/gr.tsv"
expect_ok "finetune tsv pair regression, no header" "$BIN" finetune --model "$T/init.brt" --task tsv \
  --text-column 0 --text-pair-column 1 --label-column 2 --regression --no-header \
  --train "$T/gr.tsv" --dev "$T/gr.tsv" "${FT[@]}" -o "$T/gr.brt"
expect_ok "eval tsv regression" "$BIN" eval --model "$T/gr.brt" --data "$T/gr.tsv" --json
check "eval tsv regression json" '"combined_score":.*"pearson":.*"spearmanr":' "$T/stdout"
expect_error "tsv flag with a preset" "$T/o1.brt" "--labels applies to --task tsv" -- \
  "$BIN" finetune --model "$T/init.brt" --task sst2 --labels a,b --train "$T/sst2_train.tsv" -o "$T/o1.brt"
expect_error "squad flag with a preset" "$T/o1.brt" "--doc-stride applies to --task squad" -- \
  "$BIN" finetune --model "$T/init.brt" --task sst2 --doc-stride 64 --train "$T/sst2_train.tsv" -o "$T/o1.brt"

# --- CoNLL-2003 NER --------------------------------------------------------------------------------
head -n 400 "$DATA/conll2003/eng.train" > "$T/ner_train"; head -n 300 "$DATA/conll2003/eng.testa" > "$T/ner_dev"
expect_ok "finetune conll2003" "$BIN" finetune --model "$T/init.brt" --task conll2003 --train "$T/ner_train" \
  --dev "$T/ner_dev" "${FT[@]}" -o "$T/ner.brt"
cp "$T/stdout" "$T/ner.log"
expect_ok "eval conll2003" "$BIN" eval --model "$T/ner.brt" --data "$T/ner_dev" --json
cp "$T/stdout" "$T/ner.json"
check "eval conll2003 json" '"overall_accuracy":[0-9.e-]+,"overall_f1":[0-9.e-]+,"overall_precision":[0-9.e-]+,"overall_recall":[0-9.e-]+,.*"task":"conll2003"\}$' "$T/ner.json"
check "eval conll2003 per type" '"PER":\{"f1":[0-9.e-]+,"number":[0-9]+,"precision":[0-9.e-]+,"recall":[0-9.e-]+\}' "$T/ner.json"
same_metrics "conll overall_f1" "$T/ner.log" "$T/ner.json" overall_f1
for a in overall_f1=f1 overall_precision=precision overall_recall=recall; do
  same_json "conll alias ${a#*=}" "$T/ner.json" "${a%=*}" "${a#*=}"
done
# "number" per type = the gold entities of that type in the file (IOB1 chunks counted in Python).
/usr/bin/python3 - "$T/ner_dev" "$T/ner.json" <<'PY' && ok || bad "conll per-type number: $(cat "$T/ner.json")"
import collections, json, sys
count, prev = collections.Counter(), "O"
for line in list(open(sys.argv[1])) + [""]:
    f = line.split()
    tag = f[-1] if f and not line.startswith("-DOCSTART-") else "O"
    if tag != "O" and (tag[0] == "B" or prev == "O" or prev[2:] != tag[2:]):
        count[tag[2:]] += 1
    prev = tag
j = json.load(open(sys.argv[2]))
got = {k: v["number"] for k, v in j.items() if isinstance(v, dict)}
# every gold type is listed with its count; a type only predicted is listed with 0
assert set(count) <= set(got) and all(got[k] == count.get(k, 0) for k in got), (got, count)
PY
printf 'EU rejects German call to boycott British lamb .\n\nPeter Blackburn\n' | "$BIN" predict --model "$T/ner.brt" > "$T/p_ner.txt"
[ "$(sed -n 1p "$T/p_ner.txt" | grep -oE '[^ ]+/(O|[BI]-(PER|ORG|LOC|MISC))' | wc -l)" = 9 ] && \
  [ -z "$(sed -n 2p "$T/p_ner.txt")" ] && [ "$(sed -n 3p "$T/p_ner.txt" | wc -w)" = 2 ] && ok || bad "predict ner: $(cat "$T/p_ner.txt")"
printf 'Peter  Blackburn\n' | "$BIN" predict --model "$T/ner.brt" --json > "$T/p_ner.json"
check "predict ner json" '^\{"tags":\["[A-Z-]+","[A-Z-]+"\],"words":\["Peter","Blackburn"\]\}$' "$T/p_ner.json"
# forward's token logits are [T][num_labels] (HF's shape less the batch); they were flat.
echo '{"input_ids": [101, 2848, 6679, 102]}' | "$BIN" forward --model "$T/ner.brt" > "$T/f_ner.json"
/usr/bin/python3 -c "import json,sys; l=json.load(open(sys.argv[1]))['logits']; assert len(l) == 4 and all(len(r) == 9 for r in l), l" \
  "$T/f_ner.json" && ok || bad "forward ner logits: $(head -c 300 "$T/f_ner.json")"

# --- SQuAD v1.1 --------------------------------------------------------------------------------------
# Two articles of the shared file, cut to two paragraphs each (article 0 trains, article 1 evaluates).
/usr/bin/python3 - "$DATA/squad_v1.1/dev-v1.1-articles-00-39.json" "$T/squad.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
arts = [d["data"][0], d["data"][30]]
for a in arts: a["paragraphs"] = a["paragraphs"][:2]
json.dump({"version": d.get("version", "1.1"), "data": arts}, open(sys.argv[2], "w", encoding="utf-8"))
PY
expect_ok "finetune squad" "$BIN" finetune --model "$T/init.brt" --task squad --train "$T/squad.json" \
  --train-articles 0 --dev "$T/squad.json" --dev-articles 1 --max-steps 2 --batch-size 8 \
  --max-seq-length 96 --doc-stride 32 --max-query-length 32 --learning-rate 1e-3 -o "$T/qa.brt"
cp "$T/stdout" "$T/qa.log"
! grep -q 'note: --doc-stride' "$T/stderr" && ok || bad "doc-stride note with a 61-piece window: $(grep note "$T/stderr")"
# With the default --max-query-length 64 the window after the longest question is 96 − 67 = 29
# pieces: the note names that bound (it suggested max-seq-length / 2 = 48, longer than 32).
expect_ok "finetune squad, stride above the shortest window" "$BIN" finetune --model "$T/init.brt" --task squad \
  --train "$T/squad.json" --train-articles 0 --max-steps 1 --batch-size 8 --max-seq-length 96 --doc-stride 32 -o "$T/o8.brt"
grep -q 'note: --doc-stride 32 is longer than the context window after a question of --max-query-length 64 pieces (29 pieces with --max-seq-length 96).*--doc-stride 29 or less covers every piece' "$T/stderr" \
  && ok || bad "doc-stride note: $(grep note "$T/stderr")"
expect_ok "eval squad" "$BIN" eval --model "$T/qa.brt" --data "$T/squad.json" --articles 1 --json
cp "$T/stdout" "$T/qa.json"
check "eval squad json" '^\{"exact_match":[0-9.e-]+,"examples":[0-9]+,"f1":[0-9.e-]+,"features":[0-9]+,.*"task":"squad"\}$' "$T/qa.json"
same_metrics "squad f1" "$T/qa.log" "$T/qa.json" f1
printf '{"question":"Who sat on the mat?","context":"The black cat sat on the mat."}\nWhere is Paris?\tParis is in France.\n' |
  "$BIN" predict --model "$T/qa.brt" --json > "$T/p_qa.json"
[ "$(grep -cE '^\{"answer":".+","end":[0-9]+,"probability":[0-9.e-]+,"score":-?[0-9.e-]+,"start":[0-9]+\}$' "$T/p_qa.json")" = 2 ] \
  && ok || bad "predict squad json: $(cat "$T/p_qa.json")"
# The answer is the context's text at [start, end) (characters).
/usr/bin/python3 -c '
import json, sys
ctx = ["The black cat sat on the mat.", "Paris is in France."]
for c, line in zip(ctx, open(sys.argv[1], encoding="utf-8")):
    j = json.loads(line)
    assert c[j["start"]:j["end"]] == j["answer"], (c, j)
' "$T/p_qa.json" && ok || bad "predict squad answer offsets"
printf 'Who?\tThe cat.\n' | "$BIN" predict --model "$T/qa.brt" > "$T/p_qa.txt"
expect_error "predict squad, a zero-width context" "" "line 1: the context is empty \\(no tokens" -- \
  sh -c "printf 'Who?\\t\\342\\200\\213\\n' | '$BIN' predict --model '$T/qa.brt'"
check "predict squad plain" '^.+	[0-9.]+$' "$T/p_qa.txt"

# --- bad input: each names the file and line ----------------------------------------------------------
printf 'sentence\tlabel\nfine movie\t1\nbad movie\t2\n' > "$T/label2.tsv"
expect_error "label outside the set (train)" "$T/o2.brt" "label2.tsv: line 3: .*label '2' is not one of \{0, 1\}" -- \
  "$BIN" finetune --model "$T/init.brt" --task sst2 --train "$T/label2.tsv" --max-steps 1 -o "$T/o2.brt"
expect_error "label outside the set (eval)" "" "label2.tsv: line 3: .*label '2'" -- \
  "$BIN" eval --model "$T/sst2.brt" --data "$T/label2.tsv"
printf 'id\ttext\tlabel\n1\tnice\tpos\n2\tugly\tbad\n' > "$T/glabel.tsv"
expect_error "label outside --labels" "$T/o2.brt" "glabel.tsv: line 3: .*label 'bad' is not one of \{neg, pos\}" -- \
  "$BIN" finetune --model "$T/init.brt" --task tsv --text-column text --label-column label --labels neg,pos \
  --train "$T/glabel.tsv" --max-steps 1 -o "$T/o2.brt"
printf 'EU NNP B-NP B-ORG\nrejects VBZ B-VP O\nGerman JJ B-MISC\n' > "$T/cols.conll"
expect_error "CoNLL wrong column count" "$T/o3.brt" "cols.conll: line 3: expected 4 .*columns.*got 3" -- \
  "$BIN" finetune --model "$T/init.brt" --task conll2003 --train "$T/cols.conll" --max-steps 1 -o "$T/o3.brt"
expect_error "CoNLL wrong column count (eval)" "" "cols.conll: line 3: expected 4" -- \
  "$BIN" eval --model "$T/ner.brt" --data "$T/cols.conll"
printf 'EU NNP B-NP B-ORG\nrejects VBZ B-VP B-FOO\n' > "$T/tag.conll"
expect_error "CoNLL unknown tag" "$T/o3.brt" "tag.conll: line 2: tag 'B-FOO'" -- \
  "$BIN" finetune --model "$T/init.brt" --task conll2003 --train "$T/tag.conll" --max-steps 1 -o "$T/o3.brt"
printf '{"data":[{"title":"t","paragraphs":[{"context":"The cat sat on the mat.","qas":[{"id":"q7","question":"Who sat?","answers":[{"answer_start":5,"text":"cat"}]}]}]}]}' > "$T/offset.json"
expect_error "SQuAD answer offset" "$T/o4.brt" "offset.json: question q7: answer 'cat' at offset 5 does not match the context there \('at '\)" -- \
  "$BIN" finetune --model "$T/init.brt" --task squad --train "$T/offset.json" --max-seq-length 64 --doc-stride 16 --max-query-length 16 --max-steps 1 -o "$T/o4.brt"
expect_error "SQuAD answer offset (eval)" "" "offset.json: question q7: answer 'cat' at offset 5" -- \
  "$BIN" eval --model "$T/qa.brt" --data "$T/offset.json"
printf 'sentence1\tsentence2\tlabel\tidx\nIt rains.\t0\n' > "$T/single.tsv"
expect_error "pair task given single sentences (train)" "$T/o5.brt" "single.tsv: line 2: .*got 2.*task rte takes sentence pairs" -- \
  "$BIN" finetune --model "$T/init.brt" --task rte --train "$T/single.tsv" --max-steps 1 -o "$T/o5.brt"
expect_error "pair task given single sentences (predict)" "" "stdin: line 2: task mrpc takes sentence pairs.*got 1 field" -- \
  sh -c "printf 'A cat.\tA dog.\nJust one sentence.\n' | '$BIN' predict --model '$T/mrpc.brt'"
expect_error "single task given a pair (predict)" "" "stdin: line 1: task sst2 takes single sentences" -- \
  sh -c "printf 'one\ttwo\n' | '$BIN' predict --model '$T/sst2.brt'"
head -n 2 "$G/STS-B/train.tsv" > "$T/score.tsv"
sed -n 3p "$G/STS-B/train.tsv" | awk -F'\t' -v OFS='\t' '{$10="high"; print}' >> "$T/score.tsv"
expect_error "regression given a non-number" "$T/o6.brt" "score.tsv: line 3: column 'score': expected a number.*'high'" -- \
  "$BIN" finetune --model "$T/init.brt" --task stsb --train "$T/score.tsv" --max-steps 1 -o "$T/o6.brt"
printf 'a\tb\tnot-a-number\n' > "$T/gr_bad.tsv"
expect_error "tsv regression given a non-number" "" "gr_bad.tsv: line 1: .*expected a number" -- \
  "$BIN" eval --model "$T/gr.brt" --data "$T/gr_bad.tsv"
expect_error "predict QA bad line" "" "stdin: line 1: expected a JSON object" -- \
  sh -c "printf 'no tab here\n' | '$BIN' predict --model '$T/qa.brt'"
expect_error "predict QA bad JSON" "" "stdin: line 1: field \"context\" is missing" -- \
  sh -c "printf '{\"question\": \"Who?\"}\n' | '$BIN' predict --model '$T/qa.brt'"
# Keys as forward checks them: an unknown one was ignored, a repeated one decided by the parser.
expect_error "predict QA unknown key" "" "stdin: line 1: unknown key \"extra\" \(expected question, context\)" -- \
  sh -c "printf '{\"question\": \"Who?\", \"context\": \"Bob.\", \"extra\": 1}\n' | '$BIN' predict --model '$T/qa.brt'"
# Whitespace-only lines are skipped as blank ones are (the first said "not valid JSON").
printf '\xef\xbb\xbf\n \r \n\t\r\r\n{"input_ids": [101, 2848, 102]}\n\n   \n' | "$BIN" forward --model "$T/ner.brt" > "$T/f_ws.json" 2> "$T/err" \
  && [ "$(wc -l < "$T/f_ws.json")" -eq 1 ] && ok || bad "forward with whitespace lines: $(cat "$T/err")"
expect_error "forward repeated key" "" "stdin: line 1: key \"input_ids\" appears twice" -- \
  sh -c "printf '{\"input_ids\": [101, 102], \"input_ids\": [101]}\n' | '$BIN' forward --model '$T/qa.brt'"
expect_error "forward number out of range" "" "stdin: line 1: not valid JSON: number overflow" -- \
  sh -c "printf '{\"input_ids\": [101, 1e400, 102]}\n' | '$BIN' forward --model '$T/qa.brt'"
expect_error "predict with a pre-trained model" "" "no fine-tuning head" -- \
  sh -c "echo hi | '$BIN' predict --model '$T/init.brt'"
expect_error "bad article range" "$T/o7.brt" "--train-articles.*'3-1'" -- \
  "$BIN" finetune --model "$T/init.brt" --task squad --train "$T/squad.json" --train-articles 3-1 -o "$T/o7.brt"
expect_error "article range beyond the file" "$T/o7.brt" "beyond the 2 articles" -- \
  "$BIN" finetune --model "$T/init.brt" --task squad --train "$T/squad.json" --train-articles 0-5 --max-seq-length 96 --doc-stride 32 -o "$T/o7.brt"

echo "tasks_e2e: $pass passed, $fail failed"
[ $fail -eq 0 ]
