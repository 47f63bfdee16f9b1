#!/usr/bin/env bash
# SIGINT / SIGTERM during `bertrt pretrain` and `bertrt finetune`: the run writes a resumable
# checkpoint of the step in progress to OUT.resume (never over -o OUT, which only a finished run
# writes) and exits 130 / 143 (128 + signal, as shells report); resuming it ends byte-identical to
# a run that was never interrupted (model, training state and metrics), and removes OUT.resume.
# `finetune --qat int8` cannot resume yet: it exits 130 and writes nothing.
# Usage: signal_test.sh BERTRT_BINARY DATA_DIR
set -uo pipefail
source "$(dirname "$0")/harness.sh"
export BERTRT_NUM_THREADS=${BERTRT_NUM_THREADS:-1}
TEXT=$DATA/corpus/enwiki/enwiki_valid_1000docs.txt
for f in "$TEXT" "$DATA/glue/SST-2/train.tsv"; do
  if [ ! -f "$f" ]; then
    if [ "${BERTRT_REQUIRE_DATA:-0}" = 1 ]; then echo "required data missing: $f"; exit 1; fi
    echo "SKIP: data missing ($f)"; exit 0
  fi
done

head -c 200000 "$TEXT" > "$T/corpus.txt"
head -n 600 "$DATA/glue/SST-2/train.tsv" > "$T/train.tsv"
"$BIN" init --preset tiny --vocab "$VOCAB" --seed 3 -o "$T/init.brt" > /dev/null || { echo "init failed"; exit 1; }

# interrupt NAME SIGNAL WANT_RC METRICS OUT -- CMD...: starts CMD (writing -o OUT), sends SIGNAL
# once METRICS shows step ≥ 3, and checks the exit status, the message and that OUT was not
# written. Sets $stopped to the step of the checkpoint OUT.resume.
stopped=""
interrupt() {
  local name=$1 sig=$2 want=$3 metrics=$4 out=$5; shift 6
  rm -f "$metrics" "$out" "$out.resume"
  "$@" > "$T/stdout" 2> "$T/stderr" < /dev/null &
  local pid=$!
  for _ in $(seq 3000); do
    local p; p=$(progress_of "$metrics")
    [ "${p:-0}" -ge 3 ] && break
    sleep 0.01
  done
  kill -"$sig" $pid
  wait $pid
  local rc=$?
  stopped=$(step_of "$out.resume")
  if [ $rc -ne "$want" ]; then bad "$name: exit $rc, expected $want: $(tail -2 "$T/stderr")"; return; fi
  grep -q "interrupted: SIG$sig at step" "$T/stderr" && ok || bad "$name: message: $(cat "$T/stderr")"
  [ ! -e "$out" ] && ok || bad "$name: -o $out was written by an interrupted run"
  if [ -n "$stopped" ]; then
    grep -qF "interrupted: SIG$sig at step $stopped of" "$T/stderr" &&
      grep -qF "wrote the resumable checkpoint $out.resume (continue with --resume $out.resume in place of --model, the other flags the same; $out is written when the run finishes)" "$T/stderr" \
      && ok || bad "$name: message: $(grep interrupted "$T/stderr")"
  fi
  # The last progress line names the step it stopped at, not 100 %.
  grep -q "SIG$sig" "$T/stderr" && ! grep "SIG$sig" "$T/stderr" | grep -q "(100%)" && ok \
    || bad "$name: progress line at 100 %: $(grep "SIG$sig" "$T/stderr")"
  echo "$name: $(grep interrupted "$T/stderr")"
}

# --- pretrain --------------------------------------------------------------------------------------
M=80
PT=(--corpus "$T/corpus.txt" --batch-size 4 --max-seq-length 32 --max-predictions-per-seq 5 --seed 11
    --learning-rate 1e-3 --warmup-steps 3 --max-steps $M)
