// A second process that keeps the GPU busy for gpu-contended-repeat.test.ts: the GPU then time-slices between
// its context and the test's, which stops and resumes the test's kernels at arbitrary points. It alternates a
// 200-token prefill with decode steps of 8 sequences (graphs), sampled greedily, until its time is up.
//   usage (forked with tsx): gpu-contender.ts <model dir> <milliseconds>
import { loadModelConfig } from '@ferrum/models';
import { DEFAULT_SAMPLING_PARAMS, type ForwardBatch, type RowSampling } from '@ferrum/types';
import { loadCuda } from './load-cuda.js';

const [dir, ms] = process.argv.slice(2);
const config = await loadModelConfig(dir);
const executor = await loadCuda(dir, config);

const greedy: RowSampling = {
  requestId: 'contender',
  params: { ...DEFAULT_SAMPLING_PARAMS, temperature: 0 },
  seed: 1,
  outputTokenIds: new Int32Array(0),
  promptTokenIds: new Int32Array(0),
  needsHostLogits: false,
};
/** Sequence b has `kvLens[b]` entries at slots 256 b onwards, the last `newTokens[b]` of them new; each samples its last row. */
function batch(kvLens: number[], newTokens: number[]): ForwardBatch {
  const rows = newTokens.reduce((a, b) => a + b, 0);
  const tokenIds = new Int32Array(rows);
  const positions = new Int32Array(rows);
  const slotMapping = new Int32Array(rows);
  const kvIndices = new Int32Array(kvLens.reduce((a, b) => a + b, 0));
  const qIndptr = new Int32Array(kvLens.length + 1);
  const kvIndptr = new Int32Array(kvLens.length + 1);
  const sampleRows = new Int32Array(kvLens.length);
  kvLens.forEach((kvLen, b) => {
    for (let i = 0; i < kvLen; i++) kvIndices[kvIndptr[b] + i] = 256 * b + i;
    for (let i = 0; i < newTokens[b]; i++) {
      const row = qIndptr[b] + i;
      positions[row] = kvLen - newTokens[b] + i;
      slotMapping[row] = 256 * b + positions[row];
      tokenIds[row] = (row * 7) % config.vocabSize;
    }
    qIndptr[b + 1] = qIndptr[b] + newTokens[b];
    kvIndptr[b + 1] = kvIndptr[b] + kvLen;
    sampleRows[b] = qIndptr[b + 1] - 1;
  });
  return {
    tokenIds,
    positions,
    qIndptr,
    kvIndptr,
    kvIndices,
    slotMapping,
    sampleRows,
    sampling: kvLens.map(() => greedy),
    numSeqs: kvLens.length,
    numTokens: rows,
  };
}
const prefill = batch([200], [200]);
const decode = batch([150, 151, 152, 153, 154, 155, 156, 157], [1, 1, 1, 1, 1, 1, 1, 1]);
process.send?.('ready');
const end = Date.now() + Number(ms);
while (Date.now() < end) {
  await executor.forward(prefill);
  for (let i = 0; i < 8; i++) await executor.forward(decode);
}
await executor.dispose();
