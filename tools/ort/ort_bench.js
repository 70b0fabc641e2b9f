// Times onnxruntime on a model with random FLOAT inputs: median/min/max latency at
// batch 1 and batch 64 (symbolic dims take the batch size), like `//tools:run --bench`, then
// the process's peak resident memory.
//   node tools/ort/ort_bench.js MODEL [--threads=2] [--runs=30] [--batches=1,64] [--dims=height=224,width=224] [--exact]
// (--dims: sizes of named symbolic dims; the others take the batch size; --exact: session option
// session.x64quantprecision=1, onnxruntime's non-saturating u8 x u8 kernels on x86 without VNNI,
// where its default u8 x s8 vpmaddubsw kernels saturate with 8-bit weights; no effect with VNNI)
'use strict';
const ort = require('onnxruntime-node');

function parseArgs(argv) {
  const args = {threads: 2, runs: 30, batches: [1, 64], dims: {}, exact: false};
  for (const a of argv.slice(2)) {
    if (a.startsWith('--threads=')) args.threads = Number(a.slice(10));
    else if (a.startsWith('--runs=')) args.runs = Number(a.slice(7));
    else if (a === '--exact') args.exact = true;
    else if (a.startsWith('--batches=')) args.batches = a.slice(10).split(',').map(Number);
    else if (a.startsWith('--dims=')) {
      args.dims = {};
      for (const kv of a.slice(7).split(',')) args.dims[kv.split('=')[0]] = Number(kv.split('=')[1]);
    }
    else args.model = a;
  }
  if (!args.model) throw new Error('usage: ort_bench.js MODEL [--threads=N] [--runs=N]');
  return args;
}

// Deterministic uniform [0,1) data (a small LCG; timing does not depend on values).
function randomData(n, seed) {
  const data = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    data[i] = s / 4294967296;
  }
  return data;
}

async function main() {
  const args = parseArgs(process.argv);
  const nodeKiB = process.resourceUsage().maxRSS;  // node itself, before onnxruntime loads the model
  const session = await ort.InferenceSession.create(args.model, {
    intraOpNumThreads: args.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    extra: {session: {x64quantprecision: args.exact ? '1' : '0'}},
  });
  console.log(`onnxruntime ${require('onnxruntime-node/package.json').version}, model ${args.model}, ` +
              `${args.threads} threads, ${args.runs} timed runs per setting`);
  for (const batch of args.batches) {
    const feeds = {};
    for (const name of session.inputNames) {
      const meta = session.inputMetadata ? session.inputMetadata.find((m) => m.name === name) : null;
      const shape = (meta && meta.shape ? meta.shape : []).map((d) => (typeof d === 'number' && d >= 0 ? d : (args.dims[d] || batch)));
      const n = shape.reduce((a, b) => a * b, 1);
      feeds[name] = new ort.Tensor('float32', randomData(n, 1), shape);
    }
    for (let i = 0; i < 3; i++) await session.run(feeds);
    const ms = [];
    for (let i = 0; i < args.runs; i++) {
      const t0 = process.hrtime.bigint();
      await session.run(feeds);
      ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    ms.sort((a, b) => a - b);
    const median = ms[Math.floor(ms.length / 2)];
    console.log(`batch ${String(batch).padStart(3)}: median ${median.toFixed(3).padStart(8)} ms  ` +
                `min ${ms[0].toFixed(3).padStart(8)} ms  max ${ms[ms.length - 1].toFixed(3).padStart(8)} ms  ` +
                `throughput ${(batch * 1000 / median).toFixed(1).padStart(9)} samples/s`);
  }
  // As //tools:run prints it (the process's peak resident set), and node's share before the session.
  console.log(`peak resident memory of the process: ${(process.resourceUsage().maxRSS / 1024).toFixed(1)} MiB ` +
              `(node before the session: ${(nodeKiB / 1024).toFixed(1)} MiB)`);
}

main().catch((e) => {
  console.error(`error: ${e.message}`);
  process.exit(1);
});
