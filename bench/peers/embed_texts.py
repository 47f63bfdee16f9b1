#!/usr/bin/python3
"""Write a mix of SQuAD v1.1 paragraphs and questions, one text a line, for embedding benchmarks.

The first --paragraphs paragraphs of the file (in article order) and its first --questions
questions, shuffled together with a fixed seed: documents being indexed and queries against them
arrive mixed, as in a retrieval service. Whitespace (tabs, newlines) becomes single spaces, so a
line is one text. Prints the count of each kind on stderr.

--skip N leaves out the first N of each (e.g. calibration texts apart from the benchmark's).

usage: embed_texts.py --data SQUAD.json --paragraphs 200 --questions 200 [--skip 0] [--seed 0] > texts.txt
"""
import argparse
import json
import random
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="SQuAD v1.1 JSON")
    ap.add_argument("--paragraphs", type=int, default=200)
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--skip", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    paragraphs, questions = [], []
    for article in json.load(open(a.data, encoding="utf-8"))["data"]:
        for p in article["paragraphs"]:
            paragraphs.append(p["context"])
            questions.extend(q["question"] for q in p["qas"])
    paragraphs = paragraphs[a.skip:a.skip + a.paragraphs]
    questions = questions[a.skip:a.skip + a.questions]
    texts = [" ".join(t.split()) for t in paragraphs + questions]
    random.Random(a.seed).shuffle(texts)
    sys.stdout.write("".join(t + "\n" for t in texts))
    print(f"{len(paragraphs)} paragraphs, {len(questions)} questions", file=sys.stderr)


if __name__ == "__main__":
    main()
