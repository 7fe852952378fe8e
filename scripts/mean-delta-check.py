#!/usr/bin/env python3
"""Recompute the mean-delta stability detector of docs/elasticity.md from
elasticity result files, independently of fieldbench's Go code (its own
Student t quantiles; no fieldbench import), and print per file: the join,
data-settled and online stable moments; the baseline's median delta m,
bound B, cap C and slope bound; the first window after data settled that
passes both tests, its capped mean delta and slope, and how many earlier
windows after data settled each test rejected. For comparison, the same
with the rule before the cap was corrected (deltas capped at 3 m, no fixed
point). Used for the elasticity-redis runs of scenarios/README.md:

    python3 scripts/mean-delta-check.py results/*-elasticity-redis/*/result.jsonl
"""
import json, math, sys


def betacf(a, b, x):
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / d; h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1 + aa * d; c = 1 + aa / c; d = 1 / d; h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1 + aa * d; c = 1 + aa / c; d = 1 / d; de = d * c; h *= de
        if abs(de - 1) < 1e-15: break
    return h

def ibeta(a, b, x):
    if x <= 0: return 0.0
    if x >= 1: return 1.0
    lbt = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x)
    if x < (a + 1) / (a + b + 2):
        return math.exp(lbt) * betacf(a, b, x) / a
    return 1 - math.exp(lbt) * betacf(b, a, 1 - x) / b

def tcdf(t, nu):
    p = 0.5 * ibeta(nu / 2, 0.5, nu / (nu + t * t))
    return 1 - p if t > 0 else p

def tq(p, nu):
    lo, hi = 0.0, 1000.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if tcdf(mid, nu) < p: lo = mid
        else: hi = mid
    return (lo + hi) / 2

def median(v):
    s = sorted(v); n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2

def detect(pts_before, pts_after, D, old, w=5):
    yb = [p['y'] for p in pts_before]
    d = [abs(yb[i] - yb[i-1]) for i in range(1, len(yb))]
    N = len(d); m = median(d)
    q = tq(0.9995, N-1) * math.sqrt(1/w + 1/N)
    C = 3*m
    for _ in range(1 if old else 5):
        cd = [min(x, C) for x in d]; mu = sum(cd)/N
        s = math.sqrt(sum((x-mu)**2 for x in cd)/(N-1)); B = mu + q*s
        Cn = (w*B - (w-2)*mu)/2
        if old: break
        if abs(Cn - C) < 1e-12: C = Cn; break
        C = Cn
    sigma = math.sqrt(sum(x*x for x in d)/N/2)
    sxx = sum((k - w/2)**2 for k in range(w+1))
    SB = tq(0.99975, N) * sigma / math.sqrt(sxx)
    ys = [pts_before[-1]] + pts_after
    rej = {'mean': 0, 'slope': 0}
    first_any = None  # the first window passing both tests, data settled or not
    for i in range(w, len(ys)):
        win = ys[i-w:i+1]; yv = [p['y'] for p in win]
        dl = [abs(yv[k]-yv[k-1]) for k in range(1, w+1)]
        wm = sum(min(x, C) for x in dl)/w
        yb_ = sum(yv)/len(yv); slope = sum((k-w/2)*(yv[k]-yb_) for k in range(w+1))/sxx
        if win[-1]['x'] >= D:
            if wm > B: rej['mean'] += 1
            if abs(slope) > SB: rej['slope'] += 1
        if wm <= B and abs(slope) <= SB and first_any is None:
            first_any = win[-1]['x']
        if wm <= B and abs(slope) <= SB and win[-1]['x'] >= D:
            return dict(S=win[-1]['x'], wm=wm, slope=slope, maxd=max(dl)/m, B=B, C=C, m=m, SB=SB, rej=rej, deltas=dl, first_any=first_any)
    return dict(S=None, B=B, C=C, m=m, SB=SB, rej=rej, first_any=first_any)


def main(paths):
    for path in paths:
        pts, ev = [], {}
        for line in open(path):
            d = json.loads(line)
            if d['kind'] == 'point' and d['point'].get('series') == 'request-set': pts.append(d['point'])
            elif d['kind'] == 'event': ev.setdefault(d['event']['name'], d['event']['at'])
        pts.sort(key=lambda p: p['x'])
        J, D = ev['join'], ev['data-settled']
        cnt = [p for p in pts if not p.get('warmup') and not p.get('failed')]
        b = [p for p in cnt if p['x'] <= J]; a = [p for p in cnt if p['x'] > J]
        new, old = detect(b, a, D, False), detect(b, a, D, True)
        print(path)
        print(f"  J {J:.1f}  D {D:.1f} (transfer {D-J:.1f} s)  sets {len(pts)}  online stable {ev.get('stable', float('nan')):.2f}")
        if new['S'] is None:
            print(f"  new: m {new['m']:.4f} B {new['B']:.4f} C {new['C']:.4f}: no stable window")
            continue
        print(f"  first window passing both tests, data settled or not: {new['first_any']:.2f} ({new['first_any'] - D:+.1f} s from data settled)")
        print(f"  new: m {new['m']:.4f} B {new['B']:.4f} C {new['C']:.4f} slopeB {new['SB']:.4f}  S {new['S']:.2f}  S-J {new['S']-J:.1f}  S-D {new['S']-D:.1f}  window mean {new['wm']:.4f} slope {new['slope']:+.4f} max delta {new['maxd']:.1f}x median  rejected after D: {new['rej']}  deltas {[round(x,3) for x in new['deltas']]}")
        if old['S'] is not None:
            print(f"  old: B {old['B']:.4f} cap {old['C']:.4f} (cap<B: {old['C']<old['B']})  S {old['S']:.2f}  S-D {old['S']-D:.1f}  window mean {old['wm']:.4f} max delta {old['maxd']:.1f}x  rejected after D: {old['rej']}")


if __name__ == '__main__':
    main(sys.argv[1:])
