#!/usr/bin/env bash
# End-to-end checks of `bertrt pretrain` as a long-running, resumable job, on a tiny
# model and a slice of real text:
#   - a run killed (SIGKILL) after a save and resumed ends byte-identical to an uninterrupted run;
#     --save-steps checkpoints go to OUT.resume, never to -o OUT (written when the run finishes);
#   - SIGKILL at random moments (mid-step, mid-save with --save-steps 1) never leaves the
#     checkpoint OUT.resume corrupt: after each kill it loads, its step is ≤ the run's progress, and a resume finishes
#     byte-identical to the uninterrupted run;
#   - --resume refuses changed flags, naming them;
#   - a non-finite loss stops the run naming the step and keeps the last checkpoint;
#     --skip-nonfinite skips and counts such steps;
#   - --recompute gives the same bytes; --eval-steps writes eval lines; `bertrt plot` draws them.
# Usage: pretrain_test.sh BERTRT_BINARY DATA_DIR
set -uo pipefail
source "$(dirname "$0")/harness.sh"
TEXT=$DATA/corpus/enwiki/enwiki_valid_1000docs.txt
if [ ! -f "$TEXT" ]; then
  if [ "${BERTRT_REQUIRE_DATA:-0}" = 1 ]; then echo "required data missing: $TEXT"; exit 1; fi
  echo "SKIP: data missing ($TEXT)"; exit 0
fi

head -c 200000 "$TEXT" > "$T/corpus.txt"
tail -c 60000 "$TEXT" > "$T/valid.txt"
"$BIN" init --preset tiny --vocab "$VOCAB" --seed 3 -o "$T/init.brt" > /dev/null || { echo "init failed"; exit 1; }
DATAFLAGS=(--corpus "$T/corpus.txt" --batch-size 4 --max-seq-length 32 --max-predictions-per-seq 5 --seed 11)
COMMON=("${DATAFLAGS[@]}" --learning-rate 1e-3 --warmup-steps 3)

# --- resume after a kill is bit-identical -------------------------------------------------------
M=60
"$BIN" pretrain --model "$T/init.brt" "${COMMON[@]}" --max-steps $M --save-steps 20 -o "$T/full.brt" \
  > /dev/null 2>&1 && ok || bad "uninterrupted run"
"$BIN" pretrain --model "$T/init.brt" "${COMMON[@]}" --max-steps $M --save-steps 20 -o "$T/part.brt" \
  --metrics "$T/part.jsonl" > /dev/null 2>&1 &
pid=$!
saved=$(wait_for_checkpoint "$T/part.brt.resume" 600 0.02)  # the first save, then kill at once
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
if [ -n "$saved" ] && [ "$saved" -lt $M ]; then
  ok
  # --save-steps writes OUT.resume, never -o: a killed run leaves no -o behind.
  [ ! -e "$T/part.brt" ] && ok || bad "--save-steps wrote -o $T/part.brt before the run finished"
  "$BIN" pretrain --resume "$T/part.brt.resume" "${COMMON[@]}" --max-steps $M --save-steps 20 -o "$T/part.brt" \
    --metrics "$T/part.jsonl" > "$T/resume.out" 2>&1 && ok || bad "resume: $(tail -3 "$T/resume.out")"
  grep -q "resuming .*part.brt.resume at step $saved of $M" "$T/resume.out" && ok || bad "resume message: $(head -3 "$T/resume.out")"
  cmp -s "$T/full.brt" "$T/part.brt" && ok || bad "killed at step $saved + resumed differs from the uninterrupted run"
  [ ! -e "$T/part.brt.resume" ] && [ ! -e "$T/full.brt.resume" ] && ok || bad "a finished run left its OUT.resume"
  # The metrics file has each step once (lines after the checkpoint were dropped, then redone).
  [ "$(grep -c '"step"' "$T/part.jsonl")" -eq $M ] && ok || bad "metrics steps after resume: $(grep -c '"step"' "$T/part.jsonl")"
else
  bad "no checkpoint below step $M seen before the kill (saw '$saved')"
fi

# --- --resume refuses changed flags ---------------------------------------------------------------
"$BIN" pretrain --resume "$T/full.brt" --corpus "$T/corpus.txt" --batch-size 8 --max-seq-length 32 \
  --max-predictions-per-seq 5 --learning-rate 2e-3 --warmup-steps 3 --seed 11 --max-steps $M -o "$T/x.brt" \
  > /dev/null 2> "$T/err"
