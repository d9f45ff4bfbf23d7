/**
 * Radix tree benchmarks on a ~1M-token prefix cache: prefix match, insertion with LRU eviction at a full
 * pool, and per-token decode commits. Run with `pnpm --filter @ferrum/kv bench`. Inputs are seeded.
 */
import os from 'node:os';
import { Bench } from 'tinybench';
import { createKvCacheManager } from '../src/index.js';

const NUM_SYSTEM_PROMPTS = 64;
const SYSTEM_TOKENS = 256;
const DOCUMENT_TOKENS = 1024;
const NUM_DOCUMENTS = 1280; // 64 × 256 shared + 1280 × 768 unique ≈ 1.0M cached tokens
const VOCAB = 128_000;

let seed = 12345;
function nextToken(): number {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  return seed % VOCAB;
}
const randomTokens = (count: number) => Int32Array.from({ length: count }, nextToken);
const systemPrompts = Array.from({ length: NUM_SYSTEM_PROMPTS }, () => randomTokens(SYSTEM_TOKENS));
function makeDocument(index: number): Int32Array {
  const document = new Int32Array(DOCUMENT_TOKENS);
  document.set(systemPrompts[index % NUM_SYSTEM_PROMPTS]);
  document.set(randomTokens(DOCUMENT_TOKENS - SYSTEM_TOKENS), SYSTEM_TOKENS);
  return document;
}

const cachedDocuments = Array.from({ length: NUM_DOCUMENTS }, (_, i) => makeDocument(i));
// Fresh documents for the insert benchmark: 4096 × 768 new tokens cycle through a 1M pool, so by the time
// one comes round again it has long been evicted.
const freshDocuments = Array.from({ length: 4096 }, (_, i) => makeDocument(i));
const decodeTokens = randomTokens(256);
const numTreeTokens = NUM_SYSTEM_PROMPTS * SYSTEM_TOKENS + NUM_DOCUMENTS * (DOCUMENT_TOKENS - SYSTEM_TOKENS);

// The pool holds the tree plus one document in flight, so every insertion must evict.
const kv = createKvCacheManager({ numSlots: numTreeTokens + DOCUMENT_TOKENS });
function prefill(id: string, tokens: Int32Array): void {
  const matched = kv.addSequence(id, tokens);
  kv.allocate(id, tokens.length - matched);
  kv.commit(id, tokens);
}
const buildStart = performance.now();
cachedDocuments.forEach((document, i) => {
  prefill(`build${i}`, document);
  kv.free(`build${i}`);
});
const buildMs = performance.now() - buildStart;
kv.checkIntegrity();

let cursor = 0;
const bench = new Bench({ name: 'radix', time: 2000, warmupTime: 300 });
bench
  .add('match 1024-token prompt, 1023 cached (add + free)', () => {
    const document = cachedDocuments[cursor++ % NUM_DOCUMENTS];
    kv.addSequence('match', document);
    kv.free('match', { cache: false });
  })
  .add('match 1024-token prompt, 256 cached (add + free)', () => {
    const document = freshDocuments[cursor++ % freshDocuments.length];
    kv.addSequence('miss', document);
    kv.free('miss', { cache: false });
  })
  .add('insert 768 new tokens with LRU eviction (add + allocate + commit + free)', () => {
    prefill('insert', freshDocuments[cursor++ % freshDocuments.length]);
    kv.free('insert');
  })
  .add('decode 256 tokens: allocate(1) + commit per token', () => {
    // A first token outside the vocabulary makes every run a new branch (no dedup against old runs).
    decodeTokens[0] = VOCAB + cursor++;
    kv.addSequence('decode', decodeTokens.subarray(0, 1));
    for (let length = 1; length <= decodeTokens.length; length++) {
      kv.allocate('decode', 1);
      kv.commit('decode', decodeTokens.subarray(0, length));
    }
    kv.free('decode');
  });

await bench.run();
kv.checkIntegrity();

const tokensPerOp = [1023, 256, 768, 256];
console.log(`radix benchmarks on a ${numTreeTokens}-token tree (built in ${buildMs.toFixed(0)} ms)`);
console.log(`${os.cpus()[0]?.model ?? 'unknown CPU'}, Node ${process.version}`);
console.table(
  bench.tasks.map((task, i) => ({
    task: task.name,
    // Operations per second over the whole run (1 / mean latency), not the mean of per-sample rates.
    'ops/s': Math.round(1000 / task.result!.latency.mean),
    'mean µs': (task.result!.latency.mean * 1000).toFixed(1),
    'p50 µs': ((task.result!.latency.p50 ?? Number.NaN) * 1000).toFixed(1),
    'p99 µs': ((task.result!.latency.p99 ?? Number.NaN) * 1000).toFixed(1),
    'tokens/s': Math.round((1000 / task.result!.latency.mean) * tokensPerOp[i]),
  })),
);
console.log(JSON.stringify({ stats: kv.stats(), treeTokens: numTreeTokens }));
