// Runs zoo ONNX models in onnxruntime (tools/ort's onnxruntime-node) on the
// directory's eval.npy and compares with PyTorch's fp32_eval.npy.
//   node models/zoo/ort_check.js out/zoo/<arch>/opset13.onnx [more.onnx ...]
// Prints one line per model: max |ort - torch| and the relative L2 error.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require(require.resolve('onnxruntime-node',
    {paths: [path.join(__dirname, '..', '..', 'tools', 'ort')]}));

function readNpy(file) {  // little-endian float32, C order only
  const buf = fs.readFileSync(file);
  const hlen = buf.readUInt16LE(8);
  const header = buf.toString('latin1', 10, 10 + hlen);
  if (!header.includes("'<f4'") || header.includes("'fortran_order': True")) {
    throw new Error(`${file}: not a C-order float32 .npy`);
  }
  const shape = header.match(/'shape': \(([^)]*)\)/)[1].split(',')
      .map((s) => s.trim()).filter((s) => s).map(Number);
  const data = new Float32Array(buf.buffer.slice(buf.byteOffset + 10 + hlen, buf.byteOffset + buf.length));
  return {shape, data};
}

async function check(model) {
  const dir = path.dirname(model);
  const x = readNpy(path.join(dir, 'eval.npy'));
  const ref = readNpy(path.join(dir, 'fp32_eval.npy'));
  // session.x64quantprecision=1: on x86 without VNNI (AVX2, AVX-512 without VNNI) onnxruntime's default
  // u8 x s8 GEMM (vpmaddubsw) saturates int16 pair sums with 8-bit weights; this option makes it
  // run u8 x u8 instead, exactly (onnxruntime_session_options_config_keys.h). No effect with VNNI.
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 2, interOpNumThreads: 1, extra: {session: {x64quantprecision: '1'}}});
  const n = x.shape[0];
  const per = x.data.length / n;
  const batch = 16;
  const out = new Float32Array(ref.data.length);
  let off = 0;
  for (let s = 0; s < n; s += batch) {
    const c = Math.min(batch, n - s);
    const t = new ort.Tensor('float32', x.data.slice(s * per, (s + c) * per), [c, ...x.shape.slice(1)]);
    const r = await session.run({[session.inputNames[0]]: t});
    const y = r[session.outputNames[0]].data;
    out.set(y, off);
    off += y.length;
  }
  if (off !== ref.data.length) throw new Error(`${model}: ${off} outputs, expected ${ref.data.length}`);
  let maxd = 0; let e2 = 0; let r2 = 0;
  for (let i = 0; i < out.length; i++) {
    const d = out[i] - ref.data[i];
    maxd = Math.max(maxd, Math.abs(d));
    e2 += d * d;
    r2 += ref.data[i] * ref.data[i];
  }
  const rel = Math.sqrt(e2 / (r2 || 1));
  console.log(`${rel < 1e-3 ? 'OK  ' : 'DIFF'} ${model}: max_abs=${maxd.toExponential(2)} rel_l2=${rel.toExponential(2)}`);
  return rel < 1e-3;
}

async function main() {
  let bad = 0;
  for (const m of process.argv.slice(2)) {
    try {
      if (!(await check(m))) bad++;
    } catch (e) {
      bad++;
      console.log(`FAIL ${m}: ${String(e.message || e).split('\n')[0]}`);
    }
  }
  process.exit(bad ? 1 : 0);
}
main();