"$BIN" pretrain --model "$T/init.brt" "${PT[@]}" --metrics "$T/full.jsonl" --dump-instances "$T/full.inst" \
  -o "$T/full.brt" > /dev/null 2>&1 && ok || bad "uninterrupted pretrain"
for sig in INT TERM; do
  want=$([ $sig = INT ] && echo 130 || echo 143)
  rm -f "$T/p.inst"
  interrupt "pretrain SIG$sig" $sig "$want" "$T/p.jsonl" "$T/p.brt" -- \
    "$BIN" pretrain --model "$T/init.brt" "${PT[@]}" --metrics "$T/p.jsonl" --dump-instances "$T/p.inst" -o "$T/p.brt"
  if [ -n "$stopped" ] && [ "$stopped" -lt $M ]; then
    ok
    # The steps it trained are in its --dump-instances file (it was dropped), named in the output.
    [ -s "$T/p.inst" ] && grep -q "wrote $T/p.inst (steps 1..$stopped)" "$T/stdout" && ok \
      || bad "pretrain SIG$sig: dump of steps 1..$stopped: $(ls -l "$T/p.inst" 2>&1; grep wrote "$T/stdout")"
    "$BIN" pretrain --resume "$T/p.brt.resume" "${PT[@]}" --metrics "$T/p.jsonl" --dump-instances "$T/p.inst" -o "$T/p.brt" \
      > "$T/resume.out" 2>&1 && ok || bad "pretrain resume after SIG$sig: $(tail -2 "$T/resume.out")"
    cmp -s "$T/full.brt" "$T/p.brt" && ok || bad "pretrain stopped by SIG$sig at step $stopped + resumed differs"
    [ ! -e "$T/p.brt.resume" ] && ok || bad "pretrain: the finished run left its checkpoint $T/p.brt.resume"
    # The resumed run's dump continues the interrupted one's (it replaced steps 1..K).
    cmp -s "$T/full.inst" "$T/p.inst" && grep -q "wrote $T/p.inst (steps 1..$M)" "$T/resume.out" && ok \
      || bad "pretrain dump after SIG$sig + resume differs from the uninterrupted run's: $(grep wrote "$T/resume.out")"
    [ "$(grep -c '"step"' "$T/p.jsonl")" -eq "$(grep -c '"step"' "$T/full.jsonl")" ] && ok \
      || bad "pretrain metrics after SIG$sig resume: $(grep -c '"step"' "$T/p.jsonl") lines"
  else
    bad "pretrain SIG$sig: no checkpoint below step $M (got '$stopped')"
  fi
done

# A signal before the first step (here while the held-out text is evaluated, seconds at 1 thread):
# nothing trained, nothing written, an existing --metrics file kept. It used to train a new step
# first, then save it; the metrics file was emptied.
rm -f "$T/early.brt"
echo '{"step":1,"loss":1.0}' > "$T/early.jsonl"
cp "$T/early.jsonl" "$T/early_copy.jsonl"
"$BIN" pretrain --model "$T/init.brt" "${PT[@]}" --valid "$TEXT" --valid-examples 0 --metrics "$T/early.jsonl" \
  -o "$T/early.brt" > "$T/stdout" 2> "$T/stderr" < /dev/null &
pid=$!
for _ in $(seq 3000); do grep -q 'reading --valid 1000/1000' "$T/stderr" && break; sleep 0.01; done
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 130 ] && grep -q "interrupted: SIGINT before step 1 of $M: nothing trained, $T/early.brt not written" "$T/stderr" \
  && [ ! -e "$T/early.brt" ] && cmp -s "$T/early.jsonl" "$T/early_copy.jsonl" && ok \
  || bad "SIGINT before the first step: exit $rc: $(tail -c 300 "$T/stderr"); metrics: $(head -c 200 "$T/early.jsonl")"

