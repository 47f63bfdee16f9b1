#!/usr/bin/env python3
"""Reference BERT tokenization: google-research/bert tokenization.py (BasicTokenizer +
WordpieceTokenizer, restated) plus Hugging Face's handling of special tokens (split out of the text
case-sensitively before anything else, never split, not WordPiece'd).

usage: bert_tokenizer_ref.py VOCAB (--lower|--cased) < lines > lines
Each input line (UTF-8, decoded with errors="ignore") is tokenized; the output line holds the
WordPiece ids separated by spaces. Used by tests/unit/tokenizer_test.cpp and for cross-checks.
"""
import sys
import unicodedata

SPECIALS = ["[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"]


def is_whitespace(c):
    return c in " \t\n\r" or unicodedata.category(c) == "Zs"


def is_control(c):
    return c not in "\t\n\r" and unicodedata.category(c) in ("Cc", "Cf")


def is_punctuation(c):
    cp = ord(c)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(c).startswith("P")


def is_chinese_char(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or
            0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or
            0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def basic_tokenize(text, lower):
    out = []
    for c in text:
        cp = ord(c)
        if cp == 0 or cp == 0xFFFD or is_control(c):
            continue
        if is_whitespace(c):
            out.append(" ")
        elif is_chinese_char(cp):
            out.append(" " + c + " ")
        else:
            out.append(c)
    tokens = []
    for token in "".join(out).split():
        if lower:
            token = token.lower()
            token = "".join(c for c in unicodedata.normalize("NFD", token)
                            if unicodedata.category(c) != "Mn")
        word = ""
        for c in token:
            if is_punctuation(c):
                if word:
                    tokens.append(word)
                tokens.append(c)
                word = ""
            else:
                word += c
        if word:
            tokens.append(word)
    return tokens


def wordpiece(token, vocab, max_chars=100):
    if len(token) > max_chars:
        return ["[UNK]"]
    pieces, start = [], 0
    while start < len(token):
        end, cur = len(token), None
        while start < end:
            sub = ("##" if start > 0 else "") + token[start:end]
            if sub in vocab:
                cur = sub
                break
            end -= 1
        if cur is None:
            return ["[UNK]"]
        pieces.append(cur)
        start = end
    return pieces


def split_specials(text):
    """Yields (is_special, stretch) in order: the leftmost, longest special token match first."""
    i = start = 0
    while i < len(text):
        hit = max((s for s in SPECIALS if text.startswith(s, i)), key=len, default=None)
        if hit:
            yield False, text[start:i]
            yield True, hit
            i += len(hit)
            start = i
        else:
            i += 1
    yield False, text[start:]


def tokenize(text, vocab, lower):
    out = []
    for special, stretch in split_specials(text):
        if special:
            out.append(stretch)
        else:
            for token in basic_tokenize(stretch, lower):
                out.extend(wordpiece(token, vocab))
    return out


def main():
    vocab = {}
    with open(sys.argv[1], encoding="utf-8") as f:
        for i, line in enumerate(f):
            vocab[line.rstrip("\r\n")] = i
    lower = sys.argv[2] == "--lower"
    for raw in sys.stdin.buffer:
        text = raw.rstrip(b"\n").decode("utf-8", "ignore")
        ids = [vocab.get(t, vocab["[UNK]"]) for t in tokenize(text, vocab, lower)]
        sys.stdout.write(" ".join(map(str, ids)) + "\n")


if __name__ == "__main__":
    main()
