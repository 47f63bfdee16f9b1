#!/usr/bin/env bash
# End-to-end checks of `bertrt search` and `bertrt embed --precision` on a small random model
# (bertrt init, mean pooling): search's hits are the brute-force cosine neighbours of `bertrt
# embed`'s embeddings; the index is reused, and refused (naming the file and what differs) when
# the model, corpus or options changed or the file is damaged, until --rebuild; the quantized
# outputs agree between JSON and .npy and with numpy's packbits. The codes against
# sentence-transformers' quantize_embeddings are tests/unit/embedding_precision_test.cpp's.
# Usage: search_test.sh BERTRT_BINARY DATA_DIR
set -uo pipefail
source "$(dirname "$0")/harness.sh"
PY=/usr/bin/python3
"$PY" -c "import numpy" 2>/dev/null || { echo "SKIP: python3-numpy missing"; exit 0; }

expect_ok "init model" "$BIN" init --preset tiny --vocab "$VOCAB" -o "$T/m.brt"
expect_ok "init other model" "$BIN" init --preset tiny --vocab "$VOCAB" --seed 7 -o "$T/m2.brt"
cat > "$T/corpus.txt" <<'EOF'
the cat sat on the mat
a dog barked at the mailman all night
stocks fell sharply after the report
the kitten slept on a warm rug

rain is expected over the weekend
the central bank raised interest rates
a puppy chased the ball in the park
new phones were announced at the fair
the river flooded the low fields
EOF
printf 'where is the cat\nmarket news\nweather tomorrow\n' > "$T/queries.txt"
S=("$BIN" search --model "$T/m.brt" --corpus "$T/corpus.txt" --pooling mean)

# --- hits equal brute-force cosine over `bertrt embed` ----------------------------------------------
"${S[@]}" --top-k 4 < "$T/queries.txt" > "$T/hits.jsonl" 2>"$T/stderr" \
  && grep -q "indexed 10 passages (128 dimensions) into $T/corpus.txt.bertrt-index" "$T/stderr" \
  && ok || bad "first search builds the index: $(cat "$T/stderr")"
expect_ok "embed corpus" "$BIN" embed --model "$T/m.brt" --pooling mean --input "$T/corpus.txt" --output "$T/c.npy"
expect_ok "embed queries" "$BIN" embed --model "$T/m.brt" --pooling mean --input "$T/queries.txt" --output "$T/q.npy"
# Scores are inner products of unit vectors of 128 float32 values, summed in another order (and
# embedded in other batches) than numpy's: |Δ| ≤ 128 ulps of 1 ≈ 1.5e-5 at worst; 2e-5 allows it.
"$PY" - "$T" <<'EOF' && ok || bad "search hits differ from brute-force cosine"
import json, sys
import numpy as np
t = sys.argv[1]
c, q = np.load(f"{t}/c.npy"), np.load(f"{t}/q.npy")
texts = open(f"{t}/corpus.txt", encoding="utf-8").read().split("\n")[:len(c)]
queries = open(f"{t}/queries.txt", encoding="utf-8").read().split("\n")[:len(q)]
lines = [json.loads(l) for l in open(f"{t}/hits.jsonl", encoding="utf-8")]
assert len(lines) == len(q), lines
for qi, line in enumerate(lines):
    assert line["query"] == queries[qi] and list(line) == ["query", "hits"], line
    s = c @ q[qi]
    hits = line["hits"]
    assert len(hits) == 4 and all(list(h) == ["index", "score", "text"] for h in hits), hits
    for h in hits:
        assert abs(h["score"] - s[h["index"]]) < 2e-5, (h, s[h["index"]])
        assert h["text"] == texts[h["index"]], h
    got = [h["score"] for h in hits]
    assert got == sorted(got, reverse=True), got
    fourth = np.sort(s)[::-1][3]
    assert min(got) >= fourth - 2e-5, (got, fourth)  # no better passage left out
    assert len({h["index"] for h in hits}) == 4
EOF

# --- the index is reused, and refused when what it was built from changed -----------------------------
cp "$T/corpus.txt.bertrt-index" "$T/index.orig"
"${S[@]}" --top-k 2 < "$T/queries.txt" > "$T/hits2.jsonl" 2>"$T/stderr" \
  && ! grep -q indexed "$T/stderr" && [ "$(wc -l < "$T/hits2.jsonl")" -eq 3 ] \
  && ok || bad "second search reuses the index: $(cat "$T/stderr")"
expect_error "another model" "" "corpus.txt.bertrt-index was built from other inputs: the model file \(indexed: .*--rebuild" -- \
  "$BIN" search --model "$T/m2.brt" --corpus "$T/corpus.txt" --pooling mean
