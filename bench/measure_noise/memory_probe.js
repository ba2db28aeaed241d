// Memory probe (docs/measure.md, "Why measurements varied"): one FBNet and one NB201 session,
// and plain JavaScript loops that stream 24 MB, 6 MB and 256 KB buffers or compute in registers,
// timed round after round in one process. JSON Lines, one per round, with each round's medians.
//   node memory_probe.js FBNET.onnx NB201.onnx [ROUNDS]
'use strict';
const ort = require(require('path').join(__dirname, '../../runners/onnxruntime/node_modules/onnxruntime-node'));
const [fbModel, nbModel] = process.argv.slice(2, 4);
const R = Number(process.argv[4] || 200);
function med(a){a.sort((x,y)=>x-y);return a[a.length>>1];}
function feeds(s){const f={};s.inputNames.forEach((name,k)=>{const md=s.inputMetadata[k];const shape=md.shape.map(d=>typeof d==='number'&&d>0?d:1);
 const n=shape.reduce((a,b)=>a*b,1);const d=new Float32Array(n);for(let i=0;i<n;++i)d[i]=Math.sin(i);f[name]=new ort.Tensor('float32',d,shape);});return f;}
function stream(buf){let s=0;for(let i=0;i<buf.length;i+=8)s+=buf[i];return s;}  // one read per cache line
function compute(){let a=1.0001,b=0.9999;for(let i=0;i<2e5;++i){a=a*b+1e-9;b=b*a-1e-9;}return a+b;}
(async()=>{
 const o={graphOptimizationLevel:'all',intraOpNumThreads:1,interOpNumThreads:1,executionMode:'sequential',logSeverityLevel:3};
 const sf=await ort.InferenceSession.create(fbModel,o), sn=await ort.InferenceSession.create(nbModel,o);
 const ff=feeds(sf), fn=feeds(sn);
 const big=new Float64Array(24*1024*1024/8), mid=new Float64Array(6*1024*1024/8), small=new Float64Array(256*1024/8);
 for(let i=0;i<big.length;++i)big[i]=i; for(let i=0;i<mid.length;++i)mid[i]=i; for(let i=0;i<small.length;++i)small[i]=i;
 let sink=0;
 for(let w=0;w<5;++w){await sf.run(ff);await sn.run(fn);sink+=stream(big)+stream(mid)+stream(small)+compute();}
 for(let r=0;r<R;++r){
  const t=(fn2,n)=>{const a=[];for(let i=0;i<n;++i){const t0=process.hrtime.bigint();sink+=fn2();a.push(Number(process.hrtime.bigint()-t0)/1e6);}return med(a);};
  const tf=[];for(let i=0;i<20;++i){const t0=process.hrtime.bigint();await sf.run(ff);tf.push(Number(process.hrtime.bigint()-t0)/1e6);}
  const tn=[];for(let i=0;i<20;++i){const t0=process.hrtime.bigint();await sn.run(fn);tn.push(Number(process.hrtime.bigint()-t0)/1e6);}
  const row={r,fb:med(tf),nb:med(tn),big:t(()=>stream(big),5),mid:t(()=>{let s=0;for(let k=0;k<4;++k)s+=stream(mid);return s;},5),small:t(()=>{let s=0;for(let k=0;k<64;++k)s+=stream(small);return s;},5),cpu:t(compute,5)};
  process.stdout.write(JSON.stringify(row)+'\n');
 }
 if(sink===42)console.log('');
})();
