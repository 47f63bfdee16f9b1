#!/usr/bin/env bash
# Peak RSS of pre-training: `bertrt pretrain` for BERT-mini, small and base at batch 8,
# seq 128, a few steps, with and without the memory options, beside Debian PyTorch
# (/usr/bin/python3, bench/torch_pretrain_memory.py: the same model in plain torch, fp32, AdamW,
# same B/T, same options via requires_grad=False / torch.utils.checkpoint). Peak RSS from
# /usr/bin/time -v; both use 2 threads. Prints a side-by-side table (wall time includes start-up:
# reading the 2 MB corpus for bertrt, importing torch for PyTorch).
# Usage: bench/pretrain_memory.sh BERTRT_BINARY [DATA_DIR] [PRESETS...]   (default: mini small base)
# BENCH_TORCH=0 skips the PyTorch runs (their column shows "-").
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
. "$(dirname "$0")/lib_checks.sh"
USAGE="usage: $0 BERTRT_BINARY [DATA_DIR] [PRESETS...]   env: BENCH_TORCH=1 (0: no PyTorch runs)
  DATA_DIR default: bench/../../shared/data (the vocab, corpus/enwiki); PRESETS: mini small base
example: BENCH_TORCH=0 $0 build/bertrt ../shared/data mini"
need_args 1 "$@"
need_exe BERTRT_BINARY "$1"
BIN=$(realpath "$1")
DATA=${2:-$(dirname "$0")/../../shared/data}
# The default is relative to this script: a clone elsewhere has to name its data folder.
need_dir DATA_DIR "$DATA" "give the data folder as the second argument: $0 $1 DATA_DIR [PRESETS...]"
need_file DATA_DIR/corpus "$DATA/corpus/enwiki/enwiki_train_20MB.txt"
need_file DATA_DIR/vocab "$DATA/vocab/bert-base-uncased-vocab.txt"
shift $(( $# >= 2 ? 2 : 1 ))
PRESETS=("$@"); [ ${#PRESETS[@]} -eq 0 ] && PRESETS=(mini small base)
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
head -c 2000000 "$DATA/corpus/enwiki/enwiki_train_20MB.txt" > "$T/corpus.txt"
export OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 BERTRT_NUM_THREADS=2

layers() { case $1 in mini|small) echo 4;; base) echo 12;; tiny) echo 2;; medium) echo 8;; esac; }
steps() { [ "$1" = base ] && echo 2 || echo 3; }
peak_mb() { sed -n 's/.*Maximum resident set size (kbytes): //p' "$1" | awk '{printf "%.0f", $1/1024}' | grep . || echo -; }
secs() { sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$1" | grep . || echo -; }

printf '%-6s %-50s %10s %10s %10s %10s\n' model options "bertrt MB" "torch MB" "bertrt s" "torch s"
for p in "${PRESETS[@]}"; do
  "$BIN" init --preset "$p" --vocab "$DATA/vocab/bert-base-uncased-vocab.txt" -o "$T/$p.brt" > /dev/null
  half=$(( $(layers "$p") / 2 ))
  # The last adds dynamic masking: its data stream holds one copy of each example, not the
  # default dupe factor's 10 (about 20 MB at the default 500-document shard).
  for opts in "" "--recompute" "--freeze-embeddings --freeze-layers $half" \
              "--freeze-embeddings --freeze-layers $half --recompute" \
              "--freeze-embeddings --freeze-layers $half --recompute --dynamic-masking"; do
    # shellcheck disable=SC2086
    /usr/bin/time -v "$BIN" pretrain --model "$T/$p.brt" --corpus "$T/corpus.txt" --batch-size 8 \
      --max-seq-length 128 --max-steps "$(steps "$p")" $opts -o "$T/out.brt" > /dev/null 2> "$T/b.time"
    : > "$T/t.time"
    # shellcheck disable=SC2086
    [ "${BENCH_TORCH:-1}" = 0 ] || /usr/bin/time -v /usr/bin/python3 "$HERE/torch_pretrain_memory.py" \
      --preset "$p" --batch-size 8 --seq-len 128 --steps "$(steps "$p")" $opts > /dev/null 2> "$T/t.time"
    printf '%-6s %-50s %10s %10s %10s %10s\n' "$p" "${opts:-(none)}" "$(peak_mb "$T/b.time")" \
      "$(peak_mb "$T/t.time")" "$(secs "$T/b.time")" "$(secs "$T/t.time")"
  done
done
