#!/usr/bin/env python3
"""Writes otava_fixtures.json: series with known shifts and the change points
Apache Otava finds in them (its compute_change_points, the t-test method
with windows and weak change points), for TestAgreesWithOtava.

Run with Apache Otava installed (pip install apache-otava; 0.8.0 was used):
    python3 history/testdata/otava_fixtures.py > history/testdata/otava_fixtures.json

With --random N, N random series instead (random lengths, shifts, noise and
settings), for a wider comparison that is not committed:
    python3 history/testdata/otava_fixtures.py --random 500 > /tmp/otava-random.json
    FB_OTAVA_FIXTURES=/tmp/otava-random.json go test ./history -run TestAgreesWithOtava
"""
import json
import importlib.metadata
import sys

import numpy as np
from otava.analysis import compute_change_points

rng = np.random.default_rng(42)


def steps(levels, n, sd, kind="normal"):
    out = []
    for level in levels:
        if kind == "normal":
            out += list(rng.normal(level, sd, n))
        else:  # latency-like: a floor plus an exponential tail
            out += list(level + rng.exponential(sd, n))
    return [round(float(x), 3) for x in out]


series = {
    "constant": [100.0] * 30,
    "noise only": steps([100], 60, 5),
    "one step up": steps([100, 130], 20, 5),
    "one step down": steps([1000, 800], 25, 30),
    "two steps": steps([50, 70, 55], 20, 3),
    "short step": steps([10, 12], 5, 0.2),
    "tiny series": [1.0, 1.0, 5.0],
    "long, four steps": steps([200, 240, 240, 180, 260], 40, 10),
    "latency tail": steps([500, 650], 30, 40, kind="exp"),
    "last run regressed": steps([100], 30, 2) + [140.0],
    "outlier": steps([100], 20, 2) + [300.0] + steps([100], 20, 2),
    "slow drift": [round(100 + 0.5 * i + float(rng.normal(0, 1)), 3) for i in range(80)],
}

settings = [
    {"window": 50, "pvalue": 0.001, "magnitude": 0.0},
    {"window": 20, "pvalue": 0.01, "magnitude": 0.0},
    {"window": 50, "pvalue": 0.001, "magnitude": 0.1},
]

if len(sys.argv) == 3 and sys.argv[1] == "--random":
    series, per = {}, {}
    for k in range(int(sys.argv[2])):
        n = int(rng.integers(3, 300))
        cuts = sorted(rng.choice(range(1, n), size=min(n - 1, int(rng.integers(0, 6))), replace=False)) if n > 1 else []
        level, xs, last = float(rng.uniform(10, 1000)), [], 0
        sd = level * float(rng.choice([0.001, 0.01, 0.05, 0.2]))
        for c in list(cuts) + [n]:
            kind = "exp" if k % 3 == 0 else "normal"
            xs += steps([level], c - last, sd, kind)
            last, level = c, level * float(rng.choice([0.5, 0.8, 0.95, 1.02, 1.1, 1.3, 2.0]))
        series[f"random {k}"] = xs
        per[f"random {k}"] = [{"window": int(rng.choice([10, 20, 30, 50, 80])), "pvalue": float(rng.choice([0.001, 0.01, 0.05])),
                               "magnitude": float(rng.choice([0.0, 0.0, 0.05, 0.2]))}]
else:
    per = {name: settings for name in series}

cases = []
for name, xs in series.items():
    for s in per[name]:
        cps, _ = compute_change_points(list(xs), window_len=s["window"], max_pvalue=s["pvalue"], min_magnitude=s["magnitude"])
        cases.append({
            "name": name, "values": xs, **s,
            "change_points": [{"index": int(c.index), "pvalue": float(c.stats.pvalue),
                               "before": float(c.stats.mean_1), "after": float(c.stats.mean_2)} for c in cps],
        })

print(json.dumps({"otava": importlib.metadata.version("apache-otava"), "cases": cases}, indent=1))
