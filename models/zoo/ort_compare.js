// Runs one ONNX model in onnxruntime (tools/ort's onnxruntime-node, all graph optimisations)
// on a float32 .npy input and compares its first output with qfuse's output on the same input
// (raw little-endian float32 written by `tools/run --save_outputs`). Prints one JSON line:
//   {"model", "ort_ms", "max_abs", "cosine", "argmax_agree"} (see argmaxAgreement).
//   node models/zoo/ort_compare.js model.onnx input.npy qfuse_output.f32 [samples] [optimization]
// optimization: onnxruntime's graphOptimizationLevel (all, the default; extended, basic or
// disabled), to tell a fusion of onnxruntime's from float rounding (models/zoo/cut_compare.py).
// Environment: ORT_BATCH=N runs N samples per call (default 16; 1 for a model with a fixed
// batch of 1); ORT_SAVE=F also writes onnxruntime's first output there (raw float32).
// Exits 1 with a one-line error when onnxruntime cannot load or run the model.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require(require.resolve('onnxruntime-node', {paths: [path.join(__dirname, '..', '..', 'tools', 'ort')]}));

function readNpy(file) {  // little-endian float32, C order
  const buf = fs.readFileSync(file);
  const hlen = buf.readUInt16LE(8);
  const header = buf.toString('latin1', 10, 10 + hlen);
  if (!header.includes("'<f4'") || header.includes("'fortran_order': True")) throw new Error(`${file}: not a C-order float32 .npy`);
  const shape = header.match(/'shape': \(([^)]*)\)/)[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const data = new Float32Array(buf.buffer.slice(buf.byteOffset + 10 + hlen, buf.byteOffset + buf.length));
  return {shape, data};
}

// Argmax agreement in percent: over the last axis for [N, C] and [N, T, C] (sequence) outputs,
// over axis 1 (per position) for [N, C, H, W...] (dense) outputs.
function argmaxAgreement(a, b, dims) {
  if (dims.length < 2) return null;
  const axis = dims.length <= 3 ? dims.length - 1 : 1;
  const outer = dims.slice(0, axis).reduce((x, y) => x * y, 1);
  const c = dims[axis];
  const inner = dims.slice(axis + 1).reduce((x, y) => x * y, 1);
  let same = 0;
  for (let o = 0; o < outer; o++) {
    for (let p = 0; p < inner; p++) {
      let ba = 0; let bb = 0;
      for (let k = 1; k < c; k++) {
        const idx = (o * c + k) * inner + p;
        if (a[idx] > a[(o * c + ba) * inner + p]) ba = k;
        if (b[idx] > b[(o * c + bb) * inner + p]) bb = k;
      }
      same += ba === bb;
    }
  }
  return 100 * same / (outer * inner);
}

async function main() {
  const [model, input, qfuseOut, limit, optimization] = process.argv.slice(2);
  const x = readNpy(input);
  if (limit && Number(limit) < x.shape[0]) {  // the first `limit` samples only
    x.data = x.data.slice(0, Number(limit) * (x.data.length / x.shape[0]));
    x.shape[0] = Number(limit);
  }
  // session.x64quantprecision=1: on x86 without VNNI (AVX2, AVX-512 without VNNI) onnxruntime's default
  // u8 x s8 GEMM (vpmaddubsw) saturates int16 pair sums with 8-bit weights; this option makes it
  // run u8 x u8 instead, exactly (onnxruntime_session_options_config_keys.h). No effect with VNNI.
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 2, interOpNumThreads: 1, graphOptimizationLevel: optimization || 'all',
    extra: {session: {x64quantprecision: '1'}}});
  const n = x.shape[0];
  const per = x.data.length / n;
  const batch = Number(process.env.ORT_BATCH || 16);
  const chunks = [];
  let dims = null;
  const t0 = process.hrtime.bigint();
  for (let s = 0; s < n; s += batch) {
    const c = Math.min(batch, n - s);
    const t = new ort.Tensor('float32', x.data.slice(s * per, (s + c) * per), [c, ...x.shape.slice(1)]);
    const r = await session.run({[session.inputNames[0]]: t});
    const y = r[session.outputNames[0]];
    dims = [n, ...y.dims.slice(1)];
    chunks.push(y.data);
  }
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const total = chunks.reduce((s, c) => s + c.length, 0);
  const out = new Float32Array(total);
  let off = 0;
  for (const c of chunks) { out.set(c, off); off += c.length; }
  if (process.env.ORT_SAVE) fs.writeFileSync(process.env.ORT_SAVE, Buffer.from(out.buffer, out.byteOffset, out.byteLength));
  const buf = fs.readFileSync(qfuseOut);
  const q = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
  if (q.length !== out.length) throw new Error(`${model}: onnxruntime gave ${out.length} values, qfuse ${q.length}`);
  let maxAbs = 0; let dot = 0; let na = 0; let nb = 0;
  for (let i = 0; i < out.length; i++) {
    maxAbs = Math.max(maxAbs, Math.abs(out[i] - q[i]));
    dot += out[i] * q[i]; na += out[i] * out[i]; nb += q[i] * q[i];
  }
  const cosine = na === 0 && nb === 0 ? 1 : dot / Math.sqrt(na * nb || 1);
  console.log(JSON.stringify({model, ort_ms: ms, max_abs: maxAbs, cosine, argmax_agree: argmaxAgreement(out, q, dims)}));
}
main().catch((e) => {
  console.log(JSON.stringify({model: process.argv[2], error: String(e.message || e).split('\n')[0]}));
  process.exit(1);
});
