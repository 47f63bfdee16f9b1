#!/usr/bin/env python3
"""Statistics of the data a `bertrt pretrain` run trained on, against the rules of
google-research/bert create_pretraining_data.py. Reads the run's
`--dump-instances` file (instance_dump.py) and the vocab; no port of the builder, only counts:

  chosen        masked positions per sequence = min(max_predictions, max(1, round(n · 0.15))),
                n = len(tokens) with [CLS] and [SEP] (create_masked_lm_predictions), checked
                for every sequence (not for --whole-word-mask runs, where a word that would
                overflow is skipped); never a [CLS]/[SEP] position
  [MASK] / random / kept among the chosen: 80 / 10 / 10 %. A "random" replacement that draws
                the original id counts as kept, as it would in the reference (p ≈ 1/vocab).
  random ids that are special ([PAD] [UNK] [CLS] [SEP] [MASK]) or [unusedN]: the reference
                draws uniformly from the whole vocab (rng.randint(0, len(vocab_words) - 1)), so
                the expected share is (specials + unused) / vocab_size
  NSP random next (label 1): at least 50 % (NSP runs): the coin gives 50 %, and a chunk of one
                segment always gets a random next (`if len(current_chunk) == 1 or rng.random()
                < 0.5`), so the share is above ½ by the corpus' share of such chunks: checked
                one-sided
  lengths       histogram; sequences shorter than max_seq_length (short targets, document ends)

With --check, each share is tested against its rule at Z standard errors of the binomial at the
sample size (default 5: a false alarm about once in 1.7 million per share), exit 1 when one fails.
"""
import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from instance_dump import read_instances  # noqa: E402


def py_round_half_even(x):
    return int(round(x))  # Python 3 round: half to even, as the reference's round()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("instances")
    ap.add_argument("--vocab", required=True)
    ap.add_argument("--masked-lm-prob", type=float, default=0.15)
    ap.add_argument("--max-predictions-per-seq", type=int, default=20)
    ap.add_argument("--check", action="store_true", help="assert each share within --z sigma")
    ap.add_argument("--z", type=float, default=5.0)
    ap.add_argument("--json", help="also write the table as JSON here")
    args = ap.parse_args()

    vocab = [line.rstrip("\n") for line in open(args.vocab, encoding="utf-8")]
    ids = {t: i for i, t in enumerate(vocab)}
    V = len(vocab)
    specials = {ids[t] for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]") if t in ids}
    unused = {i for i, t in enumerate(vocab) if t.startswith("[unused") and t.endswith("]")}
    odd = specials | unused
    cls_id, sep_id, mask_id = ids["[CLS]"], ids["[SEP]"], ids["[MASK]"]

    header, records = read_instances(args.instances)
    T = header["seq_len"]
    seqs = chosen = masked = kept = rand = rand_odd = 0
    count_rule_ok = 0
    nsp_total = nsp_random = 0
    lengths = []
    for r in records:
        inp, att = r["input_ids"], r["attention_mask"]
        pos, orig = r["masked_lm_positions"], r["masked_lm_ids"]
        row_of = pos // T
        for b in range(inp.shape[0]):
            n = int(att[b].sum())
            lengths.append(n)
            p = int((row_of == b).sum())
            want = min(args.max_predictions_per_seq,
                       max(1, py_round_half_even(n * args.masked_lm_prob)))
            count_rule_ok += p == want
            seqs += 1
        now = inp.reshape(-1)[pos]
        chosen += len(pos)
        masked += int((now == mask_id).sum())
        kept += int((now == orig).sum())
        is_rand = (now != mask_id) & (now != orig)
        rand += int(is_rand.sum())
        rand_odd += int(np.isin(now[is_rand], list(odd)).sum())
        # [CLS]/[SEP] are never chosen by the reference
        if np.isin(orig, [cls_id, sep_id]).any():
            sys.exit("a [CLS] or [SEP] position was chosen for MLM")
        lab = r["next_sentence_labels"]
        nsp_total += int((lab >= 0).sum())
        nsp_random += int((lab == 1).sum())
    tokens = sum(lengths)
    lengths = np.array(lengths)

    rows = []  # (what, observed count, trials, expected p or None, one-sided: at least p)

    def row(what, k, n, p, at_least=False):
        rows.append((what, k, n, p, at_least))

    row("chosen / tokens", chosen, tokens, None)
    row("sequences with the reference's masked count", count_rule_ok, seqs, 1.0)
    row("[MASK] among chosen", masked, chosen, 0.8)
    # kept = the 10 % kept + random draws of the original id (p 1/V each)
    row("kept among chosen", kept, chosen, 0.1 + 0.1 / V)
    row("random among chosen", rand, chosen, 0.1 * (1 - 1 / V))
    row("special or [unusedN] among random ids", rand_odd, rand, len(odd) / V)
    if nsp_total:
        row("NSP random next (label 1), at least", nsp_random, nsp_total, 0.5, True)
    row(f"sequences shorter than {T}", int((lengths < T).sum()), seqs, None)

    failed = []
    print(f"{args.instances}: {seqs} sequences, {tokens} tokens, {chosen} chosen, vocab {V} "
          f"({len(specials)} special + {len(unused)} [unusedN])")
    print(f"| {'share':<44} | {'observed':>9} | {'of':>8} | {'rule':>8} | {'z':>6} |")
    print(f"|{'-' * 46}|{'-' * 11}|{'-' * 10}|{'-' * 10}|{'-' * 8}|")
    table = []
    for what, k, n, p, at_least in rows:
        obs = k / n if n else float("nan")
        z = ""
        if p is not None and n:
            if p in (0.0, 1.0):
                z_val = 0.0 if k == round(p * n) else float("inf")
            else:
                z_val = (obs - p) / math.sqrt(p * (1 - p) / n)
            z = f"{z_val:+.2f}"
            if args.check and (-z_val if at_least else abs(z_val)) > args.z:
                failed.append(what)
        print(f"| {what:<44} | {obs:>9.5f} | {n:>8} | {'' if p is None else f'{p:.5f}':>8} | {z:>6} |")
        table.append({"share": what, "observed": obs, "count": k, "of": n, "rule": p})
    edges = [0, 16, 32, 48, 64, 80, 96, 112, T, T + 1]
    hist, _ = np.histogram(lengths, bins=edges)
    print("length histogram: " + ", ".join(
        f"[{edges[i]},{edges[i + 1]}): {hist[i]}" for i in range(len(hist)) if hist[i]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": table, "length_histogram": {
                f"[{edges[i]},{edges[i + 1]})": int(hist[i]) for i in range(len(hist))}}, f, indent=1)
    if failed:
        sys.exit(f"outside {args.z} sigma of the rule: {', '.join(failed)}")


if __name__ == "__main__":
    main()