# --data-only stops at a signal too (it ran on, and wrote gigabytes): whole steps kept, exit 130.
"$BIN" pretrain --model "$T/init.brt" --corpus "$T/corpus.txt" --batch-size 4 --max-seq-length 32 --max-steps 100000000 \
  --data-only --dump-instances "$T/do.inst" > "$T/stdout" 2> "$T/stderr" < /dev/null &
pid=$!
# Killed after 2 minutes should it run on, as it did (not `timeout`: it signals its whole process
# group, this script's `wait` included).
( sleep 120; kill -KILL $pid ) > /dev/null 2>&1 &  # no pipe of ctest's held open
watchdog=$!
sleep 1
kill -INT $pid
wait $pid
rc=$?
kill $watchdog 2> /dev/null  # its sleep, silent, ends by itself
if grep -q "before step 1 of" "$T/stderr"; then
  [ $rc -eq 130 ] && [ ! -e "$T/do.inst" ] && ok || bad "--data-only SIGINT before step 1: exit $rc"
else
  k=$(sed -n 's/.*interrupted: SIGINT at step \([0-9]*\) of 100000000: wrote .*do.inst (steps 1\.\.\([0-9]*\), no training)$/\1 \2/p' "$T/stderr")
  [ $rc -eq 130 ] && [ -n "$k" ] && [ -s "$T/do.inst" ] && ok || bad "--data-only SIGINT: exit $rc: $(tail -c 300 "$T/stderr")"
fi
rm -f "$T/do.inst"

# --- finetune --------------------------------------------------------------------------------------
N=60
# With dropout (hidden and attention probabilities): the resumed run must draw the uninterrupted
# run's masks.
FT=(--task sst2 --train "$T/train.tsv" --max-steps $N --batch-size 8 --learning-rate 1e-3 --seed 5
    --hidden-dropout-prob 0.1 --attention-probs-dropout-prob 0.1)
"$BIN" finetune --model "$T/init.brt" "${FT[@]}" --metrics "$T/ffull.jsonl" -o "$T/ffull.brt" > /dev/null 2>&1 \
  && ok || bad "uninterrupted finetune"
for sig in TERM INT; do
  want=$([ $sig = INT ] && echo 130 || echo 143)
  interrupt "finetune SIG$sig" $sig "$want" "$T/f.jsonl" "$T/f.brt" -- \
    "$BIN" finetune --model "$T/init.brt" "${FT[@]}" --metrics "$T/f.jsonl" -o "$T/f.brt"
  if [ -n "$stopped" ] && [ "$stopped" -lt $N ]; then
    ok
    cp "$T/f.brt.resume" "$T/f_ck.brt"
    "$BIN" finetune --resume "$T/f.brt.resume" "${FT[@]}" --metrics "$T/f.jsonl" -o "$T/f.brt" > "$T/resume.out" 2>&1 \
      && ok || bad "finetune resume after SIG$sig: $(tail -2 "$T/resume.out")"
    grep -q "resuming $T/f.brt.resume at step $stopped of $N" "$T/resume.out" && ok || bad "finetune resume message: $(head -3 "$T/resume.out")"
    cmp -s "$T/ffull.brt" "$T/f.brt" && ok || bad "finetune stopped by SIG$sig at step $stopped + resumed differs"
    [ ! -e "$T/f.brt.resume" ] && ok || bad "finetune: the finished run left its checkpoint $T/f.brt.resume"
    [ "$(grep -c '"step"' "$T/f.jsonl")" -eq "$(grep -c '"step"' "$T/ffull.jsonl")" ] && ok \
      || bad "finetune metrics after SIG$sig resume: $(grep -c '"step"' "$T/f.jsonl") lines"
  else
    bad "finetune SIG$sig: no checkpoint below step $N (got '$stopped')"
  fi
