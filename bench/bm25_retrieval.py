#!/usr/bin/env python3
"""SQuAD paragraph retrieval by BM25 (Debian's python3-xapian), and BM25 + dense by reciprocal
rank fusion, scored as `bertrt eval --task retrieval` scores a dense model: each question a
query, every distinct paragraph of the chosen articles a document, the question's own paragraph
the one relevant document; nDCG@10, MRR@10, recall@1 and recall@10 from the rank of the
relevant document (a document scoring the same counted below it).

  bm25_retrieval.py --data SQUAD.json --articles 30-39 --write-texts DIR
      writes DIR/queries.txt and DIR/corpus.txt, one text a line, for `bertrt embed`
  bm25_retrieval.py --data SQUAD.json --articles 30-39 [--queries Q.npy --corpus C.npy]
      prints one JSON object: BM25's metrics and, given the embeddings (`bertrt embed --output`),
      the hybrid's (RRF, k = 60)
"""
import argparse
import json
import math
import os

import numpy as np
import xapian


def load(path, articles):
    first, last = (int(x) for x in (articles.split("-") + [articles])[:2])
    data = json.load(open(path, encoding="utf-8"))["data"]
    queries, corpus, relevant, index = [], [], [], {}
    for a, article in enumerate(data):
        if not first <= a <= last:
            continue
        for p in article["paragraphs"]:
            ctx = p["context"]
            if ctx not in index:
                index[ctx] = len(corpus)
                corpus.append(ctx)
            for q in p["qas"]:
                queries.append(q["question"])
                relevant.append(index[ctx])
    return queries, corpus, relevant


def bm25_scores(queries, corpus):
    db = xapian.WritableDatabase("", xapian.DB_BACKEND_INMEMORY)
    tg = xapian.TermGenerator()
    tg.set_stemmer(xapian.Stem("english"))
    for i, text in enumerate(corpus):
        doc = xapian.Document()
        tg.set_document(doc)
        tg.index_text(text)
        db.replace_document(i + 1, doc)
    qp = xapian.QueryParser()
    qp.set_stemmer(xapian.Stem("english"))
    qp.set_stemming_strategy(xapian.QueryParser.STEM_SOME)
    qp.set_default_op(xapian.Query.OP_OR)
    enquire = xapian.Enquire(db)
    enquire.set_weighting_scheme(xapian.BM25Weight())  # Xapian's defaults: k1 1, b 0.5
    out = np.zeros((len(queries), len(corpus)))
    for qi, q in enumerate(queries):
        enquire.set_query(qp.parse_query(q))
        for m in enquire.get_mset(0, len(corpus)):
            out[qi, m.docid - 1] = m.weight
    return out


def ranks_of(scores, relevant):
    return [1 + int(np.sum(np.delete(s, r) > s[r])) for s, r in zip(scores, relevant)]


def metrics(ranks):
    n = len(ranks)
    return {"cosine_ndcg@10": sum(1 / math.log2(r + 1) for r in ranks if r <= 10) / n,
            "cosine_mrr@10": sum(1 / r for r in ranks if r <= 10) / n,
            "cosine_recall@1": sum(r <= 1 for r in ranks) / n,
            "cosine_recall@10": sum(r <= 10 for r in ranks) / n}


def rrf(*score_sets, k=60):
    fused = np.zeros_like(score_sets[0])
    for s in score_sets:
        order = np.argsort(-s, axis=1, kind="stable")
        ranks = np.empty_like(order)
        rows = np.arange(s.shape[0])[:, None]
        ranks[rows, order] = np.arange(1, s.shape[1] + 1)[None, :]
        fused += 1.0 / (k + ranks)
    return fused


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True)
    ap.add_argument("--articles", required=True)
    ap.add_argument("--write-texts")
    ap.add_argument("--queries")
    ap.add_argument("--corpus")
    a = ap.parse_args()
    queries, corpus, relevant = load(a.data, a.articles)
    if a.write_texts:
        os.makedirs(a.write_texts, exist_ok=True)
        for name, texts in (("queries", queries), ("corpus", corpus)):
            with open(os.path.join(a.write_texts, name + ".txt"), "w", encoding="utf-8") as f:
                f.write("".join(t.replace("\n", " ") + "\n" for t in texts))
        return
    bm25 = bm25_scores(queries, corpus)
    out = {"queries": len(queries), "corpus": len(corpus), "bm25": metrics(ranks_of(bm25, relevant))}
    if a.queries and a.corpus:
        dense = np.load(a.queries) @ np.load(a.corpus).T
        out["dense"] = metrics(ranks_of(dense, relevant))
        out["hybrid"] = metrics(ranks_of(rrf(bm25, dense), relevant))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
