import json,sys
vars_=sys.argv[1].split(",") if len(sys.argv)>1 else ["none","intensity","flops","bytes"]
tot={}
for tag in ["all","disabled","basic","intensity_all","intensity_disabled"]:
    print("==",tag)
    for var in vars_:
        try: c=json.load(open(f"{tag}.{var}.json"))
        except Exception: continue
        z=c.get("intensity_factor")
        sl=f"{z['slope']:.3f}" if z else "-"
        line=f"  {var:9s} {c.get('family_factors_from')[:8]:8s} slope {sl:6s} loo {c['loo_mape']:5.2f} |"
        for run in ["first","second"]:
            rows=json.load(open(f"ev.{tag}.{var}.{run}.json"))
            ok=[x for x in rows if not x.get("disturbed")]
            def get(store):
                r=[x for x in ok if x["store"].endswith(store)]
                return r[0] if r else None
            ctx=get("context.csv"); onnx=get("onnx.csv"); kws=get("heldout_kws.csv")
            n=sum(x["n"] for x in ok); mape=100*sum(x["mape"]*x["n"] for x in ok)/n
            w=100*sum(x["within_10"]*x["n"] for x in ok)/n
            f=lambda r: f"{100*r['mape']:4.1f}/{100*r['within_10']:3.0f}" if r else "  -  "
            line+=f" ctx {f(ctx)} onnx {100*onnx['mape']:4.1f} kws {f(kws)} all {mape:4.1f}/{w:3.0f} |"
            t=tot.setdefault(var,[0,0,0,0]); t[0]+=mape; t[1]+=100*ctx["mape"] if ctx else 0; t[2]+=100*onnx["mape"]; t[3]+=1
        print(line)
print({k:[round(x/v[3],2) for x in v[:3]] for k,v in tot.items()}, "(mean over runs: pooled, ctx, onnx)")
