"""Ratios of `remat size --precision A,B,... --json` rows to the first precision's: for each
strategy and each later precision, its arena over the first precision's at the same batch, and,
with --max-batch, its batch over the first's. The figures docs/precision.md quotes as ratios.

    remat size MODEL ... --precision fp32,bf16 --json | python3 tests/docs/precision_ratios.py
"""
import json
import sys

sized = json.load(sys.stdin)
rows = [r for r in sized["rows"] if r.get("error") is None]
if not rows:
    sys.exit("precision_ratios.py: no row without an error")
first = rows[0]["precision"]
base = {(r["strategy"], r["batch"]): r for r in rows if r["precision"] == first}
best = {r["strategy"]: r["batch"] for r in rows if r["precision"] == first}
for r in rows:
    if r["precision"] == first:
        continue
    same = base.get((r["strategy"], r["batch"]))
    if same:
        print("%s %s: arena %.3fx %s's" % (r["strategy"], r["precision"],
                                           r["arena_bytes"] / same["arena_bytes"], first))
    if sized["max_batch"] and r["strategy"] in best:
        print("%s %s: batch %d, %.2fx %s's %d" % (r["strategy"], r["precision"], r["batch"],
                                                  r["batch"] / best[r["strategy"]], first,
                                                  best[r["strategy"]]))
