import json, subprocess, sys, time, statistics
models = [("ref", "/tmp/yard/reference.onnx"), ("add64M", "/tmp/mem/nets/add_16777216.onnx")] + \
  [(p.split('/')[-1][:-5], p) for p in ["/tmp/mem/heads/head_224_3072x1.onnx", "/tmp/mem/heads/head_64_1536x2.onnx",
   "/tmp/mem/heads/head_160_3584x2.onnx", "/tmp/mem/heads/head_96_2560x2.onnx"]]
dur = float(sys.argv[1]); out = open(sys.argv[2], "w")
p = subprocess.Popen("taskset -c 1 /work/main/runners/onnxruntime/run --optimization all --threads 1", shell=True,
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
i = 0; t0 = time.time(); rnd = 0
while time.time() - t0 < dur:
    for name, path in models:
        i += 1
        p.stdin.write(json.dumps({"id": i, "model": path, "warmup": 5, "repeats": 30}) + "\n"); p.stdin.flush()
        while True:
            line = json.loads(p.stdout.readline())
            if line.get("id") == i: break
        lat = line["latency_ms"]
        out.write(json.dumps({"round": rnd, "t": round(time.time() - t0, 2), "net": name, "min": min(lat), "med": statistics.median(lat)}) + "\n"); out.flush()
    rnd += 1
p.stdin.close(); p.wait()
