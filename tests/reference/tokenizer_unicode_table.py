#!/usr/bin/env python3
"""Per-code-point reference for the BERT tokenizer's character rules, from Python 3's str and
unicodedata (the semantics google-research/bert tokenization.py runs on).

Writes one line per code point whose answer differs from the default (not whitespace, control,
punctuation or str.isspace; lower() and strip-accents identity; U+03A3 lowered as for a letter
that is neither cased nor case-ignorable):
    <hex cp> <flags> <lower> <strip> <sigma>
and one line "U <hex first> <hex last>" per range of code points unassigned (Cn) in this Python's
Unicode version, which the test skips (utf8proc may know a newer Unicode).
flags: W _is_whitespace, C _is_control, P _is_punctuation, S str.isspace;
lower / strip: hex code points joined by '.', '_' for the empty string, '-' for identity;
sigma: three 0/1 digits, whether U+03A3 lowers to final sigma in "A\u03a3cB", "A\u03a3c" and
"c\u03a3" (c the code point), which pins down Case_Ignorable and Cased as
CPython's Final_Sigma rule sees them.
Used by tests/unit/tokenizer_test.cpp (UnicodeRulesMatchPython).
"""
import sys
import unicodedata

SIGMA = "\u03a3"
FINAL = "\u03c2"


def is_whitespace(c):  # tokenization.py _is_whitespace
    return c in " \t\n\r" or unicodedata.category(c) == "Zs"


def is_control(c):  # tokenization.py _is_control
    return c not in "\t\n\r" and unicodedata.category(c) in ("Cc", "Cf")


def is_punctuation(c):  # tokenization.py _is_punctuation
    cp = ord(c)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(c).startswith("P")


def strip_accents(text):  # tokenization.py _run_strip_accents
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")


def hexs(s):
    return ".".join("%x" % ord(c) for c in s) or "_"  # "_": the empty string


def main():
    out = sys.stdout
    out.write("# unicodedata %s\n" % unicodedata.unidata_version)
    unassigned_from = None
    for cp in range(0x110001):
        c = chr(cp) if cp < 0x110000 else None
        if c is not None and unicodedata.category(c) == "Cn":
            if unassigned_from is None:
                unassigned_from = cp
            continue
        if unassigned_from is not None:
            out.write("U %x %x\n" % (unassigned_from, cp - 1))
            unassigned_from = None
        if c is None or 0xD800 <= cp <= 0xDFFF:
            continue
        flags = ""
        flags += "W" if is_whitespace(c) else ""
        flags += "C" if is_control(c) else ""
        flags += "P" if is_punctuation(c) else ""
        flags += "S" if c.isspace() else ""
        low = c.lower()
        stripped = strip_accents(c)
        sigma = "".join("1" if s else "0" for s in (
            ("A" + SIGMA + c + "B").lower()[1] == FINAL,
            ("A" + SIGMA + c).lower()[1] == FINAL,
            (c + SIGMA).lower()[-1] == FINAL))
        if flags or low != c or stripped != c or sigma != "110":
            out.write("%x %s %s %s %s\n" % (cp, flags or "-", hexs(low) if low != c else "-",
                                             hexs(stripped) if stripped != c else "-", sigma))


if __name__ == "__main__":
    main()
