#!/usr/bin/env bash
# End-to-end checks of `bertrt-convert`: convert, inspect and export tiny HF checkpoints made by
# make_hf_models.py; then malformed inputs and bad usage — errors exit 1 with one line naming the
# file/field and leave no output behind, usage errors exit 2.
# Usage: convert_test.sh BERTRT_CONVERT BERTRT MAKE_HF_MODELS_PY
set -uo pipefail
CONV=$1 BERTRT=$2 MAKE=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
/usr/bin/python3 "$MAKE" --out "$T/m" >/dev/null
rc=$?
if [ $rc -eq 77 ]; then
  if [ "${BERTRT_REQUIRE_DATA:-0}" = 1 ]; then echo "python3-torch missing"; exit 1; fi
  echo "SKIP: python3-torch missing"; exit 0
fi
[ $rc -eq 0 ] || { echo "make_hf_models.py failed ($rc)"; exit 1; }
M=$T/m
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect_error NAME RC OUTFILE PATTERN -- CMD...: exit RC, one stderr line matching PATTERN, OUTFILE absent.
expect_error() {
  local name=$1 want=$2 out=$3 pattern=$4; shift 5
  "$@" >"$T/stdout" 2>"$T/stderr" </dev/null
  local rc=$?
  if [ $rc -ne "$want" ]; then bad "$name: exit $rc, expected $want: $(head -3 "$T/stderr")"; return; fi
  if ! grep -qE -- "$pattern" "$T/stderr"; then bad "$name: stderr lacks /$pattern/: $(cat "$T/stderr")"; return; fi
  if [ "$want" = 1 ] && [ "$(grep -c 'error' "$T/stderr")" != 1 ]; then bad "$name: not one error line: $(cat "$T/stderr")"; return; fi
  if [ -n "$out" ] && [ -e "$out" ]; then bad "$name: left $out behind"; return; fi
  ok
}
expect_ok() {
  local name=$1; shift
  if "$@" >"$T/stdout" 2>"$T/stderr"; then ok; else bad "$name: exit $?: $(tail -3 "$T/stderr")"; fi
}

# --- happy path ------------------------------------------------------------------------------------
expect_ok convert "$CONV" "$M/st_pretraining_f32" -o "$T/a.brt"
grep -q "wrote $T/a.brt: BertForPreTraining" "$T/stdout" || bad "summary line: $(cat "$T/stdout")"
expect_ok info "$BERTRT" info "$T/a.brt"
expect_ok forward bash -c "echo '{\"input_ids\": [2, 7, 9, 10, 5, 11, 3]}' | '$BERTRT' forward --model '$T/a.brt'"
expect_ok convert-f16 "$CONV" "$M/st_pretraining_f32/model.safetensors" -o "$T/h.brt" --dtype f16
expect_ok inspect-brt "$CONV" --inspect "$T/h.brt"
grep -qE '^bert.embeddings.word_embeddings.weight +F16 +\[43, 36\] +3096$' "$T/stdout" || bad "inspect .brt: $(head -3 "$T/stdout")"
expect_ok inspect-folder "$CONV" --inspect "$M/st_sharded" --json
/usr/bin/python3 -c "import json,sys; j=json.load(open('$T/stdout')); assert j['format']=='safetensors' and len(j['tensors'])==46, (j['format'], len(j['tensors']))" \
  || bad "inspect --json of a sharded folder"
expect_ok inspect-bin "$CONV" --inspect "$M/bin_zip_mlm/pytorch_model.bin"
grep -q "bert.embeddings.position_ids" "$T/stdout" || bad "inspect .bin lists position_ids"
expect_ok to-hf "$CONV" --to hf "$T/a.brt" -o "$T/hf"
for f in config.json model.safetensors vocab.txt tokenizer_config.json special_tokens_map.json; do
  [ -f "$T/hf/$f" ] || bad "to-hf: $f missing"
done
# float32 config values exported as config.json had them (make_hf_models.py writes 1e-12, 0.02).
for kv in '"layer_norm_eps": 1e-12' '"initializer_range": 0.02'; do
  grep -qF "$kv" "$T/hf/config.json" || bad "to-hf config.json lacks $kv: $(grep -E 'eps|range' "$T/hf/config.json")"
