"""quickstart: classify sentences with a fine-tuned model from Python.

With an installed bertrt (cmake --install build --prefix PREFIX), point PYTHONPATH at the
folder the install put the module in (PREFIX/lib/python3.X/dist-packages for Debian's python3,
PREFIX/lib/python3.X/site-packages for others; NumPy is needed):
    PYTHONPATH=PREFIX/lib/python3.11/dist-packages python3 quickstart.py sst2.brt "a gorgeous, witty movie"
prints, for each sentence, the label and each class's probability:
    a gorgeous, witty movie -> positive
      negative 0.0312
      positive 0.9688
"""
import sys

import bertrt

if len(sys.argv) < 3:
    print(f"usage: {sys.argv[0]} MODEL.brt SENTENCE...", file=sys.stderr)
    sys.exit(2)
texts = sys.argv[2:]
try:
    model = bertrt.Model(sys.argv[1])  # bertrt.Error names the file and what is wrong with it
    predictions = model.predict(texts)
except bertrt.Error as e:
    sys.exit(f"quickstart: {e}")
for text, p in zip(texts, predictions):
    if "score" in p:  # a regression model (stsb)
        print(f"{text} -> {p['score']:.4f}")
        continue
    print(f"{text} -> {p['label']}")
    for label, probability in p["probabilities"].items():
        print(f"  {label} {probability:.4f}")
