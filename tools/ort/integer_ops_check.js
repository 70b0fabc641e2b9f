// Checks that onnxruntime runs every quantized Conv / ConvTranspose / Gemm / MatMul of a QDQ
// model as an integer kernel. It saves the graph onnxruntime optimised (optimizedModelFilePath,
// level 'extended', where the QDQ fusions run) and reads the ops of both files:
//  - quantized: weighted ops of the input model whose weight comes from a DequantizeLinear;
//  - left float: weighted ops of the optimised graph that still read a DequantizeLinear output;
//  - integer: QLinearConv, QGemm, QLinearMatMul, MatMulIntegerToFloat, ConvInteger, MatMulInteger.
// Prints one line per model: "OK|FAIL <model>: N quantized, N integer, N left float; ops ...".
// Exits 1 when any quantized weighted op is left float or the integer ops are fewer.
//   node tools/ort/integer_ops_check.js MODEL.onnx [MORE.onnx ...] [--threads=2]
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const ort = require(require.resolve('onnxruntime-node', {paths: [__dirname]}));

// onnxruntime's float fusions (FusedConv: Conv + activation) count as the float ops they replace.
const WEIGHTED = new Set(['Conv', 'ConvTranspose', 'Gemm', 'MatMul', 'FusedConv', 'FusedGemm', 'FusedMatMul']);
const INTEGER = new Set(['QLinearConv', 'QGemm', 'QLinearMatMul', 'MatMulIntegerToFloat', 'ConvInteger',
  'MatMulInteger']);

// Protocol-buffer wire format, just enough for ModelProto.graph.node (op_type, domain, inputs).
function* fields(buf, start, end) {
  let pos = start;
  const varint = () => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[pos++];
      result |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return result;
      shift += 7n;
    }
  };
  while (pos < end) {
    const key = Number(varint());
    const field = key >>> 3;
    const wire = key & 7;
    if (wire === 0) {
      varint();
    } else if (wire === 1) {
      pos += 8;
    } else if (wire === 5) {
      pos += 4;
    } else if (wire === 2) {
      const len = Number(varint());
      yield {field, start: pos, end: pos + len};
      pos += len;
    } else {
      throw new Error(`unsupported protobuf wire type ${wire}`);
    }
  }
}

function readNodes(file) {
  const buf = fs.readFileSync(file);
  const text = (f) => buf.toString('utf8', f.start, f.end);
  const nodes = [];
  for (const g of fields(buf, 0, buf.length)) {
    if (g.field !== 7) continue;  // ModelProto.graph
    for (const n of fields(buf, g.start, g.end)) {
      if (n.field !== 1) continue;  // GraphProto.node
      const node = {inputs: [], outputs: [], opType: '', domain: ''};
      for (const f of fields(buf, n.start, n.end)) {
        if (f.field === 1) node.inputs.push(text(f));
        else if (f.field === 2) node.outputs.push(text(f));
        else if (f.field === 4) node.opType = text(f);
        else if (f.field === 7) node.domain = text(f);
      }
      nodes.push(node);
    }
  }
  return nodes;
}

// Weighted ops whose input `index` (1: the weight; 0 too for left-float) is a DequantizeLinear output.
function readsDequantized(nodes, indices) {
  const producer = new Map();
  for (const n of nodes) for (const o of n.outputs) producer.set(o, n);
  return nodes.filter((n) => WEIGHTED.has(n.opType) && indices.some((i) => {
    const p = producer.get(n.inputs[i]);
    return p !== undefined && p.opType === 'DequantizeLinear';
  }));
}

async function check(model, threads) {
  const saved = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'qfuse-ort-')), 'optimized.onnx');
  await ort.InferenceSession.create(model, {
    intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'extended',
    optimizedModelFilePath: saved});
  const before = readNodes(model);
  const after = readNodes(saved);
  fs.rmSync(path.dirname(saved), {recursive: true, force: true});
  const quantized = readsDequantized(before, [1]).length;
  const leftFloat = readsDequantized(after, [0, 1]);
  const integer = after.filter((n) => INTEGER.has(n.opType)).length;
  const histogram = {};
  for (const n of after) histogram[n.opType] = (histogram[n.opType] || 0) + 1;
  const ops = Object.entries(histogram).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k}:${v}`).join(' ');
  const ok = leftFloat.length === 0 && integer >= quantized && quantized > 0;
  const floatList = leftFloat.map((n) => `${n.opType}(${n.outputs[0]})`).join(', ');
  console.log(`${ok ? 'OK  ' : 'FAIL'} ${model}: ${quantized} quantized weighted ops, ${integer} integer, ` +
              `${leftFloat.length} left float${floatList ? ' [' + floatList + ']' : ''}; optimised ops ${ops}`);
  return ok;
}

async function main() {
  const threads = Number((process.argv.find((a) => a.startsWith('--threads=')) || '--threads=2').slice(10));
  const models = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  if (models.length === 0) throw new Error('usage: integer_ops_check.js MODEL.onnx [MORE.onnx ...]');
  let ok = true;
  for (const m of models) ok = (await check(m, threads)) && ok;
  process.exit(ok ? 0 : 1);
}

main().catch((e) => {
  console.error(`error: ${e.message.split('\n')[0]}`);
  process.exit(1);
});