done
# The exported folder converts back to the same tensors.
expect_ok reconvert "$CONV" "$T/hf" -o "$T/b.brt"
"$CONV" --inspect "$T/a.brt" | sed '$d' > "$T/a.txt"; "$CONV" --inspect "$T/b.brt" | sed '$d' > "$T/b.txt"
cmp -s "$T/a.txt" "$T/b.txt" || bad "reconverted tensors differ"

# A BertForPreTraining config whose weights lack the NSP head: converted with one warning naming it.
expect_ok convert-no-nsp "$CONV" "$M/st_pretraining_no_nsp" -o "$T/nonsp.brt"
grep -q "warning: .*BertForPreTraining has the NSP head (cls.seq_relationship\.\*)" "$T/stderr" \
  || bad "no-NSP warning: $(cat "$T/stderr")"
grep -q "wrote $T/nonsp.brt: BertForMaskedLM" "$T/stdout" || bad "no-NSP summary: $(cat "$T/stdout")"
# run_squad.py's TF1 checkpoint: the span head, back to HF as qa_outputs.
expect_ok convert-tf-squad "$CONV" "$M/tf1_squad" -o "$T/squad.brt"
grep -q "wrote $T/squad.brt: BertForQuestionAnswering (tf1-bundle" "$T/stdout" || bad "TF squad summary: $(cat "$T/stdout")"
expect_ok tf-squad-to-hf "$CONV" --to hf "$T/squad.brt" -o "$T/squad_hf"
"$CONV" --inspect "$T/squad_hf" | grep -qE '^qa_outputs.weight +F32 +\[2, 36\]' || bad "TF squad export lacks qa_outputs.weight"

# TF1: the Google BERT-base index without its 0.4 GB shard lists and names the missing shard.
TFI=$(dirname "$MAKE")/../../../shared/ckpt/tf1-index/google-chinese_L-12_H-768_A-12
if [ -d "$TFI" ]; then
  expect_ok inspect-tf-index "$CONV" --inspect "$TFI"
  grep -q "tf1-bundle, 206 tensors" "$T/stdout" || bad "inspect TF index: $(tail -1 "$T/stdout")"
  expect_error tf-missing-shard 1 "$T/x.brt" "data-00000-of-00001: missing data shard" -- "$CONV" "$TFI" -o "$T/x.brt"
fi

# A converted classifier quantizes for the GLUE task its config names (finetuning_task "stsb"),
# and refuses another (an sst2 --task would calibrate on the wrong data).
expect_ok convert-regression "$CONV" "$M/st_regression" -o "$T/stsb.brt"
printf 'index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n' > "$T/stsb.tsv"
printf '0\tmain-captions\tMSRvid\t2012test\t0001\tnone\tnone\tA plane is taking off.\tAn air plane is taking off.\t5.000\n' >> "$T/stsb.tsv"
expect_ok quantize-converted "$BERTRT" quantize --model "$T/stsb.brt" --task stsb --calibration "$T/stsb.tsv" --max-seq-length 24 -o "$T/stsb_q.brt"
# Its max_position_embeddings is 24: predict and finetune without --max-seq-length take 24, not
# the task's default 128 (refused: "--max-seq-length 128 exceeds ... 24", a flag never given).
expect_ok predict-converted-default-length sh -c "printf 'A plane.\tAn air plane.\n' | '$BERTRT' predict --model '$T/stsb.brt'"
expect_ok finetune-default-length "$BERTRT" finetune --model "$T/stsb.brt" --task stsb --train "$T/stsb.tsv" --max-steps 1 --batch-size 1 -o "$T/stsb_ft.brt"
grep -q "note: --max-seq-length 24 (the model's max_position_embeddings" "$T/stderr" && ok || bad "finetune-default-length: $(cat "$T/stderr")"
# The source's class is named as the source's: the fine-tuned model's is its new head's.
"$BERTRT" info "$T/stsb_ft.brt" > "$T/info_ft.txt"
grep -q "source_architecture = BertForSequenceClassification" "$T/info_ft.txt" && ! grep -q "metadata   architecture =" "$T/info_ft.txt" && ok || bad "finetuned metadata: $(grep metadata "$T/info_ft.txt")"
"$BERTRT" info "$T/stsb_q.brt" > "$T/info_q.txt"  # quantize renames it too
grep -q "source_architecture = BertForSequenceClassification" "$T/info_q.txt" && ! grep -q "metadata   architecture =" "$T/info_q.txt" && ok || bad "quantized metadata: $(grep metadata "$T/info_q.txt")"
expect_ok bench-default-length "$BERTRT" bench --model "$T/stsb.brt" --iters 1 --warmup 0
grep -q "T=24" "$T/stdout" && ok || bad "bench-default-length: $(cat "$T/stdout")"
expect_error quantize-converted-other-task 1 "$T/sst2_q.brt" "stsb.brt: the model was fine-tuned for task stsb, not sst2" -- "$BERTRT" quantize --model "$T/stsb.brt" --task sst2 --calibration "$T/stsb.tsv" -o "$T/sst2_q.brt"