done
# Resuming with other settings is refused, naming them; a finished model has no state to resume.
if [ -f "$T/f_ck.brt" ]; then
  FT6=(--task sst2 --train "$T/train.tsv" --max-steps $N --batch-size 8 --learning-rate 1e-3 --seed 6)
  expect_error "finetune resume with another seed" "$T/x.brt" '--seed \(checkpoint 5, now 6\)' -- \
    "$BIN" finetune --resume "$T/f_ck.brt" "${FT6[@]}" -o "$T/x.brt"
  FT0=(--task sst2 --train "$T/train.tsv" --max-steps $N --batch-size 8 --learning-rate 1e-3 --seed 5)
  expect_error "finetune resume without its dropout" "$T/x.brt" \
    '--attention-probs-dropout-prob \(checkpoint 0.1, now 0\), --hidden-dropout-prob \(checkpoint 0.1, now 0\)' -- \
    "$BIN" finetune --resume "$T/f_ck.brt" "${FT0[@]}" -o "$T/x.brt"
  # Flags by their names and floats as written; --max-seq-length out of the task's record (a
  # JSON blob of the task was printed, and 2e-05 as 1.9999999494757503e-05).
  FTL=(--task sst2 --train "$T/train.tsv" --max-steps $N --batch-size 8 --learning-rate 2e-3 --seed 5 --max-seq-length 48)
  expect_error "finetune resume with another rate and length" "$T/x.brt" \
    'flags differ .*: --learning-rate \(checkpoint 0.001, now 0.002\), --max-seq-length \(checkpoint 128, now 48\)$' -- \
    "$BIN" finetune --resume "$T/f_ck.brt" "${FTL[@]}" --hidden-dropout-prob 0.1 --attention-probs-dropout-prob 0.1 -o "$T/x.brt"
fi
# A generic TSV run's own flags are named one by one (the task record's JSON was printed), and
# another task is named alone (the rest follows from it).
FTT=(--text-column sentence --label-column label --train "$T/train.tsv" --max-steps $N --batch-size 8 --learning-rate 1e-3 --seed 5)
interrupt "finetune tsv SIGINT" INT 130 "$T/t.jsonl" "$T/t.brt" -- \
  "$BIN" finetune --model "$T/init.brt" --task tsv --labels 0,1 "${FTT[@]}" --metrics "$T/t.jsonl" -o "$T/t.brt"
if [ -n "$stopped" ] && [ "$stopped" -lt $N ]; then
  expect_error "finetune resume of a tsv run with other labels and columns" "$T/x.brt" \
    'flags differ .*: --labels \(checkpoint 0,1, now 1,0\), --text-column \(checkpoint sentence, now 0\)$' -- \
    "$BIN" finetune --resume "$T/t.brt.resume" --task tsv --labels 1,0 "${FTT[@]/sentence/0}" -o "$T/x.brt"
  expect_error "finetune resume of a tsv run as sst2" "$T/x.brt" 'flags differ .*: --task \(checkpoint tsv, now sst2\)$' -- \
    "$BIN" finetune --resume "$T/t.brt.resume" --task sst2 --train "$T/train.tsv" --max-steps $N --batch-size 8 --learning-rate 1e-3 --seed 5 -o "$T/x.brt"
else
  bad "finetune tsv SIGINT: no checkpoint below step $N (got '$stopped')"
fi
expect_error "finetune resume of a finished model" "$T/x.brt" "no training state" -- \
  "$BIN" finetune --resume "$T/ffull.brt" "${FT[@]}" -o "$T/x.brt"
# --resume given the -o of an interrupted run (an older finished model there) names OUT.resume.
if [ -f "$T/f_ck.brt" ]; then
  cp "$T/ffull.brt" "$T/h.brt" && cp "$T/f_ck.brt" "$T/h.brt.resume"
  expect_error "finetune --resume OUT instead of OUT.resume" "$T/x.brt" \
    "--resume $T/h.brt: the file has no training state .*\(the interrupted run's checkpoint is $T/h.brt.resume: --resume $T/h.brt.resume\)" -- \
    "$BIN" finetune --resume "$T/h.brt" "${FT[@]}" -o "$T/x.brt"
