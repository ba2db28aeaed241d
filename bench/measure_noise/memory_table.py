# Markdown-ready summary of memory_probe.js output: per series the median, spread of log and
# max/min over rounds, and its correlation with every other series round by round.
import json,sys,math,statistics as st
rows=[json.loads(l) for l in open(sys.argv[1])]
keys=['fb','nb','big','mid','small','cpu']
L={k:[math.log(r[k]) for r in rows] for k in keys}
def corr(a,b):
    ma,mb=st.mean(a),st.mean(b); sa=math.sqrt(sum((x-ma)**2 for x in a)); sb=math.sqrt(sum((x-mb)**2 for x in b))
    return sum((x-ma)*(y-mb) for x,y in zip(a,b))/(sa*sb)
for k in keys: print(k, 'median %.3f sd(log) %.3f max/min %.2f'%(st.median(math.exp(x) for x in L[k]), st.pstdev(L[k]), math.exp(max(L[k])-min(L[k]))), ' '.join('%s=%.2f'%(j,corr(L[k],L[j])) for j in keys if j!=k))
