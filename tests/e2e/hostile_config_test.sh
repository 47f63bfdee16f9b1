#!/usr/bin/env bash
# Hostile configs against real checkpoints (../shared/ckpt): a config.json / bert_config.json whose
# dimensions disagree with the weights must fail at once, with one error line naming the config,
# and with small peak memory — the dimensions are checked against the weights present before
# anything proportional to them is allocated (io/config_check.h).
# Usage: hostile_config_test.sh BERTRT_CONVERT CKPT_DIR
set -uo pipefail
CONV=$1 CKPT=$2
if [ ! -d "$CKPT/hf/inference-server_tiny_bert" ]; then
  if [ "${BERTRT_REQUIRE_DATA:-0}" = 1 ]; then echo "required checkpoints missing: $CKPT"; exit 1; fi
  echo "SKIP: checkpoints missing ($CKPT)"; exit 0
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# Peak memory bound. Before the checks, num_hidden_layers = 100000 on inference-server_tiny_bert
# made the converter build a 1.6 M-entry parameter layout before it reached the weights (measured:
# 1.19 GB, 6.3 s on a loaded machine); the model itself would need 100000 × (4·H² + 2·H·I) floats
# = 3.3 GB for H 32, I 64. The refusals peak at 7 MB (37 MB in the ASan build: shadow memory), as
# the honest conversion of that folder does, so 200 MB is far below what the bad dimension implies
# and far above an honest run.
MAX_KB=$((200 * 1024))

# hostile NAME SRC_DIR CONFIG_FILE PYTHON_EDIT PATTERN [EXTRA ARGS...]: copy SRC_DIR, apply the
# edit to its config (a Python expression on dict c), convert: exit 1, one error line matching
# PATTERN, no output file, max RSS under MAX_KB.
hostile() {
  local name=$1 src=$2 cfg=$3 edit=$4 pattern=$5; shift 5
  rm -rf "$T/in"; cp -r "$src" "$T/in"
  /usr/bin/python3 -c "import json,sys; p='$T/in/$cfg'; c=json.load(open(p)); $edit; json.dump(c, open(p,'w'))" \
    || { bad "$name: cannot edit $cfg"; return; }
  /usr/bin/time -f '%M' -o "$T/rss" "$CONV" "$T/in" -o "$T/out.brt" "$@" >"$T/stdout" 2>"$T/stderr" </dev/null
  local rc=$? rss
  rss=$(tail -1 "$T/rss")
  if [ $rc -ne 1 ]; then bad "$name: exit $rc, expected 1: $(head -3 "$T/stderr")"; return; fi
  if ! grep -qE -- "$pattern" "$T/stderr"; then bad "$name: stderr lacks /$pattern/: $(cat "$T/stderr")"; return; fi
  if [ "$(grep -c 'error' "$T/stderr")" != 1 ]; then bad "$name: not one error line: $(cat "$T/stderr")"; return; fi
  if [ -e "$T/out.brt" ]; then bad "$name: left the output behind"; return; fi
  if [ "$rss" -gt $MAX_KB ]; then bad "$name: max RSS $rss kB > $MAX_KB kB"; return; fi
  echo "$name: $(grep error "$T/stderr" | cut -c1-160) [max RSS $((rss / 1024)) MB]"
  ok
}

ST=$CKPT/hf/inference-server_tiny_bert     # safetensors
ZIP=$CKPT/hf/camphr_ner_bert               # torch.save zip
LEG=$CKPT/hf/camphr_bert_2019-10-20a       # torch.save legacy (no vocab.txt)
TF=$CKPT/tf1/keras-bert-tiny               # original TF1 bundle
VOC=$ZIP/vocab.txt

# The issue's example (100000 layers) is above the 4096-layer limit; 4000 passes the limit and is
# refuted by the weights.
hostile st-layers "$ST" config.json "c['num_hidden_layers']=100000" \
  "config.json .*num_hidden_layers = 100000 exceeds the supported maximum 4096"
hostile st-layers-4000 "$ST" config.json "c['num_hidden_layers']=4000" \
  "config.json .*num_hidden_layers = 4000, but the weights have 2 layer"
hostile st-layers-max "$ST" config.json "c['num_hidden_layers']=2**31-1" "num_hidden_layers = 2147483647 exceeds"
hostile st-vocab "$ST" config.json "c['vocab_size']=2**30" "vocab_size = 1073741824 exceeds"
hostile st-vocab-shape "$ST" config.json "c['vocab_size']=1000000" \
  "word_embeddings.weight' has shape \[256, 32\], but .*config.json implies \[1000000, 32\]"
hostile st-positions "$ST" config.json "c['max_position_embeddings']=1000000" "position_embeddings.weight' has shape"
hostile st-intermediate "$ST" config.json "c['intermediate_size']=1000000" "intermediate.dense.weight' has shape"
hostile st-labels "$ST" config.json "c['architectures']=['BertForSequenceClassification']; c['num_labels']=2**31-1" \
  "num_labels' = 2147483647 exceeds the supported maximum"
hostile zip-layers "$ZIP" config.json "c['num_hidden_layers']=4000" "num_hidden_layers = 4000, but the weights have"
hostile zip-hidden "$ZIP" config.json "c['hidden_size']=65536; c['num_attention_heads']=1" "has shape"
hostile legacy-layers "$LEG" config.json "c['num_hidden_layers']=4000" "num_hidden_layers = 4000, but the weights have" \
  --vocab "$VOC"
hostile tf1-layers "$TF" bert_config.json "c['num_hidden_layers']=4000" "bert_config.json: config num_hidden_layers = 4000, but the weights have 2"
hostile tf1-vocab "$TF" bert_config.json "c['vocab_size']=10000000" "'bert/embeddings/word_embeddings' has shape \[15, 4\], but bert_config.json implies \[10000000, 4\]"

echo "hostile_config_test: $pass passed, $fail failed"
[ $fail -eq 0 ]
