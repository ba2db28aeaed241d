# Markdown table of the session-option experiment: per configuration, the between-process spread
# of each FBNet network's value under two statistics, and how many values fall within 5 % of
# that network's median over processes.
import json, sys, math, collections, statistics as st, glob, os
names = {'c0': 'bundled runner as shipped (glibc mmap threshold 64 KiB)', 'c1': 'glibc default mmap threshold',
         'c2': 'no intra-op spinning', 'c3': 'no memory arena, no memory patterns', 'c4': 'no weight prepacking',
         'c5': 'denormals as zero', 'c6': 'one session per model, reused by every round', 'c7': 'runner pinned to CPU 1'}
d = sys.argv[1]
print('| configuration | median of round medians: σ(log) | within ±5 % | min of round minima: σ(log) | within ±5 % | NB201 network, min: σ(log) |')
print('|---|---|---|---|---|---|')
for c in sorted(names):
    procs = collections.defaultdict(list)
    for path in sorted(glob.glob(f'{d}/{c}_*.jsonl')):
        per = collections.defaultdict(list)
        for line in open(path):
            if line.startswith('{'):
                x = json.loads(line); per[x['m']].append(x)
        for m, v in per.items(): procs[m].append(v)
    def agg(f, pred):
        sds, w, n = [], 0, 0
        for m, plist in procs.items():
            if not pred(m): continue
            vals = [f(v) for v in plist]; ref = st.median(vals)
            sds.append(st.pstdev([math.log(x) for x in vals])); w += sum(abs(x / ref - 1) <= 0.05 for x in vals); n += len(vals)
        return st.mean(sds), w, n
    med = lambda v: st.median(x['med'] for x in v); mn = lambda v: min(x['min'] for x in v)
    a = agg(med, lambda m: m.startswith('fb')); b = agg(mn, lambda m: m.startswith('fb')); nb = agg(mn, lambda m: m.startswith('nb'))
    print(f'| {names[c]} | {a[0]:.3f} | {a[1]}/{a[2]} | {b[0]:.3f} | {b[1]}/{b[2]} | {nb[0]:.3f} |')
