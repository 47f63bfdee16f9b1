#!/usr/bin/env bash
# End-to-end checks of `bertrt serve` on loopback: its answers equal `bertrt embed` / `rerank` /
# `predict` for the same inputs (tests/e2e/serve_client.py, Python requests), its faults
# (malformed and mistyped bodies, empty inputs, a 10 MB body, a slow client, clients gone
# mid-request, a flood past the queue) each get their status, API keys, a model that fails to
# load (an error before any port opens), and SIGTERM (queued requests answered, exit 0).
# Usage: serve_test.sh BERTRT_BINARY BERTRT_CONVERT DATA_DIR SOURCE_DIR
set -uo pipefail
CONVERT=$2
SRC=$4
set -- "$1" "$3"
source "$(dirname "$0")/harness.sh"
PY=/usr/bin/python3
$PY -c "import requests, numpy" 2>/dev/null || { echo "SKIP: python3-requests or numpy missing"; exit 0; }

$PY "$SRC/tests/reference/st_models.py" --out "$T/st" --weights safetensors
rc=$?
if [ $rc -eq 77 ]; then echo "SKIP: python3-torch missing"; exit 0; fi
[ $rc -eq 0 ] || { echo "FAIL: st_models.py"; exit 1; }
expect_ok "convert embedding model" "$CONVERT" -q "$T/st/dense_normalize" -o "$T/emb.brt"
expect_ok "convert prompts model" "$CONVERT" -q "$T/st/prompts" -o "$T/prompts.brt"
expect_ok "convert cross-encoder" "$CONVERT" -q "$T/st/cross_encoder" -o "$T/ce.brt"
head -n 120 "$DATA/glue/SST-2/train.tsv" > "$T/train.tsv"
expect_ok init "$BIN" init --preset tiny --vocab "$VOCAB" --seed 3 -o "$T/base.brt"
expect_ok "finetune sst2" "$BIN" finetune --model "$T/base.brt" --task sst2 --train "$T/train.tsv" \
  --max-steps 2 --batch-size 8 -o "$T/sst2.brt"
expect_ok "finetune a LoRA adapter" "$BIN" finetune --model "$T/base.brt" --task sst2 --train "$T/train.tsv" \
  --max-steps 2 --batch-size 8 --learning-rate 1e-3 --lora-r 4 -o "$T/adapter.brt"

# --- what the CLI answers for the same inputs --------------------------------------------------------
E=$T/expected
mkdir -p "$E"
printf 'the cat\na dog is big\nthe cat sat on the mat .\n\nit\nthe big red dog and the cat\n' > "$E/texts.txt"
printf 'the cat sat on the mat .\na dog is big\nthe red dog\nstocks fell\n' > "$E/passages.txt"
printf 'a gorgeous , witty movie\nthe worst film of the year\nok\n' > "$E/sentences.txt"
"$BIN" embed --model "$T/emb.brt" --input "$E/texts.txt" > "$E/embed.jsonl" \
  && "$BIN" embed --model "$T/emb.brt" --input "$E/texts.txt" --dimensions 4 > "$E/embed_dim4.jsonl" \
  && "$BIN" embed --model "$T/emb.brt" --input "$E/texts.txt" --dimensions 4 --no-normalize > "$E/embed_dim4_raw.jsonl" \
  && "$BIN" embed --model "$T/prompts.brt" --input "$E/texts.txt" --prompt-name query > "$E/embed_query.jsonl" \
  && "$BIN" rerank --model "$T/ce.brt" --query 'the cat' --input "$E/passages.txt" > "$E/rerank.jsonl" \
  && "$BIN" rerank --model "$T/ce.brt" --query 'the cat' --input "$E/passages.txt" --raw-scores > "$E/rerank_raw.jsonl" \
  && "$BIN" predict --model "$T/sst2.brt" --input "$E/sentences.txt" --json > "$E/predict.jsonl" \
  && "$BIN" predict --model "$T/base.brt" --adapter "$T/adapter.brt" --input "$E/sentences.txt" --json \
     > "$E/predict_lora.jsonl" \
  && ok || bad "the CLI's answers"

# start_server LOG ARGS...: starts `bertrt serve --port 0 ARGS` in the background (SERVER_PID) and
# waits for its "listening on" line (SERVER_URL).
start_server() {
  local log=$1 i
  shift
  "$BIN" serve --port 0 "$@" > "$log.out" 2> "$log.err" &
  SERVER_PID=$!
  SERVER_URL=""
  for i in $(seq 300); do
    SERVER_URL=$(sed -n 's/^bertrt serve: listening on \(http:.*\)$/\1/p' "$log.out")
    [ -n "$SERVER_URL" ] && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  bad "server did not start: $(cat "$log.err")"
  return 1
}
# stop_server LOG: SIGTERM, then exit 0 within 30 s.
stop_server() {
  local i
  kill -TERM "$SERVER_PID"
  for i in $(seq 300); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -9 "$SERVER_PID"; bad "server still running 30 s after SIGTERM"; return
  fi
  wait "$SERVER_PID"
  local rc=$?
  [ $rc -eq 0 ] && grep -q "bertrt serve: stopped" "$1.err" && ok || bad "exit $rc after SIGTERM: $(cat "$1.err")"
}

