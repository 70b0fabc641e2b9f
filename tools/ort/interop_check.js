// Runs a model in onnxruntime on Fashion-MNIST-style IDX images (pixel / 255, NCHW
// [N,1,H,W]) and compares its logits with qfuse's (a raw float32 file written by
// `//tools:run --data=... --save_outputs=...`): top-1 of each against the labels,
// top-1 agreement, and the cosine of the logits (overall and worst per image).
//   node tools/ort/interop_check.js MODEL IMAGES.gz LABELS.gz QFUSE_LOGITS.f32 [--threads=2]
'use strict';
const fs = require('fs');
const zlib = require('zlib');
const ort = require('onnxruntime-node');

function readIdx(path) {
  let buf = fs.readFileSync(path);
  if (buf[0] === 0x1f && buf[1] === 0x8b) buf = zlib.gunzipSync(buf);
  const ndim = buf[3];
  const dims = [];
  for (let i = 0; i < ndim; i++) dims.push(buf.readUInt32BE(4 + 4 * i));
  return {dims, data: buf.subarray(4 + 4 * ndim)};
}

async function main() {
  const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  const threads = Number((process.argv.find((a) => a.startsWith('--threads=')) || '--threads=2').slice(10));
  if (args.length !== 4) throw new Error('usage: interop_check.js MODEL IMAGES LABELS QFUSE_LOGITS.f32');
  const [modelPath, imagesPath, labelsPath, logitsPath] = args;
  const images = readIdx(imagesPath);
  const labels = readIdx(labelsPath).data;
  const qfuseBytes = fs.readFileSync(logitsPath);
  const qfuse = new Float32Array(qfuseBytes.buffer, qfuseBytes.byteOffset, qfuseBytes.length / 4);
  const [n, h, w] = images.dims;
  const classes = qfuse.length / n;
  if (!Number.isInteger(classes)) throw new Error(`${logitsPath}: ${qfuse.length} floats for ${n} images`);
  // session.x64quantprecision=1: on x86 without VNNI (AVX2, AVX-512 without VNNI) onnxruntime's default
  // u8 x s8 GEMM (vpmaddubsw) saturates int16 pair sums with 8-bit weights; this option makes it
  // run u8 x u8 instead, exactly (onnxruntime_session_options_config_keys.h). No effect with VNNI.
  const session = await ort.InferenceSession.create(modelPath, {
    intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all',
    extra: {session: {x64quantprecision: '1'}}});
  const inputName = session.inputNames[0];
  const batch = 500;
  const ortLogits = new Float32Array(n * classes);
  for (let start = 0; start < n; start += batch) {
    const count = Math.min(batch, n - start);
    const x = new Float32Array(count * h * w);
    for (let i = 0; i < count * h * w; i++) x[i] = images.data[start * h * w + i] / 255;
    const out = await session.run({[inputName]: new ort.Tensor('float32', x, [count, 1, h, w])});
    ortLogits.set(out[session.outputNames[0]].data, start * classes);
  }
  const argmax = (a, i) => {
    let best = 0;
    for (let c = 1; c < classes; c++) if (a[i * classes + c] > a[i * classes + best]) best = c;
    return best;
  };
  let ortCorrect = 0, qfuseCorrect = 0, agree = 0, dot = 0, na = 0, nb = 0, worst = 1;
  for (let i = 0; i < n; i++) {
    const a = argmax(ortLogits, i), b = argmax(qfuse, i);
    ortCorrect += a === labels[i];
    qfuseCorrect += b === labels[i];
    agree += a === b;
    let d = 0, x2 = 0, y2 = 0;
    for (let c = 0; c < classes; c++) {
      const x = ortLogits[i * classes + c], y = qfuse[i * classes + c];
      d += x * y; x2 += x * x; y2 += y * y;
    }
    dot += d; na += x2; nb += y2;
    worst = Math.min(worst, d / Math.sqrt(x2 * y2));
  }
  const pct = (k) => (100 * k / n).toFixed(2);
  const cosine = dot / Math.sqrt(na * nb);
  console.log(`${modelPath}: ${n} images; onnxruntime ${require('onnxruntime-node/package.json').version} ` +
              `top-1 ${pct(ortCorrect)}%, qfuse top-1 ${pct(qfuseCorrect)}%, ` +
              `difference ${(Math.abs(ortCorrect - qfuseCorrect) * 100 / n).toFixed(2)} points, ` +
              `agreement ${pct(agree)}%, logits cosine ${cosine.toFixed(6)} (worst image ${worst.toFixed(6)})`);
  const ok = Math.abs(ortCorrect - qfuseCorrect) * 100 / n <= 0.1 && cosine >= 0.999;
  console.log(ok ? 'PASS: within 0.1 top-1 points and cosine >= 0.999' : 'FAIL: outside the interop bounds');
  if (!ok) process.exit(1);
}

main().catch((e) => {
  console.error(`error: ${e.message}`);
  process.exit(1);
});