[ $? -ne 0 ] && grep -q -- "--batch-size (checkpoint 4, now 8)" "$T/err" && grep -q -- "--learning-rate" "$T/err" \
  && [ ! -e "$T/x.brt" ] && ok || bad "resume with other flags: $(cat "$T/err")"
"$BIN" pretrain --resume "$T/init.brt" "${COMMON[@]}" --max-steps 5 -o "$T/x.brt" > /dev/null 2> "$T/err"
[ $? -ne 0 ] && grep -q "no training state" "$T/err" && ok || bad "resume from a file without state: $(cat "$T/err")"
"$BIN" pretrain --model "$T/init.brt" --resume "$T/full.brt" "${COMMON[@]}" --max-steps 5 -o "$T/x.brt" > /dev/null 2> "$T/err"
[ $? -ne 0 ] && grep -q -- "--model.*--resume" "$T/err" && ok || bad "--model with --resume: $(cat "$T/err")"

# --- SIGKILL at random moments, --save-steps 1 ----------------------------------------------------
K=40
"$BIN" pretrain --model "$T/init.brt" "${COMMON[@]}" --max-steps $K --save-steps 1 -o "$T/ref1.brt" \
  > /dev/null 2>&1 && ok || bad "uninterrupted --save-steps 1 run"
RANDOM=5  # reproducible sleeps
kills=0 corrupt=0 mid_save=0
for i in $(seq 8); do
  if [ -e "$T/k.brt.resume" ]; then start=(--resume "$T/k.brt.resume"); else start=(--model "$T/init.brt"); fi
  "$BIN" pretrain "${start[@]}" "${COMMON[@]}" --max-steps $K --save-steps 1 -o "$T/k.brt" \
    --metrics "$T/k.jsonl" > /dev/null 2>&1 &
  pid=$!
  if [ $((i % 2)) = 0 ]; then  # mid-save: as soon as a temp file of the checkpoint exists
    for _ in $(seq 2000); do compgen -G "$T/k.brt.resume.tmp.*" > /dev/null && break; sleep 0.005; done
  else
    sleep "0.$((RANDOM % 10))$((RANDOM % 10))"
  fi
  kill -9 $pid 2>/dev/null && kills=$((kills + 1))
  wait $pid 2>/dev/null
  compgen -G "$T/k.brt.resume.tmp.*" > /dev/null && mid_save=$((mid_save + 1))
  if [ -e "$T/k.brt.resume" ]; then
    s=$(step_of "$T/k.brt.resume")
    p=$(progress_of "$T/k.jsonl")
    if [ -z "$s" ]; then corrupt=$((corrupt + 1)); echo "kill $i: checkpoint does not load: $("$BIN" info "$T/k.brt.resume" 2>&1 | tail -1)";
    elif [ "$s" -gt "$p" ]; then corrupt=$((corrupt + 1)); echo "kill $i: checkpoint step $s > progress $p"; fi
  fi
done
[ $corrupt -eq 0 ] && ok || bad "$corrupt of $kills kills left a bad checkpoint"
[ $kills -ge 4 ] && ok || bad "only $kills kills landed (runs too fast?)"
start=(--model "$T/init.brt"); [ -e "$T/k.brt.resume" ] && start=(--resume "$T/k.brt.resume")
"$BIN" pretrain "${start[@]}" "${COMMON[@]}" --max-steps $K --save-steps 1 -o "$T/k.brt" --metrics "$T/k.jsonl" \
  > /dev/null 2> "$T/err" && ok || bad "final resume after kills: $(tail -2 "$T/err")"
cmp -s "$T/ref1.brt" "$T/k.brt" && ok || bad "after $kills kills and resumes the model differs from the uninterrupted run"
# A writer killed mid-save leaves its temp file (never the checkpoint): the next run names it.
if [ $mid_save -gt 0 ]; then grep -q "left by a killed run" "$T/err" && ok || bad "no warning about stale temp files: $(cat "$T/err")"; fi
[ $mid_save -ge 2 ] && ok || bad "only $mid_save kills landed mid-save"
echo "kill test: $kills kills ($mid_save mid-save), the last checkpoint always loaded"

# --- non-finite ------------------------------------------------------------------------------------
# A real cause: a learning rate of 1e30 makes the weights overflow after the first update.
"$BIN" pretrain --model "$T/init.brt" "${DATAFLAGS[@]}" --learning-rate 1e30 --warmup-steps 0 --max-steps 6 \
  --save-steps 1 -o "$T/nan.brt" > /dev/null 2> "$T/err"