# --- routes, concurrency, faults --------------------------------------------------------------------
if start_server "$T/main" --model emb="$T/emb.brt" --model ce="$T/ce.brt" --model sst2="$T/sst2.brt" \
     --model "$T/prompts.brt" --model lora="$T/base.brt" --adapter lora="$T/adapter.brt" \
     --request-timeout 3; then
  grep -q "^bertrt serve: listening on http://127.0.0.1:[0-9]*$" "$T/main.out" && ok || bad "loopback by default: $(cat "$T/main.out")"
  $PY "$SRC/tests/e2e/serve_client.py" main "$SERVER_URL" "$E" && ok || bad "serve_client.py main"
  # A port in use is an error (no second server sharing it).
  expect_error "a port in use" "" "--port ${SERVER_URL##*:}: cannot listen there" -- \
    "$BIN" serve --model "$T/emb.brt" --port "${SERVER_URL##*:}"
  # SIGTERM with requests in flight: each is answered (200) or refused before it was accepted
  # (a connection error), none cut off or garbled; then exit 0.
  $PY - "$SERVER_URL" "$E" "$SERVER_PID" > "$T/term.txt" 2>&1 <<'PYEOF' &
import json, os, signal, sys, threading, time, requests
url, exp, pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
texts = open(exp + "/texts.txt").read().split("\n")[:-1]
out = []
def client():
    for _ in range(20):
        try:
            r = requests.post(url + "/embed", json={"inputs": texts}, timeout=30)
            out.append(r.status_code)
        except requests.exceptions.ConnectionError:
            out.append("refused")
ts = [threading.Thread(target=client) for _ in range(8)]
for t in ts: t.start()
time.sleep(0.2)
os.kill(pid, signal.SIGTERM)
for t in ts: t.join()
print("statuses", sorted(set(map(str, out))), out.count(200))
sys.exit(0 if set(out) <= {200, "refused", 503} and out.count(200) > 0 else 1)
PYEOF
  term_client=$!
  for i in $(seq 300); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
  wait "$term_client" && ok || bad "requests during SIGTERM: $(cat "$T/term.txt")"
  wait "$SERVER_PID"
  rc=$?
  [ $rc -eq 0 ] && grep -q "bertrt serve: stopped" "$T/main.err" && ok || bad "exit $rc after SIGTERM under load: $(cat "$T/main.err")"
fi

# --- a flood past the queue ---------------------------------------------------------------------------
if start_server "$T/flood" --model emb="$T/emb.brt" --max-concurrent-requests 1 --max-batch-requests 1; then
  $PY "$SRC/tests/e2e/serve_client.py" flood "$SERVER_URL" "$E" && ok || bad "serve_client.py flood"
  stop_server "$T/flood"
fi

# --- API keys ------------------------------------------------------------------------------------------
printf '# keys\nsk-test\n' > "$T/keys.txt"
if start_server "$T/auth" --model "$T/emb.brt" --api-key-file "$T/keys.txt"; then
  $PY "$SRC/tests/e2e/serve_client.py" auth "$SERVER_URL" "$E" && ok || bad "serve_client.py auth"
  stop_server "$T/auth"
fi

# --- refusals before any port opens -------------------------------------------------------------------
printf 'not a model' > "$T/bad.brt"
"$BIN" serve --model "$T/bad.brt" --port 0 > "$T/bad.out" 2> "$T/bad.err"
rc=$?
[ $rc -eq 1 ] && [ ! -s "$T/bad.out" ] && [ "$(wc -l < "$T/bad.err")" -eq 1 ] && grep -q "bad.brt" "$T/bad.err" \
  && ok || bad "a model that fails to load: exit $rc, stdout '$(cat "$T/bad.out")', stderr '$(cat "$T/bad.err")'"
expect_error "a model with no head serve can use" "" "bertrt serve serves sentence-embedding models" -- \
  "$BIN" serve --model "$T/base.brt" --port 0
"$BIN" serve --model a="$T/emb.brt" --model a="$T/ce.brt" --port 0 >/dev/null 2>&1
[ $? -eq 2 ] && ok || bad "two models of one name: a usage error (exit 2)"
"$BIN" serve --model "$T/emb.brt" --adapter nope="$T/emb.brt" --port 0 >/dev/null 2>&1
[ $? -eq 2 ] && ok || bad "--adapter for no model: a usage error (exit 2)"
printf '# none\n' > "$T/nokeys.txt"
expect_error "an API key file without keys" "" "no key in it" -- \
  "$BIN" serve --model "$T/emb.brt" --api-key-file "$T/nokeys.txt" --port 0

echo "serve_test: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
