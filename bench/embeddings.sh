#!/usr/bin/env bash
# Sentence-embedding fine-tuning on real data, from one starting model (a random BERT-tiny, or
# START=model.brt, e.g. a pre-trained one; mean pooling is added when it has no embedding head):
#   STS-B: dev cosine_spearman before and after CoSENT on STS-B train (EPOCHS epochs);
#   SQuAD paragraph retrieval: MNRL on the questions and paragraphs of articles 0–29, evaluated on
#   articles 30–39 (each question against their 410 paragraphs): nDCG@10, MRR@10, recall@1/@10
#   before and after, beside BM25 (Debian's python3-xapian) and BM25 + the dense model by
#   reciprocal rank fusion (bench/bm25_retrieval.py);
#   int8 (INT8=1, the default): each fine-tuned model quantized after training (PTQ, calibrated on
#   512 training texts) and fine-tuned again with --qat int8 from the same start, each evaluated
#   the same way, with the mean cosine of its embeddings to the fp32 model's on the dev texts.
# Usage: bench/embeddings.sh [WORKDIR]
#   env: BERTRT=build/bertrt BERTRT_DATA=../shared/data START= EPOCHS=1 BATCH=32 LR=1e-4 INT8=1
# Example: START=/tmp/pretrain/tiny.brt bench/embeddings.sh /tmp/embeddings
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
. "$(dirname "$0")/lib_checks.sh"
USAGE="usage: $0 [WORKDIR]   env: BERTRT=build/bertrt BERTRT_DATA=../shared/data START= EPOCHS=1 BATCH=32 LR=1e-4 INT8=1
example: START=/tmp/pretrain/tiny.brt $0 /tmp/embeddings"
need_args 0 "$@"
[ $# -le 1 ] || usage
BERTRT=${BERTRT:-build/bertrt}
DATA=${BERTRT_DATA:-../shared/data}
EPOCHS=${EPOCHS:-1}
BATCH=${BATCH:-32}
LR=${LR:-1e-4}
INT8=${INT8:-1}
need_exe BERTRT "$(command -v -- "$BERTRT" || echo "$BERTRT")"
B=$(realpath "$(command -v -- "$BERTRT" || echo "$BERTRT")")
need_dir BERTRT_DATA "$DATA" "set BERTRT_DATA"
DATA=$(realpath "$DATA")
SQUAD=$DATA/squad_v1.1/dev-v1.1-articles-00-39.json
need_file "STS-B train" "$DATA/glue/STS-B/train.tsv"
need_file "SQuAD" "$SQUAD"
/usr/bin/python3 -c "import xapian" 2>/dev/null || { echo "$0: needs Debian's python3-xapian (apt-get install python3-xapian)" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
W=${1:-/tmp/bertrt-embeddings}
mkdir -p "$W"
cd "$W"
if [ -n "${START:-}" ]; then
  cp "$START" start.brt
else
  "$B" init --preset tiny --vocab "$DATA/vocab/bert-base-uncased-vocab.txt" --seed 1 -o start.brt >/dev/null
fi
pool=()
"$B" info start.brt | grep -q '^embedding' || pool=(--pooling mean)
metric() { /usr/bin/python3 -c "import json,sys; print('%.4f' % json.loads(sys.stdin.read())['$1'])"; }

# STS-B
"$B" eval --model start.brt --task sts --data "$DATA/glue/STS-B/dev.tsv" --json "${pool[@]}" > sts0.json
sts_finetune() {  # OUT [finetune flags]
  local out=$1; shift
  "$B" finetune --task sentence-embedding --loss cosent --model start.brt "${pool[@]}" \
    --train "$DATA/glue/STS-B/train.tsv" --epochs "$EPOCHS" --batch-size 16 --learning-rate "$LR" \
    "$@" -o "$out" 2>"${out%.brt}.log"
}
sts_finetune sts.brt
"$B" eval --model sts.brt --task sts --data "$DATA/glue/STS-B/dev.tsv" --json > sts1.json

# SQuAD retrieval
"$B" eval --model start.brt --task retrieval --data "$SQUAD" --articles 30-39 --json "${pool[@]}" > ret0.json
ret_finetune() {  # OUT [finetune flags]
  local out=$1; shift
  "$B" finetune --task sentence-embedding --loss mnrl --model start.brt "${pool[@]}" --train "$SQUAD" \
    --train-articles 0-29 --epochs "$EPOCHS" --batch-size "$BATCH" --learning-rate "$LR" "$@" -o "$out" \
    2>"${out%.brt}.log"
}
ret_finetune ret.brt
"$B" eval --model ret.brt --task retrieval --data "$SQUAD" --articles 30-39 --json > ret1.json
/usr/bin/python3 "$HERE/bm25_retrieval.py" --data "$SQUAD" --articles 30-39 --write-texts texts
"$B" embed --model ret.brt --input texts/queries.txt --output q.npy 2>/dev/null
"$B" embed --model ret.brt --input texts/corpus.txt --output c.npy 2>/dev/null
if [ "$INT8" = 1 ]; then
  # PTQ of each fine-tuned model on 512 training texts; QAT from the same start, same steps.
  tail -n +2 "$DATA/glue/STS-B/train.tsv" | cut -f8,9 | tr '\t' '\n' > sts_train.txt
  head -n 512 sts_train.txt > sts_cal.txt
  "$B" quantize --model sts.brt --calibration sts_cal.txt -o sts_ptq.brt >/dev/null
  sts_finetune sts_qat.brt --qat int8
  head -n 512 texts/corpus.txt > ret_cal.txt
  "$B" quantize --model ret.brt --calibration ret_cal.txt -o ret_ptq.brt >/dev/null
  ret_finetune ret_qat.brt --qat int8
  tail -n +2 "$DATA/glue/STS-B/dev.tsv" | cut -f8,9 | tr '\t' '\n' > sts_dev.txt
  "$B" embed --model sts.brt --input sts_dev.txt --output sts_dev.npy 2>/dev/null
  for m in sts_ptq sts_qat ret_ptq ret_qat; do
    case $m in sts*) "$B" eval --model $m.brt --task sts --data "$DATA/glue/STS-B/dev.tsv" --json > $m.json
                     "$B" embed --model $m.brt --input sts_dev.txt --output $m.npy 2>/dev/null
                     ref=sts_dev.npy ;;
               *)    "$B" eval --model $m.brt --task retrieval --data "$SQUAD" --articles 30-39 --json > $m.json
                     "$B" embed --model $m.brt --input texts/corpus.txt --output $m.npy 2>/dev/null
                     ref=c.npy ;;
    esac
    /usr/bin/python3 -c "import numpy as np; print('%.4f' % (np.load('$m.npy') * np.load('$ref')).sum(1).mean())" > $m.cos
  done