# A converted classifier whose config names no GLUE task and whose id2label is HF's LABEL_0,
# LABEL_1: eval takes the task from --task and its labels by index (it refused it: "fine-tune it
# again"), without a note on every run; predict needs no task (it printed 0/1 with a warning):
# with --task sst2 it names the classes as the task does, without it as the head does. One with
# its own names (NEGATIVE, POSITIVE) predicts with those.
"$BERTRT" init --preset tiny --vocab "$M/st_seqcls/vocab.txt" --seed 1 -o "$T/ti.brt" > /dev/null
printf 'sentence\tlabel\nit is a good film\t1\nit is a bad film\t0\n' > "$T/s.tsv"
"$BERTRT" finetune --model "$T/ti.brt" --task sst2 --train "$T/s.tsv" --max-steps 1 --batch-size 2 \
  -o "$T/ti_sst2.brt" > /dev/null 2>&1 && "$CONV" "$T/ti_sst2.brt" --to hf -o "$T/ti_hf" > /dev/null \
  && /usr/bin/python3 - "$T/ti_hf/config.json" <<'EOF2' && "$CONV" "$T/ti_hf" -o "$T/ti_conv.brt" > /dev/null 2> "$T/conv_warn" && ok || bad "converted sst2 model: setup"
import json, sys
c = json.load(open(sys.argv[1]))
c.pop("finetuning_task", None)
c["id2label"], c["label2id"] = {"0": "LABEL_0", "1": "LABEL_1"}, {"LABEL_0": 0, "LABEL_1": 1}
json.dump(c, open(sys.argv[1], "w"))
EOF2
# Its bertrt_task record (written by the export) no longer describes the relabelled head: dropped.
grep -q "bertrt_task was not kept: it (sst2, labels 0, 1) does not describe the head (sequence_classification, labels LABEL_0, LABEL_1)" "$T/conv_warn" \
  && ok || bad "stale bertrt_task: $(cat "$T/conv_warn")"
