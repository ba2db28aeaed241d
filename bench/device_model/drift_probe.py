#!/usr/bin/env python3
"""How a host's speed moves, network by network: one runner process measures the given models in
turn, again and again, for SECONDS (each request with 5 warm-up runs and enough timed runs for
about 150 ms, its session kept, as the harness asks), and writes the fastest and the median run
of every request, one row per turn. Then it prints, for the turns in which the first model after
the reference ran 1.15 and 1.3 times its fastest, how far every model's fastest run moved in them,
and the reference's median run. The first model is meant to be the harness's reference network:
whether it sees what the others suffer.
Run alone on an idle machine, pinned (taskset).
  drift_probe.py SECONDS OUT.tsv MODEL... -- RUNNER COMMAND...
"""
import json, math, os, statistics, subprocess, sys, time


def main():
    if "--" not in sys.argv or sys.argv.index("--") < 4:
        sys.exit(__doc__)
    cut = sys.argv.index("--")
    seconds, out_path, models = float(sys.argv[1]), sys.argv[2], sys.argv[3:cut]
    runner = subprocess.Popen(sys.argv[cut + 1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    device = runner.stdout.readline()
    if not device:
        sys.exit("drift_probe.py: the runner printed no device line")
    repeats = {m: 20 for m in models}
    rows, rid, start = [], 0, time.time()
    with open(out_path + ".part", "w") as out:
        out.write("seconds\t" + "\t".join(m.rsplit("/", 1)[-1] for m in models) + "\t" +
                  "\t".join(m.rsplit("/", 1)[-1] + " median" for m in models) + "\n")
        while time.time() - start < seconds:
            row, middle = [], []
            for m in models:
                rid += 1
                runner.stdin.write(json.dumps({"id": rid, "model": m, "warmup": 5, "repeats": repeats[m], "keep": True}) + "\n")
                runner.stdin.flush()
                answer = json.loads(runner.stdout.readline() or "{}")
                if "latency_ms" not in answer:
                    sys.exit(f"drift_probe.py: {m}: {answer.get('error', 'no answer')}")
                fastest = min(answer["latency_ms"])
                row.append(fastest)
                middle.append(statistics.median(answer["latency_ms"]))
                repeats[m] = max(5, min(1000, int(150 / fastest)))
            rows.append(row + middle)
            out.write(f"{time.time() - start:.1f}\t" + "\t".join(f"{x:.4f}" for x in row + middle) + "\n")
    runner.stdin.close()
    runner.wait()
    os.replace(out_path + ".part", out_path)

    names = [m.rsplit("/", 1)[-1] for m in models]
    fastest = [min(r[k] for r in rows) for k in range(len(models))]
    print(f"{len(rows)} turns; fastest: " + ", ".join(f"{n} {f:.4f} ms" for n, f in zip(names, fastest)))
    if len(models) < 2:
        return
    for bound in (1.15, 1.3):
        slow = [r for r in rows if r[1] > bound * fastest[1]]
        if not slow:
            print(f"no turn with {names[1]} beyond {bound} times its fastest")
            continue
        moved = ", ".join(f"{n} {statistics.median(r[k] / fastest[k] for r in slow):.3f}" for k, n in enumerate(names))
        # the reference's median run against its median over the turns outside the slow ones
        usual = statistics.median(r[len(models)] for r in rows if r[1] <= bound * fastest[1]) \
            if len(slow) < len(rows) else float("nan")
        middle = statistics.median(r[len(models)] for r in slow) / usual
        print(f"{len(slow)} turns with {names[1]} beyond {bound} times its fastest; median over them, "
              f"fastest run / fastest: {moved}; {names[0]}'s median run against the other turns': {middle:.3f}")
    logs = [[math.log(r[k]) for r in rows] for k in range(len(models))]

    def corr(a, b):
        ma, mb = statistics.fmean(a), statistics.fmean(b)
        den = math.sqrt(sum((x - ma) ** 2 for x in a) * sum((y - mb) ** 2 for y in b))
        return sum((x - ma) * (y - mb) for x, y in zip(a, b)) / den if den > 0 else float("nan")

    print(f"correlation of log times with {names[1]}: " +
          ", ".join(f"{n} {corr(logs[1], logs[k]):.2f}" for k, n in enumerate(names) if k != 1))


if __name__ == "__main__":
    main()