fi
expect_error "finetune --model with --resume" "$T/x.brt" "excludes" -- \
  "$BIN" finetune --model "$T/init.brt" --resume "$T/ffull.brt" "${FT[@]}" -o "$T/x.brt"
# QAT runs cannot resume yet: exit 130, no output.
interrupt "finetune --qat SIGINT" INT 130 "$T/q.jsonl" "$T/q.brt" -- \
  "$BIN" finetune --model "$T/init.brt" "${FT[@]}" --qat int8 --metrics "$T/q.jsonl" -o "$T/q.brt"
[ ! -e "$T/q.brt" ] && [ ! -e "$T/q.brt.resume" ] && grep -q "no checkpoint written" "$T/stderr" && ok || bad "finetune --qat interrupted: $(cat "$T/stderr")"

# --- finetune --task sentence-embedding ------------------------------------------------------------
# cached-mnrl with dropout: the resumed run redraws each mini-batch's masks in both passes.
SQUAD=$DATA/squad_v1.1/dev-v1.1-articles-00-39.json
if [ -f "$SQUAD" ]; then
  E=30
  FE=(--task sentence-embedding --pooling mean --loss cached-mnrl --mini-batch-size 3 --train "$SQUAD"
      --train-articles 0-1 --max-steps $E --batch-size 8 --learning-rate 1e-3 --seed 5
      --hidden-dropout-prob 0.1 --attention-probs-dropout-prob 0.1)
  "$BIN" finetune --model "$T/init.brt" "${FE[@]}" --metrics "$T/efull.jsonl" -o "$T/efull.brt" > /dev/null 2>&1 \
    && ok || bad "uninterrupted sentence-embedding finetune"
  interrupt "finetune sentence-embedding SIGINT" INT 130 "$T/e.jsonl" "$T/e.brt" -- \
    "$BIN" finetune --model "$T/init.brt" "${FE[@]}" --metrics "$T/e.jsonl" -o "$T/e.brt"
  if [ -n "$stopped" ] && [ "$stopped" -lt $E ]; then
    cp "$T/e.brt.resume" "$T/e_ck.brt"
    "$BIN" finetune --resume "$T/e.brt.resume" "${FE[@]}" --metrics "$T/e.jsonl" -o "$T/e.brt" > "$T/resume.out" 2>&1 \
      && ok || bad "sentence-embedding resume: $(tail -2 "$T/resume.out")"
    grep -q "resuming $T/e.brt.resume at step $stopped of $E" "$T/resume.out" && ok || bad "sentence-embedding resume message: $(head -3 "$T/resume.out")"
    cmp -s "$T/efull.brt" "$T/e.brt" && ok || bad "sentence-embedding stopped at step $stopped + resumed differs"
    # The same lines but for the clock.
    untimed() { sed 's/"elapsed_seconds":[-+.0-9e]*,\?//' "$1"; }
    [ "$(untimed "$T/efull.jsonl")" = "$(untimed "$T/e.jsonl")" ] && ok || bad "sentence-embedding metrics after resume differ"
    [ ! -e "$T/e.brt.resume" ] && ok || bad "sentence-embedding: the finished run left $T/e.brt.resume"
    expect_error "sentence-embedding resume with another loss" "$T/x.brt" \
      'flags differ .*: --loss \(checkpoint cached-mnrl, now mnrl\), --mini-batch-size \(checkpoint 3, now \(not given\)\)$' -- \
      "$BIN" finetune --resume "$T/e_ck.brt" "${FE[@]:0:4}" --loss mnrl "${FE[@]:8}" -o "$T/x.brt"
  else
    bad "sentence-embedding SIGINT: no checkpoint below step $E (got '$stopped')"
  fi
fi

echo "signal_test: $pass passed, $fail failed"
[ $fail -eq 0 ]
