#!/usr/bin/env python3
"""Writes otava_fixtures.json: series with known shifts and the change points
Apache Otava finds in them (its compute_change_points, the t-test method
with windows and weak change points), for TestAgreesWithOtava.

Run with Apache Otava installed (pip install apache-otava; 0.8.0 was used):
    python3 history/testdata/otava_fixtures.py > history/testdata/otava_fixtures.json
"""
import json
import importlib.metadata

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

cases = []
for name, xs in series.items():
    for s in settings:
        cps, _ = compute_change_points(list(xs), window_len=s["window"], max_pvalue=s["pvalue"], min_magnitude=s["magnitude"])
        cases.append({
            "name": name, "values": xs, **s,
            "change_points": [{"index": int(c.index), "pvalue": float(c.stats.pvalue),
                               "before": float(c.stats.mean_1), "after": float(c.stats.mean_2)} for c in cps],
        })

print(json.dumps({"otava": importlib.metadata.version("apache-otava"), "cases": cases}, indent=1))
