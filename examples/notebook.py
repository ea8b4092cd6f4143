"""Sweep the bundled fixtures from Python and look at the result.

Run from a checkout, with the wheel installed (see the README, "From Python"):

    python examples/notebook.py

It prints the recommendation and the best configurations by recall, and, when
matplotlib and pyarrow are installed, plots recall against false positives
(one point per configuration, the recommendation ringed) into
recall-vs-fp.png.
"""

import pathlib

import looptune

root = pathlib.Path(__file__).resolve().parents[1]
res = looptune.sweep([root / "fixtures" / "sessions"], labels=root / "fixtures" / "labels.csv")

rec = res.recommendation or {}
print("recommended:", rec.get("label"))

try:
    import pyarrow
except ImportError:
    print("pyarrow is not installed: tables are available as Arrow streams (res.configs())")
    raise SystemExit(0)

configs = pyarrow.table(res.configs()).to_pylist()
best = sorted(configs, key=lambda r: (-(r["recall"] or 0), r["false_positives"] or 0))[:5]
for r in best:
    print(f'{r["label"]:60} recall {r["recall"]:.2f}  false positives {r["false_positives"]}')

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("matplotlib is not installed: no plot")
    raise SystemExit(0)

fig, ax = plt.subplots(figsize=(6, 4))
ax.scatter([r["false_positives"] for r in configs], [r["recall"] for r in configs], s=12, alpha=0.5)
chosen = [r for r in configs if r["recommended"]]
ax.scatter([r["false_positives"] for r in chosen], [r["recall"] for r in chosen], s=80,
           facecolors="none", edgecolors="red", label="recommended")
ax.set_xlabel("false positives")
ax.set_ylabel("recall")
ax.legend()
fig.tight_layout()
fig.savefig("recall-vs-fp.png")
print("wrote recall-vs-fp.png")
