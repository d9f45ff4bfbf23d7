/**
 * Radix tree benchmarks on a ~1M-token prefix cache: prefix match, insertion with LRU eviction at a full
 * pool, and per-token decode commits. Run with `pnpm --filter @ferrum/kv bench`. Inputs are seeded.
 */
import os from 'node:os';
import type { KvCacheManager } from '@ferrum/interfaces';
import { seededRandom } from '@ferrum/types';
import { Bench } from 'tinybench';
import { createKvCacheManager } from '../src/index.js';

const NUM_SYSTEM_PROMPTS = 64;
const SYSTEM_TOKENS = 256;
const DOCUMENT_TOKENS = 1024;
const NUM_DOCUMENTS = 1280; // 64 × 256 shared + 1280 × 768 unique ≈ 1.0M cached tokens
const VOCAB = 128_000;

const random = seededRandom(12345);
const nextToken = () => Math.floor(random() * VOCAB);
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

/** A manager whose pool holds the ~1M-token tree plus one document in flight, so inserts must evict. */
function buildTree(): { kv: KvCacheManager; buildMs: number } {
  const kv = createKvCacheManager({ numSlots: numTreeTokens + DOCUMENT_TOKENS });
  const start = performance.now();
  cachedDocuments.forEach((document, i) => {
    prefill(kv, `build${i}`, document);
    kv.free(`build${i}`);
  });
  const buildMs = performance.now() - start;
  kv.checkIntegrity();
  return { kv, buildMs };
}

function prefill(kv: KvCacheManager, id: string, tokens: Int32Array): number {
  const matched = kv.addSequence(id, tokens);
  kv.allocate(id, tokens.length - matched);
  kv.commit(id, tokens);
  return matched;
}

/** Per-task counters, so the report shows how many tokens each operation really matched. */
interface Counter {
  ops: number;
  matched: number;
}
const counters = new Map<string, Counter>();
function counted(name: string, fn: () => number): [string, () => void] {
  const counter = { ops: 0, matched: 0 };
  counters.set(name, counter);
  return [
    name,
    () => {
      counter.matched += fn();
      counter.ops++;
    },
  ];
}

let cursor = 0;
const options = { time: 2000, warmupTime: 300 };
// Matching leaves the tree as it is (cache: false), so both match tasks see the full 1M-token tree.
const matching = buildTree();
const matchBench = new Bench({ name: 'match', ...options });
matchBench
  .add(
    ...counted('match 1024-token prompt, 1023 cached (add + free)', () => {
      const matched = matching.kv.addSequence('match', cachedDocuments[cursor++ % NUM_DOCUMENTS]);
      matching.kv.free('match', { cache: false });
      return matched;
    }),
  )
  .add(
    ...counted('match 1024-token prompt, 256 cached (add + free)', () => {
      const matched = matching.kv.addSequence('miss', freshDocuments[cursor++ % freshDocuments.length]);
      matching.kv.free('miss', { cache: false });
      return matched;
    }),
  );
await matchBench.run();
matching.kv.checkIntegrity();

// Inserting keeps the pool full: every document in evicts about as many least recently used tokens.
const inserting = buildTree();
const insertBench = new Bench({ name: 'insert', ...options });
insertBench
  .add(
    ...counted('insert 768 new tokens with LRU eviction (add + allocate + commit + free)', () => {
      const matched = prefill(inserting.kv, 'insert', freshDocuments[cursor++ % freshDocuments.length]);
      inserting.kv.free('insert');
      return matched;
    }),
  )
  .add(
    ...counted('decode 256 tokens: allocate(1) + commit per token', () => {
      // A first token outside the vocabulary makes every run a new branch (no dedup against old runs).
      decodeTokens[0] = VOCAB + cursor++;
      const matched = inserting.kv.addSequence('decode', decodeTokens.subarray(0, 1));
      for (let length = 1; length <= decodeTokens.length; length++) {
        inserting.kv.allocate('decode', 1);
        inserting.kv.commit('decode', decodeTokens.subarray(0, length));
      }
      inserting.kv.free('decode');
      return matched;
    }),
  );
await insertBench.run();
inserting.kv.checkIntegrity();

const tokensPerOp = [1024, 1024, 1024, 256];
console.log(`radix benchmarks on a ${numTreeTokens}-token tree (built in ${matching.buildMs.toFixed(0)} ms)`);
console.log(`${os.cpus()[0]?.model ?? 'unknown CPU'} (${os.cpus().length} cores), Node ${process.version}`);
const rows = [...matchBench.tasks, ...insertBench.tasks].map((task, i) => {
  const counter = counters.get(task.name)!;
  const latency = task.result!.latency;
  // Operations per second over the whole run (1 / mean latency), not the mean of per-sample rates.
  const opsPerSecond = 1000 / latency.mean;
  return {
    task: task.name,
    'ops/s': Math.round(opsPerSecond),
    'mean µs': (latency.mean * 1000).toFixed(1),
    'p50 µs': ((latency.p50 ?? Number.NaN) * 1000).toFixed(1),
    'p99 µs': ((latency.p99 ?? Number.NaN) * 1000).toFixed(1),
    'tokens/s': Math.round(opsPerSecond * tokensPerOp[i]),
    'matched/op': (counter.matched / counter.ops).toFixed(1),
  };
});
console.table(rows);
console.log(JSON.stringify({ treeTokens: numTreeTokens, rows, insertStats: inserting.kv.stats() }));
