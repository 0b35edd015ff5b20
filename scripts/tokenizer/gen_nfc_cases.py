#!/usr/bin/env python3
"""Write (to stdout) the NFC fixtures: [[input, NFC(input)], ...] from Python's unicodedata.

Usage: python3 gen_nfc_cases.py | gzip -9n > ../../llm/tokenizer/testdata/nfc_cases.json.gz
"""
import json, random, sys, unicodedata

rng = random.Random(7)
cases = []
decomposable = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF and unicodedata.normalize('NFD', chr(cp)) != chr(cp)]
marks = [cp for cp in range(0x300, 0x2000) if unicodedata.combining(chr(cp))] + [0x0F71, 0x0F72, 0x0F74, 0x302A, 0x1D165, 0x1D16D]
bases = list('aeiouAEIOUnNcCsSzZ') + ['\u03b1', '\u03c9', '\u0418', '\u0915', '\u09c7', '\u0b47', '\u0bc6', '\u0dd9', '\u1025', '\u30ab', '\u1100', '\u1161', '\u11a8', '\uac00', '\u00c5', '\u212b', ' ', '\n']
# Every decomposable code point, in decomposed, composed and mark-appended forms.
for cp in decomposable:
    ch = chr(cp)
    d = unicodedata.normalize('NFD', ch)
    for s in (ch, d, d + chr(rng.choice(marks)), chr(rng.choice(marks)) + ch):
        cases.append(s)
for _ in range(3000):
    s = ''.join(rng.choice(bases) if rng.random() < 0.45 else chr(rng.choice(marks)) for _ in range(rng.randint(1, 12)))
    cases.append(s)
json.dump([[s, unicodedata.normalize('NFC', s)] for s in cases], sys.stdout, ensure_ascii=False)