cmp -s "$T/corpus.txt.bertrt-index" "$T/index.orig" && ok || bad "a refused search changed the index"
expect_error "other options" "" "the embed options \(indexed: .*\"dimensions\":0.*now: .*\"dimensions\":32" -- \
  "${S[@]}" --dimensions 32
cp "$T/corpus.txt" "$T/corpus.bak"
echo "one more passage" >> "$T/corpus.txt"
expect_error "changed corpus" "" "the corpus file \(indexed: [0-9]+ bytes" -- "${S[@]}"
"${S[@]}" --rebuild < "$T/queries.txt" > /dev/null 2>"$T/stderr" \
  && grep -q "indexed 11 passages" "$T/stderr" && ok || bad "--rebuild: $(cat "$T/stderr")"
cp "$T/corpus.bak" "$T/corpus.txt"
head -c 300 "$T/index.orig" > "$T/corpus.txt.bertrt-index"
expect_error "truncated index" "" "corpus.txt.bertrt-index: [0-9]+ bytes, but its header .* truncated.*--rebuild" -- "${S[@]}"
printf 'not an index at all, but long enough to hold a header of fifty-six bytes\n' > "$T/corpus.txt.bertrt-index"
expect_error "foreign index" "" "corpus.txt.bertrt-index: not a bertrt embedding index" -- "${S[@]}"
"${S[@]}" --index "$T/other.index" < "$T/queries.txt" > /dev/null 2>&1 && [ -f "$T/other.index" ] \
  && ok || bad "--index PATH"
: > "$T/empty.txt"
expect_error "empty corpus" "" "--corpus .*empty.txt: no passages" -- \
  "$BIN" search --model "$T/m.brt" --corpus "$T/empty.txt" --pooling mean
expect_error "index over the model" "" "--index" -- \
  "$BIN" search --model "$T/m.brt" --corpus "$T/corpus.txt" --pooling mean --index "$T/m.brt"

# --- embed --precision --------------------------------------------------------------------------------
for p in int8 uint8 binary ubinary; do
  expect_ok "embed --precision $p json" "$BIN" embed --model "$T/m.brt" --pooling mean \
    --input "$T/corpus.txt" --precision $p
  cp "$T/stdout" "$T/$p.jsonl"
  expect_ok "embed --precision $p npy" "$BIN" embed --model "$T/m.brt" --pooling mean \
    --input "$T/corpus.txt" --precision $p --output "$T/$p.npy"
done
expect_ok "embed --calibration" "$BIN" embed --model "$T/m.brt" --pooling mean --input "$T/queries.txt" \
  --precision uint8 --calibration "$T/corpus.txt" --output "$T/qcal.npy"
"$PY" - "$T" <<'EOF' && ok || bad "quantized outputs disagree"
import json, sys
import numpy as np
t = sys.argv[1]
c = np.load(f"{t}/c.npy")
want = {"int8": (np.int8, 128), "uint8": (np.uint8, 128), "binary": (np.int8, 16),
        "ubinary": (np.uint8, 16)}
for p, (dtype, width) in want.items():
    m = np.load(f"{t}/{p}.npy")
    assert m.dtype == dtype and m.shape == (len(c), width), (p, m.dtype, m.shape)
    rows = [json.loads(l)["embedding"] for l in open(f"{t}/{p}.jsonl")]
    assert np.array_equal(np.array(rows), m.astype(int)), p
ub = np.load(f"{t}/ubinary.npy")
assert np.array_equal(ub, np.packbits(c > 0, axis=-1))
assert np.array_equal(np.load(f"{t}/binary.npy"), (ub.astype(int) - 128).astype(np.int8))
# int8 = uint8 − 128 over the same ranges (the inputs' own), each dimension's ends at 0 and 255.
u8, i8 = np.load(f"{t}/uint8.npy").astype(int), np.load(f"{t}/int8.npy").astype(int)
assert np.abs(i8 - (u8 - 128)).max() <= 1
assert (u8.min(axis=0) == 0).all() and (u8.max(axis=0) >= 254).all()
assert np.load(f"{t}/qcal.npy").shape == (3, 128)
EOF
"$BIN" embed --model "$T/m.brt" --pooling mean --input "$T/corpus.txt" --precision int8 \
  > /dev/null 2>"$T/stderr" && grep -q "int8 ranges from the 10 input embeddings themselves" "$T/stderr" \
  && ok || bad "the notice on ranges from few inputs: $(cat "$T/stderr")"
expect_error "--calibration with binary" "" "--calibration sets int8/uint8 ranges; --precision is binary" -- \
  "$BIN" embed --model "$T/m.brt" --pooling mean --input "$T/queries.txt" --precision binary \
  --calibration "$T/corpus.txt"
expect_error "unknown precision" "" "--precision" -- \
  "$BIN" embed --model "$T/m.brt" --pooling mean --input "$T/queries.txt" --precision fp16

echo "search e2e: $pass passed, $fail failed"
[ $fail -eq 0 ]
