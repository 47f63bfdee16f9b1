#!/usr/bin/env node
// Sentence embeddings with ONNX Runtime (onnxruntime-node, CPU EP) as fastembed computes them: the
// encoder graph on batches padded to each batch's longest input, then mean pooling over the
// attention mask and L2 normalization on the host (numpy there, JavaScript here).
// Prints one JSON line: texts, tokens, the padded tokens the graph ran, seconds (wall), cpu_seconds
// (user + system of the process over the same span), embeddings/s.
//
// Usage: node ort_embed.js --model M.onnx --ids TOKENS.jsonl [--max-length 256] [--batch 32]
//          [--order input|sorted] [--threads 2] [--out EMB.f32]
//   TOKENS.jsonl: `bertrt tokenize --json` lines ({"input_ids": [...], ...}), one an input; an
//   input longer than --max-length keeps its first max-length − 1 ids and its [SEP], as
//   sentence-transformers' truncation (and `bertrt embed`) does.
//   --order input: batches in input order (fastembed); sorted: longest first (sentence-
//   transformers' encode), the least padding. Embeddings come back in input order either way.
//   --out: the embeddings as raw float32 [texts, H].
// Timing: every batch, pooling included, after one untimed run of the first batch (the session's
// memory arena); session creation and reading the ids are not timed.
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

function parseArgs(argv) {
  const a = {model: null, ids: null, maxLength: 256, batch: 32, order: 'input', threads: 2, out: null};
  for (let i = 2; i < argv.length; i++) {
    const k = argv[i];
    const v = () => { if (i + 1 >= argv.length) throw new Error(`missing value for ${k}`); return argv[++i]; };
    switch (k) {
      case '--model': a.model = v(); break;
      case '--ids': a.ids = v(); break;
      case '--max-length': a.maxLength = parseInt(v(), 10); break;
      case '--batch': case '-B': a.batch = parseInt(v(), 10); break;
      case '--order': a.order = v(); break;
      case '--threads': a.threads = parseInt(v(), 10); break;
      case '--out': a.out = v(); break;
      case '-h': case '--help':
        console.log(fs.readFileSync(__filename, 'utf8').split('\n').slice(1, 17).join('\n'));
        process.exit(0);
      default: throw new Error(`unknown argument ${k}`);
    }
  }
  if (!a.model || !a.ids) throw new Error('--model and --ids are required');
  if (a.order !== 'input' && a.order !== 'sorted') throw new Error(`--order ${a.order}: input or sorted`);
  return a;
}

function batches(lens, size, order) {
  const idx = lens.map((_, i) => i);
  if (order === 'sorted') idx.sort((x, y) => lens[y] - lens[x] || x - y);
  const out = [];
  for (let s = 0; s < idx.length; s += size) out.push(idx.slice(s, s + size));
  return out;
}

function feeds(seqs, members) {
  const B = members.length;
  const T = Math.max(...members.map((i) => seqs[i].length));
  const ids = new BigInt64Array(B * T), tt = new BigInt64Array(B * T), mask = new BigInt64Array(B * T);
  members.forEach((m, b) => {
    const s = seqs[m];
    for (let t = 0; t < s.length; t++) { ids[b * T + t] = BigInt(s[t]); mask[b * T + t] = 1n; }
  });
  return {T, f: {
    input_ids: new ort.Tensor('int64', ids, [B, T]),
    token_type_ids: new ort.Tensor('int64', tt, [B, T]),
    attention_mask: new ort.Tensor('int64', mask, [B, T]),
  }};
}

async function main() {
  const a = parseArgs(process.argv);
  const seqs = fs.readFileSync(a.ids, 'utf8').split('\n').filter((l) => l.trim()).map((l) => {
    let ids = JSON.parse(l).input_ids;
    if (ids.length > a.maxLength) { const sep = ids[ids.length - 1]; ids = ids.slice(0, a.maxLength); ids[a.maxLength - 1] = sep; }
    return ids;
  });
  const session = await ort.InferenceSession.create(a.model, {
    executionProviders: ['cpu'], intraOpNumThreads: a.threads, interOpNumThreads: 1,
    graphOptimizationLevel: 'all', executionMode: 'sequential', enableCpuMemArena: true,
    enableMemPattern: true, logSeverityLevel: 3,
  });
  const plan = batches(seqs.map((s) => s.length), a.batch, a.order);
  await session.run(feeds(seqs, plan[0]).f);  // untimed: the arena
  let H = 0, emb = null, padded = 0;
  const t0 = process.hrtime.bigint(), c0 = process.cpuUsage();
  for (const members of plan) {
    const {T, f} = feeds(seqs, members);
    padded += members.length * T;
    const out = await session.run(f);
    const h = out.last_hidden_state;
    if (!emb) { H = h.dims[2]; emb = new Float32Array(seqs.length * H); }
    members.forEach((m, b) => {
      const n = seqs[m].length, e = emb.subarray(m * H, (m + 1) * H);
      for (let t = 0; t < n; t++) {
        const row = h.data.subarray((b * T + t) * H, (b * T + t + 1) * H);
        for (let c = 0; c < H; c++) e[c] += row[c];
      }
      let ss = 0;
      for (let c = 0; c < H; c++) { e[c] /= n; ss += e[c] * e[c]; }
      const norm = Math.max(Math.sqrt(ss), 1e-12);  // torch.nn.functional.normalize's eps
      for (let c = 0; c < H; c++) e[c] /= norm;
    });
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(c0);
  if (a.out) fs.writeFileSync(a.out, Buffer.from(emb.buffer, emb.byteOffset, emb.byteLength));
  const tokens = seqs.reduce((x, s) => x + s.length, 0);
  console.log(JSON.stringify({
    peer: 'onnxruntime-node', model: a.model, order: a.order, batch: a.batch, threads: a.threads,
    texts: seqs.length, tokens, padded_tokens: padded, hidden: H, seconds: +seconds.toFixed(4),
    cpu_seconds: +((cpu.user + cpu.system) / 1e6).toFixed(4),
    embeddings_per_s: +(seqs.length / seconds).toFixed(2),
  }));
}

main().catch((e) => { console.error(e.message || e); process.exit(1); });