rc=$?
bad_step=$(sed -n 's/.*step \([0-9]*\): .*non-finite.*/\1/p' "$T/err" | head -1)
kept=$(step_of "$T/nan.brt.resume")
[ $rc -ne 0 ] && [ -n "$bad_step" ] && [ -n "$kept" ] && [ "$kept" -eq $((bad_step - 1)) ] \
  && grep -q "nan.brt.resume keeps the checkpoint of step $kept" "$T/err" && [ ! -e "$T/nan.brt" ] && ok \
  || bad "non-finite stop: rc $rc, step '$bad_step', kept '$kept': $(cat "$T/err")"
# --skip-nonfinite skips and counts those steps, but a run whose final weights give a non-finite
# loss (every step after the first skipped) does not write that model: it wrote it, exit 0.
"$BIN" pretrain --model "$T/init.brt" "${DATAFLAGS[@]}" --learning-rate 1e30 --warmup-steps 0 --max-steps 6 \
  --skip-nonfinite --metrics "$T/skip.jsonl" -o "$T/skip.brt" > /dev/null 2> "$T/err"
rc=$?
[ $rc -eq 1 ] && [ ! -e "$T/skip.brt" ] && grep -q "no longer computes finite outputs (5 of 6 steps skipped), so .*skip.brt was not written" "$T/err" \
  && ok || bad "skip-nonfinite run of a diverged model: rc $rc: $(tail -2 "$T/err")"
[ "$(grep -c '"skipped":true' "$T/skip.jsonl")" -ge 1 ] && tail -1 "$T/skip.jsonl" | grep -q '"skipped_steps":[1-9]' \
  && ok || bad "skipped steps not counted: $(tail -2 "$T/skip.jsonl")"
# With --save-steps: no checkpoint of weights that gave a skipped loss, and the one kept is named
# for what it is (it was offered for --resume, holding the weights that gave NaN).
"$BIN" pretrain --model "$T/init.brt" "${DATAFLAGS[@]}" --learning-rate 1e30 --warmup-steps 0 --max-steps 6 \
  --skip-nonfinite --save-steps 1 -o "$T/skip2.brt" > /dev/null 2> "$T/err"
rc=$?
[ $rc -eq 1 ] && [ "$(step_of "$T/skip2.brt.resume")" = 1 ] && [ ! -e "$T/skip2.brt" ] \
  && grep -q "skip2.brt.resume keeps the checkpoint of step 1, which holds these same weights: no update was applied after it" "$T/err" \
  && ok || bad "skip-nonfinite --save-steps: rc $rc, kept step '$(step_of "$T/skip2.brt.resume")': $(tail -2 "$T/err")"
# An update that overflows the weights stops the run. A checkpoint before it is sound, but
# --resume would meet the same step, so a new run from it is offered (whether the overflow comes
# at step 1, before any checkpoint, depends on the data).
"$BIN" pretrain --model "$T/init.brt" "${DATAFLAGS[@]}" --learning-rate 1e38 --warmup-steps 0 --max-steps 6 \
  --skip-nonfinite --save-steps 1 -o "$T/skip3.brt" > /dev/null 2> "$T/err"
grep -q "the update made the parameters non-finite" "$T/err" \
  && { grep -q "step 1: the update" "$T/err" && grep -q "no checkpoint was written" "$T/err" \
       || grep -q "resume would meet this step again; a new run may start from it with --model" "$T/err"; } \
  && ok || bad "update overflow: $(tail -2 "$T/err")"

# --- --recompute, freezing, the BERT optimizer, accumulation, evaluation, plot ---------------------
OPTS=(--optimizer bert --gradient-accumulation-steps 2 --freeze-embeddings --freeze-layers 1 --max-steps 6)
"$BIN" pretrain --model "$T/init.brt" "${COMMON[@]}" "${OPTS[@]}" -o "$T/a.brt" > /dev/null 2>&1 && ok || bad "bert optimizer run"
"$BIN" pretrain --model "$T/init.brt" "${COMMON[@]}" "${OPTS[@]}" --recompute -o "$T/b.brt" > /dev/null 2>&1 && ok || bad "--recompute run"
cmp -s "$T/a.brt" "$T/b.brt" && ok || bad "--recompute changed the result"
"$BIN" pretrain --model "$T/init.brt" "${COMMON[@]}" --max-steps 12 --valid "$T/valid.txt" --valid-examples 16 \
  --eval-steps 4 --metrics "$T/m.jsonl" -o "$T/e.brt" > /dev/null 2>&1 && ok || bad "eval-steps run"
