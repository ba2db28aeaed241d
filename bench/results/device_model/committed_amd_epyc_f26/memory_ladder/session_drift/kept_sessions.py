import json, subprocess, sys, time, statistics
path = sys.argv[1]; sessions = int(sys.argv[2]); per = int(sys.argv[3]); out = open(sys.argv[4], "w")
p = subprocess.Popen("taskset -c 1 /work/main/runners/onnxruntime/run --optimization all --threads 1", shell=True,
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
i = 0; t0 = time.time()
for s in range(sessions):
    for r in range(per):
        i += 1
        p.stdin.write(json.dumps({"id": i, "model": path, "warmup": 5, "repeats": 30, "keep": r + 1 < per}) + "\n"); p.stdin.flush()
        while True:
            line = json.loads(p.stdout.readline())
            if line.get("id") == i: break
        lat = line["latency_ms"]
        out.write(json.dumps({"session": s, "req": r, "t": round(time.time() - t0, 2), "min": min(lat), "med": statistics.median(lat)}) + "\n"); out.flush()
p.stdin.close(); p.wait()