expect_ok eval-converted "$BERTRT" eval --model "$T/ti_conv.brt" --task sst2 --data "$T/s.tsv"
[ ! -s "$T/stderr" ] && ok || bad "eval-converted writes to stderr: $(cat "$T/stderr")"
expect_ok predict-converted sh -c "echo 'a good film' | '$BERTRT' predict --model '$T/ti_conv.brt' --task sst2"
grep -qE '^(negative|positive)	negative=[0-9.]+	positive=[0-9.]+$' "$T/stdout" && [ ! -s "$T/stderr" ] && ok || bad "predict-converted: $(cat "$T/stdout" "$T/stderr")"
expect_ok predict-converted-without-task sh -c "echo 'a good film' | '$BERTRT' predict --model '$T/ti_conv.brt'"
grep -qE '^LABEL_[01]	LABEL_0=[0-9.]+	LABEL_1=[0-9.]+$' "$T/stdout" && [ ! -s "$T/stderr" ] && ok || bad "predict-converted-without-task: $(cat "$T/stdout" "$T/stderr")"
expect_error eval-converted-without-task 1 "" "name its task with --task" -- "$BERTRT" eval --model "$T/ti_conv.brt" --data "$T/s.tsv"
cp -r "$T/ti_hf" "$T/np_hf" && /usr/bin/python3 - "$T/np_hf/config.json" <<'EOF2' && "$CONV" -q "$T/np_hf" -o "$T/np.brt" 2> /dev/null && ok || bad "NEGATIVE/POSITIVE classifier: setup"
import json, sys
c = json.load(open(sys.argv[1]))
c.pop("finetuning_task", None), c.pop("bertrt_task", None)
c["id2label"], c["label2id"] = {"0": "NEGATIVE", "1": "POSITIVE"}, {"NEGATIVE": 0, "POSITIVE": 1}
json.dump(c, open(sys.argv[1], "w"))
EOF2
expect_ok predict-named-labels sh -c "printf 'a good film\tit is\n\na bad film\n' | '$BERTRT' predict --model '$T/np.brt' --json"
/usr/bin/python3 - "$T/stdout" <<'EOF2' && [ "$(cat "$T/stderr")" = "bertrt: note: skipped 1 blank line of stdin (line 2)" ] && ok || bad "predict-named-labels: $(cat "$T/stdout" "$T/stderr")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["line"] for r in rows] == [1, 3], rows
assert rows[0]["text"] == "a good film" and rows[0]["text_pair"] == "it is" and "text_pair" not in rows[1], rows
assert all(r["label"] in ("NEGATIVE", "POSITIVE") and list(r["probabilities"]) == ["NEGATIVE", "POSITIVE"] for r in rows), rows
EOF2
expect_ok eval-named-labels "$BERTRT" eval --model "$T/np.brt" --task sst2 --data "$T/s.tsv"
[ ! -s "$T/stderr" ] && ok || bad "eval-named-labels writes to stderr: $(cat "$T/stderr")"
# A converted NER head whose id2label lists conll2003's tags in another order (as NER checkpoints
# do): predict names each token's tag by the head's own name (it renamed them by index). The
# export's classifier rows are permuted with their names, so the same model must give the same
# tags. A sequence head with the task's labels in another order is refused, not relabelled.
printf -- '-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\nGerman JJ B-NP B-MISC\ncall NN I-NP O\n\nPeter NNP B-NP B-PER\nBlackburn NNP I-NP I-PER\n\n' > "$T/c.conll"
"$BERTRT" finetune --model "$T/ti.brt" --task conll2003 --train "$T/c.conll" --max-steps 2 --batch-size 2 \
  --max-seq-length 16 --learning-rate 1e-2 -o "$T/ti_ner.brt" > /dev/null 2>&1 \
  && "$CONV" "$T/ti_ner.brt" --to hf -o "$T/ner_hf" > /dev/null \
  && /usr/bin/python3 - "$T/ner_hf" <<'EOF2' && "$CONV" "$T/ner_hf" -o "$T/ner_perm.brt" > /dev/null 2>&1 && ok || bad "permuted NER head: setup"