# A held-out text of one document (no blank line) serves MLM alone; NSP needs a second document.
grep -v '^$' "$T/valid.txt" > "$T/valid1.txt"
expect_ok "--no-nsp --valid with one document" "$BIN" pretrain --model "$T/init.brt" "${COMMON[@]}" --no-nsp \
  --max-steps 2 --valid "$T/valid1.txt" --valid-examples 8 --metrics "$T/nonsp.jsonl" -o "$T/v1.brt"
# Without NSP no NSP figure is reported (zeros were printed, logged and plotted as flat curves).
! grep -qiE 'nsp (accuracy|loss)|random next' "$T/stdout" && ! grep -qi nsp "$T/nonsp.jsonl" \
  && grep -q '"mlm_loss"' "$T/nonsp.jsonl" && ok \
  || bad "--no-nsp run reports NSP: $(grep -iE 'nsp|random next' "$T/stdout" "$T/nonsp.jsonl" | head -3)"
expect_error "NSP --valid with one document" "$T/v2.brt" "valid1.txt: 1 document.*need at least 2" -- \
  "$BIN" pretrain --model "$T/init.brt" "${COMMON[@]}" --max-steps 2 --valid "$T/valid1.txt" -o "$T/v2.brt"
[ "$(grep -c '"eval":{' "$T/m.jsonl")" -eq 4 ] && grep -q '"step":4,' "$T/m.jsonl" && ok || bad "eval lines (before, 4, 8, 12): $(grep eval "$T/m.jsonl")"
for key in step loss mlm_loss nsp_loss mlm_accuracy nsp_accuracy learning_rate grad_norm tokens_per_second; do
  head -1 "$T/m.jsonl" | grep -q '"eval"' && line=$(sed -n 2p "$T/m.jsonl") || line=$(head -1 "$T/m.jsonl")
  echo "$line" | grep -q "\"$key\":" || bad "metrics lack $key: $line"
done
"$BIN" plot "$T/m.jsonl" -o "$T/curve.svg" > /dev/null 2> "$T/err" && ok || bad "plot: $(cat "$T/err")"
# A run that fails before it writes a metrics line leaves an existing --metrics file as it was.
echo '{"step":1}' > "$T/keep.jsonl"
: > "$T/empty_v.txt"  # found empty only when it loads, after the model and the first shard
expect_error "a bad --valid keeps the old --metrics" "$T/keepm.brt" "empty_v.txt" -- "$BIN" pretrain --model "$T/init.brt" "${COMMON[@]}" \
  --max-steps 2 --valid "$T/empty_v.txt" --metrics "$T/keep.jsonl" -o "$T/keepm.brt"
[ "$(cat "$T/keep.jsonl")" = '{"step":1}' ] && ok || bad "a failed run emptied --metrics: $(cat "$T/keep.jsonl")"
# Its summary counts over the runs (train steps were the longest run's, evaluations a sum).
"$BIN" plot "$T/m.jsonl" "$T/m.jsonl" -o "$T/curve2.svg" > "$T/out" 2> "$T/err" \
  && grep -q "(2 run(s), 24 train steps, 8 evaluations)" "$T/out" && ok || bad "plot of two runs: $(cat "$T/out" "$T/err")"
/usr/bin/python3 - "$T/curve.svg" <<'EOF' && ok || bad "plot SVG"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()  # raises on malformed XML
ns = "{http://www.w3.org/2000/svg}"
ids = {e.get("id") for e in root.iter(ns + "polyline")}
want = {"train-loss", "train-mlm_loss", "train-nsp_loss", "train-mlm_accuracy", "train-nsp_accuracy",
        "eval-mlm_loss", "eval-nsp_loss", "eval-mlm_accuracy", "eval-nsp_accuracy"}
assert want <= ids, want - ids
for e in root.iter(ns + "polyline"):
    if e.get("id") == "train-loss":
        assert len(e.get("points").split()) == 12, e.get("points")
texts = [t.text for t in root.iter(ns + "text")]
assert "step" in texts and any(t and "eval MLM accuracy" in t for t in texts), texts
EOF
"$BIN" plot "$T/m.jsonl" -o "$T/curve.png" > /dev/null 2> "$T/err"
[ $? -ne 0 ] && grep -q "only SVG" "$T/err" && ok || bad "plot .png should explain: $(cat "$T/err")"

echo "pretrain_test: $pass passed, $fail failed"
[ $fail -eq 0 ]
