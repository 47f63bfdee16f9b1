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


def main():
    if len(sys.argv) < 3:
        print(f"usage: {sys.argv[0]} MODEL.brt SENTENCE...", file=sys.stderr)
        return 2
    try:
        model = bertrt.Model(sys.argv[1])
        predictions = model.predict(sys.argv[2:])
    except bertrt.Error as e:
        print(f"quickstart: {e}", file=sys.stderr)
        return 1
    for text, p in zip(sys.argv[2:], predictions):
        if "score" in p:  # a regression model (stsb)
            print(f"{text} -> {p['score']:.4f}")
            continue
        print(f"{text} -> {p['label']}")
        for label, probability in p["probabilities"].items():
            print(f"  {label} {probability:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