import json, struct, sys
d = sys.argv[1]
c = json.load(open(d + "/config.json"))
old = [c["id2label"][str(i)] for i in range(len(c["id2label"]))]
perm = [8, 0, 5, 3, 1, 7, 2, 6, 4]  # new row i holds old row perm[i]
c["id2label"] = {str(i): old[p] for i, p in enumerate(perm)}
c["label2id"] = {v: int(k) for k, v in c["id2label"].items()}
c.pop("finetuning_task", None)
json.dump(c, open(d + "/config.json", "w"))
raw = open(d + "/model.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head, data = json.loads(raw[8:8 + n]), bytearray(raw[8 + n:])
for name in ("classifier.weight", "classifier.bias"):
    t = head[name]
    assert t["dtype"] == "F32", t
    b, e = t["data_offsets"]
    row = (e - b) // len(perm)
    rows = [bytes(data[b + p * row:b + (p + 1) * row]) for p in perm]
    data[b:e] = b"".join(rows)
open(d + "/model.safetensors", "wb").write(raw[:8 + n] + bytes(data))
EOF2
# The NER export keeps bertrt's own pooler (a pretrain with NSP trains it; dropped, it came back
# random), though transformers' BertForTokenClassification has none.
grep -aq '"bert.pooler.dense.weight"' "$T/ner_hf/model.safetensors" && ok || bad "NER export lacks bertrt's pooler"
# --to hf -o: "new/" is the folder new (its parent was taken to be new itself); a dangling link's
# target folder is created, as files are written through links; a loop is one error line.
expect_ok hf-o-trailing-slash "$CONV" --to hf "$T/ti_ner.brt" -o "$T/hf_slash/"
[ -f "$T/hf_slash/config.json" ] && ok || bad "hf-o-trailing-slash: no config.json"
ln -s hf_dangling_target "$T/hf_dangling"
expect_ok hf-o-dangling-link "$CONV" --to hf "$T/ti_ner.brt" -o "$T/hf_dangling"
[ -f "$T/hf_dangling_target/config.json" ] && [ -L "$T/hf_dangling" ] && ok || bad "hf-o-dangling-link: not written through the link"
ln -s hfloopB "$T/hfloopA"; ln -s hfloopA "$T/hfloopB"
expect_error hf-o-loop 1 "" "hfloopA: cannot write: too many levels of symbolic links" -- "$CONV" --to hf "$T/ti_ner.brt" -o "$T/hfloopA"
echo "EU rejects German call by Peter Blackburn" > "$T/ner_in.txt"
"$BERTRT" predict --model "$T/ti_ner.brt" --json < "$T/ner_in.txt" > "$T/ner_a.json" 2>/dev/null
expect_ok predict-ner-permuted sh -c "'$BERTRT' predict --model '$T/ner_perm.brt' --task conll2003 --json < '$T/ner_in.txt'"
cmp -s "$T/ner_a.json" "$T/stdout" && ok || bad "permuted NER head: tags $(cat "$T/stdout"), the model's own $(cat "$T/ner_a.json")"
if ! grep -q "by index" "$T/stderr"; then ok; else bad "permuted NER head read by index: $(cat "$T/stderr")"; fi
expect_error ner-zero-width 1 "" "line 1: no tokens" -- sh -c "printf '\342\200\213\\n' | '$BERTRT' predict --model '$T/ner_perm.brt' --task conll2003"
# finetune keeps the permuted head by name too (it relabelled its rows by index).
"$BERTRT" finetune --model "$T/ner_perm.brt" --task conll2003 --train "$T/c.conll" --max-steps 1 --batch-size 2 \
  --max-seq-length 16 --learning-rate 1e-9 -o "$T/ner_perm_ft.brt" > /dev/null 2>&1 \
  && "$BERTRT" predict --model "$T/ner_perm_ft.brt" --json < "$T/ner_in.txt" > "$T/ner_b.json" 2>/dev/null \
  && cmp -s "$T/ner_a.json" "$T/ner_b.json" && ok || bad "finetune of a permuted NER head: $(cat "$T/ner_b.json")"
/usr/bin/python3 -c "import json; p='$T/ti_hf/config.json'; c=json.load(open(p)); c['id2label']={'0':'1','1':'0'}; c['label2id']={'1':0,'0':1}; json.dump(c, open(p,'w'))" \
  && "$CONV" "$T/ti_hf" -o "$T/ti_swap.brt" > /dev/null 2>&1 && ok || bad "swapped sst2 head: setup"
expect_error predict-swapped-glue 1 "" "labels 1, 0 are task sst2's in another order \(0, 1\)" -- sh -c "echo 'a good film' | '$BERTRT' predict --model '$T/ti_swap.brt' --task sst2"
# A fine-tuned model's task record survives a round trip through HF (config.json's bertrt_task):
# back from HF it predicted at the task's default 128 pieces, not its fine-tuning length 12.
"$BERTRT" finetune --model "$T/ti.brt" --task sst2 --train "$T/s.tsv" --max-steps 1 --batch-size 2 \
  --max-seq-length 12 -o "$T/ti12.brt" > /dev/null 2>&1 && "$CONV" --to hf "$T/ti12.brt" -o "$T/ti12_hf" > /dev/null \
  && "$CONV" "$T/ti12_hf" -o "$T/ti12_rt.brt" > /dev/null && ok || bad "round trip of a fine-tuned model: setup"
"$BERTRT" info "$T/ti12_rt.brt" > "$T/info12.txt" && grep -q 'task = {.*"max_seq_length":12,"name":"sst2"' "$T/info12.txt" \
  && ok || bad "round trip lost the task record: $(grep task "$T/info12.txt")"
for i in 1 2 3 4 5 6; do printf 'it is a good film and a bad film '; done > "$T/long.txt"; echo >> "$T/long.txt"
"$BERTRT" predict --model "$T/ti12.brt" --json < "$T/long.txt" > "$T/p12.json" 2>&1
"$BERTRT" predict --model "$T/ti12_rt.brt" --json < "$T/long.txt" > "$T/p12rt.json" 2>&1
cmp -s "$T/p12.json" "$T/p12rt.json" && ok || bad "round trip predicts otherwise: $(cat "$T/p12.json") vs $(cat "$T/p12rt.json")"
# A record edited in config.json is dropped with its reason (it was kept, and eval then failed on
# a --max-seq-length or a tsv column never given); the model converts and runs all the same.
for kv in "max_seq_length=1000:its max_seq_length 1000 is outside \[3, max_position_embeddings 512\]" \
          "pair=True:its head kind, labels or pair flag are not task sst2's" \
          "name='cola':it names task cola, finetuning_task sst2" \
          "name='foo':'foo' is not a task bertrt knows"; do
  key=${kv%%=*}; rest=${kv#*=}; val=${rest%%:*}; msg=${rest#*:}
  rm -rf "$T/rec"; cp -r "$T/ti12_hf" "$T/rec"
  /usr/bin/python3 -c "import json; p='$T/rec/config.json'; c=json.load(open(p)); c['bertrt_task']['$key']=$val; json.dump(c, open(p,'w'))"
  expect_ok "edited bertrt_task $key" "$CONV" "$T/rec" -o "$T/rec.brt"
  grep -qE "bertrt_task was not kept: $msg" "$T/stderr" && ok || bad "edited bertrt_task $key: $(cat "$T/stderr")"
  expect_ok "predict after an edited bertrt_task $key" sh -c "'$BERTRT' predict --model '$T/rec.brt' < '$T/long.txt'"
done
# A converted span model (run_squad.py's, above) after a round trip: predict and forward take it
# (predict refused every non-GLUE task: "name its GLUE task"; forward printed no span logits).
expect_ok squad-reconvert "$CONV" "$T/squad_hf" -o "$T/squad_rt.brt"
expect_ok predict-converted-squad sh -c "echo '{\"question\": \"who went?\", \"context\": \"Bob went home.\"}' | '$BERTRT' predict --model '$T/squad_rt.brt' --task squad --max-seq-length 24"
expect_ok forward-span-logits sh -c "echo '{\"input_ids\": [2, 7, 9, 3]}' | '$BERTRT' forward --model '$T/squad_rt.brt'"
/usr/bin/python3 -c "import json,sys; d=json.load(open('$T/stdout')); assert len(d['start_logits']) == len(d['end_logits']) == 4" \
  && ok || bad "forward of a span model: no start_logits/end_logits [T]: $(head -c 200 "$T/stdout")"
# An int8 file exports as fp32 without its activation ranges (*.input_observer, which no HF class
# has and which the converter refused on the way back), with one warning saying so.
expect_ok quantized-to-hf "$CONV" --to hf "$T/stsb_q.brt" -o "$T/q_hf"
grep -q "activation ranges of its quantization (\*.input_observer) are not exported" "$T/stderr" \
  && ok || bad "quantized-to-hf warning: $(cat "$T/stderr")"
# One line for the int8 tensors written as F32 (it was one per tensor), with their count.
[ "$(grep -c 'dequantized' "$T/stderr")" = 1 ] && grep -qE "^bertrt-convert: warning: .*stsb_q.brt: [0-9]+ i8 tensors written dequantized as F32 .*and [0-9]+ more$" "$T/stderr" \
  && [ "$(wc -l < "$T/stderr")" -le 3 ] && ok || bad "quantized-to-hf: one line for the dequantized tensors: $(cat "$T/stderr")"
expect_ok quantized-hf-reconvert "$CONV" "$T/q_hf" -o "$T/q_rt.brt"
# A failed --to hf into an existing folder replaces nothing (a folder where vocab.txt goes made the
# last renames fail after model.safetensors had been replaced: stsb weights beside an sst2 config).
expect_ok hf-keep "$CONV" --to hf "$T/ti_sst2.brt" -o "$T/hfkeep"
rm "$T/hfkeep/vocab.txt" && mkdir "$T/hfkeep/vocab.txt"
sum_before=$(cat "$T/hfkeep/model.safetensors" "$T/hfkeep/config.json" | md5sum)
expect_error hf-no-mix 1 "" "hfkeep/vocab.txt: is a folder, expected a file path" -- "$CONV" --to hf "$T/stsb.brt" -o "$T/hfkeep"
[ "$(cat "$T/hfkeep/model.safetensors" "$T/hfkeep/config.json" | md5sum)" = "$sum_before" ] && ok || bad "a failed --to hf changed the folder"
expect_error hf-parent-file 1 "" "cannot create the folder: .*ti_sst2.brt is a file, not a folder" -- "$CONV" --to hf "$T/stsb.brt" -o "$T/ti_sst2.brt/sub"
expect_error hf-vocab 2 "" "--vocab applies to conversions into .brt" -- "$CONV" --to hf "$T/ti_sst2.brt" -o "$T/hfv" --vocab "$M/st_seqcls/vocab.txt"

# --- malformed inputs: exit 1, one line naming the file and field, no output ------------------------
cp -r "$M/st_pretraining_f32" "$T/noconfig"; rm "$T/noconfig/config.json"
expect_error missing-config 1 "$T/x.brt" "noconfig: config.json is missing" -- "$CONV" "$T/noconfig" -o "$T/x.brt"
cp -r "$M/st_pretraining_f32" "$T/nohidden"
/usr/bin/python3 -c "import json; p='$T/nohidden/config.json'; c=json.load(open(p)); del c['hidden_size']; json.dump(c, open(p,'w'))"
expect_error no-hidden-size 1 "$T/x.brt" "config.json: field 'hidden_size' is missing" -- "$CONV" "$T/nohidden" -o "$T/x.brt"
for kv in "hidden_size=2**40:field 'hidden_size' = 1099511627776 is outside the 32-bit range" \
          "initializer_range=-1:field 'initializer_range' must be a positive number, got -1"; do
  key=${kv%%=*}; rest=${kv#*=}; val=${rest%%:*}; msg=${rest#*:}
  rm -rf "$T/cfg_$key"; cp -r "$M/st_pretraining_f32" "$T/cfg_$key"
  /usr/bin/python3 -c "import json; p='$T/cfg_$key/config.json'; c=json.load(open(p)); c['$key']=$val; json.dump(c, open(p,'w'))"
  expect_error "config-$key" 1 "$T/x.brt" "config.json: $msg" -- "$CONV" "$T/cfg_$key" -o "$T/x.brt"
done
cp -r "$M/st_pretraining_f32" "$T/shape"
/usr/bin/python3 -c "import json; p='$T/shape/config.json'; c=json.load(open(p)); c['vocab_size']=50; json.dump(c, open(p,'w'))"
expect_error shape-mismatch 1 "$T/x.brt" "word_embeddings.weight' has shape \[43, 36\], but .*config.json implies \[50, 36\]" -- "$CONV" "$T/shape" -o "$T/x.brt"
expect_error untied-decoder 1 "$T/x.brt" "cls.predictions.decoder.weight' differs" -- "$CONV" "$M/bad_decoder" -o "$T/x.brt"
cp -r "$M/st_pretraining_f32" "$T/trunc"; truncate -s 5000 "$T/trunc/model.safetensors"
expect_error truncated 1 "$T/x.brt" "model.safetensors" -- "$CONV" "$T/trunc" -o "$T/x.brt"
expect_error no-input 1 "$T/x.brt" "nothing-here: no such file or folder" -- "$CONV" "$T/nothing-here" -o "$T/x.brt"
{ printf '\357\273\277'; cat "$M/st_seqcls/vocab.txt"; } > "$T/bom_vocab.txt"
expect_ok convert-bom-vocab "$CONV" "$M/st_seqcls" --vocab "$T/bom_vocab.txt" -o "$T/bomv.brt"
# A .brt as the input is re-saved (with checksums: what a file an older bertrt wrote needs); one
# this build wrote comes back byte for byte. --dtype and --vocab apply to checkpoints only.
expect_ok brt-resaved "$CONV" "$T/a.brt" -o "$T/x.brt"
cmp -s "$T/a.brt" "$T/x.brt" && ok || bad "a re-saved .brt differs from the file it was read from"
rm -f "$T/x.brt"
expect_error brt-resave-dtype 2 "$T/x.brt" "re-saving a .brt keeps its dtypes and vocabulary" -- "$CONV" "$T/a.brt" --dtype f16 -o "$T/x.brt"
expect_error to-hf-not-brt 1 "" "model.safetensors" -- "$CONV" --to hf "$M/st_pretraining_f32/model.safetensors" -o "$T/hf2"
# An existing output survives a failed conversion untouched.
cp "$T/a.brt" "$T/keep.brt"
expect_error keep-old 1 "" "differs" -- "$CONV" "$M/bad_decoder" -o "$T/keep.brt"
cmp -s "$T/a.brt" "$T/keep.brt" || bad "failed conversion changed an existing -o"

# --- unwritable -o: found before any work -----------------------------------------------------------
expect_error o-missing-folder 1 "" "-o $T/no/such/x.brt: folder .* does not exist" -- "$CONV" "$M/st_pretraining_f32" -o "$T/no/such/x.brt"
# -o through symbolic links: checked where the write lands; a loop is one error line.
ln -s loopB "$T/loopA"; ln -s loopA "$T/loopB"; ln -s no/such/y.brt "$T/lno"
expect_error o-link-loop 1 "" "-o .*loopA: cannot write: too many levels of symbolic links" -- "$CONV" "$M/st_pretraining_f32" -o "$T/loopA"
expect_error o-link-missing-folder 1 "" "-o .*lno \\(the link's target .*no/such/y.brt\\): folder .*no/such' does not exist" -- "$CONV" "$M/st_pretraining_f32" -o "$T/lno"
expect_error o-is-folder 1 "" "is a folder" -- "$CONV" "$M/st_pretraining_f32" -o "$T"
expect_error hf-o-parent 1 "" "does not exist" -- "$CONV" --to hf "$T/a.brt" -o "$T/no/such/dir"
# -o naming a file of the input (a shell slip) overwrote the checkpoint and exited 0.
cp -r "$M/st_pretraining_f32" "$T/own"
expect_error o-is-the-input 1 "" "-o $T/own/model.safetensors: exists and is not a .brt model file" -- "$CONV" "$T/own/model.safetensors" -o "$T/own/model.safetensors"
expect_error o-is-its-config 1 "" "own/config.json: exists and is not a .brt" -- "$CONV" "$T/own" -o "$T/own/config.json"
cmp -s "$M/st_pretraining_f32/model.safetensors" "$T/own/model.safetensors" && cmp -s "$M/st_pretraining_f32/config.json" "$T/own/config.json" && ok || bad "the input checkpoint changed"
# --to hf into a folder with files transformers reads but the export does not write (a stale
# tokenizer.json would win over the new vocab.txt): refused, nothing deleted.
mkdir -p "$T/hfstale" && echo '{}' > "$T/hfstale/tokenizer.json"
expect_error hf-stale-tokenizer 1 "" "hfstale: holds tokenizer.json, which this export does not write" -- "$CONV" --to hf "$T/a.brt" -o "$T/hfstale"
[ -f "$T/hfstale/tokenizer.json" ] && [ ! -e "$T/hfstale/config.json" ] && ok || bad "--to hf touched a refused folder"

# --- usage errors: exit 2 ---------------------------------------------------------------------------
expect_error no-o 2 "" "-o is required" -- "$CONV" "$M/st_pretraining_f32"
expect_error bad-dtype 2 "" "dtype" -- "$CONV" "$M/st_pretraining_f32" -o "$T/x.brt" --dtype f64
expect_error no-args 2 "" "input is required|required" -- "$CONV"
expect_error json-alone 2 "" "--json goes with --inspect" -- "$CONV" "$M/st_pretraining_f32" -o "$T/x.brt" --json
expect_ok help "$CONV" --help
grep -q -- "--to hf" "$T/stdout" || bad "--help explains --to hf"
# The usage line names the program, not the path it was run by; no source file is named.
grep -m1 "^Usage:" "$T/stdout" | grep -q "^Usage: bertrt-convert \[OPTIONS\]" && ok || bad "--help usage line: $(grep -m1 Usage "$T/stdout")"
! grep -qE "(src|tests|tools)/[a-z_/]+\.(h|cpp|py)" "$T/stdout" && ok || bad "--help names a source file: $(grep -E '\.(h|cpp|py)' "$T/stdout")"
# Usage errors as bertrt prints them: "bertrt-convert: error: ...", then the --help hint; exit 2.
for args in "--bogus" "--dtype f64 x -o y" ""; do
  "$CONV" $args > /dev/null 2> "$T/stderr" < /dev/null
  rc=$?
  [ $rc -eq 2 ] && [ "$(head -1 "$T/stderr" | cut -c1-23)" = "bertrt-convert: error: " ] \
    && [ "$(sed -n 2p "$T/stderr")" = "Run with --help for more information." ] && ok \
    || bad "usage error of '$args': exit $rc: $(cat "$T/stderr")"
done
expect_ok version "$CONV" --version
head -1 "$T/stdout" | grep -qE '^bertrt-convert [0-9]+\.[0-9]+\.[0-9]+( \(commit [0-9a-f]+\))?$' && ok || bad "--version: $(cat "$T/stdout")"

echo "convert_e2e: $pass passed, $fail failed"
[ $fail -eq 0 ]