fi
/usr/bin/python3 "$HERE/bm25_retrieval.py" --data "$SQUAD" --articles 30-39 --queries q.npy --corpus c.npy > bm25.json

echo "start: ${START:-random BERT-tiny (bertrt init --preset tiny --seed 1)}; $EPOCHS epoch(s), lr $LR"
printf '%-38s %10s\n' "STS-B dev" "spearman"
printf '%-38s %10s\n' "  before" "$(metric cosine_spearman < sts0.json)"
printf '%-38s %10s\n' "  after CoSENT on STS-B train" "$(metric cosine_spearman < sts1.json)"
if [ "$INT8" = 1 ]; then
  printf '%-38s %10s %12s\n' "" "" "cos to fp32"
  printf '%-38s %10s %12s\n' "  the same, PTQ int8" "$(metric cosine_spearman < sts_ptq.json)" "$(cat sts_ptq.cos)"
  printf '%-38s %10s %12s\n' "  CoSENT with --qat int8" "$(metric cosine_spearman < sts_qat.json)" "$(cat sts_qat.cos)"
fi
printf '%-38s %8s %8s %8s %8s\n' "SQuAD articles 30-39 retrieval" "nDCG@10" "MRR@10" "R@1" "R@10"
row() { printf '%-38s %8s %8s %8s %8s\n' "$1" "$(metric cosine_ndcg@10 < "$2")" \
  "$(metric cosine_mrr@10 < "$2")" "$(metric cosine_recall@1 < "$2")" "$(metric cosine_recall@10 < "$2")"; }
row "  dense, before" ret0.json
row "  dense, after MNRL on articles 0-29" ret1.json
if [ "$INT8" = 1 ]; then
  row "  the same, PTQ int8 (cos $(cat ret_ptq.cos))" ret_ptq.json
  row "  MNRL with --qat int8 (cos $(cat ret_qat.cos))" ret_qat.json
fi
/usr/bin/python3 -c "import json; print(json.dumps(json.load(open('bm25.json'))['bm25']))" > bm25only.json
/usr/bin/python3 -c "import json; print(json.dumps(json.load(open('bm25.json'))['hybrid']))" > hybrid.json
row "  BM25 (xapian)" bm25only.json
row "  BM25 + dense after (RRF)" hybrid.json
