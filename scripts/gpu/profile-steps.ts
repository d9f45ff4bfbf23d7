// One eager forward per scenario on a dummy-weight model, for Nsight Compute to time kernel by kernel
// (scripts/gpu/profile.sh runs it under ncu; ncu-table.py splits the launches into steps at each
// embedding kernel and sums them per kernel).
//   usage: tsx scripts/gpu/profile-steps.ts <config.json> <layers> <scenario>...
//   layers: cut the model to that many layers (per-layer kernels are the same; fewer launches keep ncu's
//   replay time down); 0 keeps the config's
//   scenario: prefill:<tokens> | decode:<seqs>:<context> | extend:<new tokens>:<context>
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadModelConfig } from '../../packages/models/src/index.js';
import { createCudaBackend } from '../../packages/runtime-cuda/src/index.js';
import { loadNativeAddon } from '../../packages/runtime-cuda/src/native-addon.js';
import { SLOTS_PER_SEQUENCE, syntheticBatch } from './synthetic-batch.js';

const [configFile, layers, ...scenarios] = process.argv.slice(2);
const dir = mkdtempSync(path.join(os.tmpdir(), 'ferrum-profile-'));
const raw = JSON.parse(readFileSync(configFile, 'utf8'));
if (Number(layers) > 0) raw.num_hidden_layers = Number(layers);
writeFileSync(path.join(dir, 'config.json'), JSON.stringify(raw));
const config = await loadModelConfig(dir);
const executor = await createCudaBackend().loadModel({
  modelDir: dir,
  config,
  loadFormat: 'dummy',
  maxKvTokens: 64 * SLOTS_PER_SEQUENCE + 4096,
  maxBatchTokens: 4096,
  maxBatchSeqs: 64,
  seed: 1,
  backendOptions: { enforceEager: true },
});
const batches = scenarios.map((scenario) => {
  const [kind, a, b] = scenario.split(':');
  return kind === 'prefill'
    ? syntheticBatch(config, 1, Number(a), Number(a))
    : kind === 'decode'
      ? syntheticBatch(config, Number(a), Number(b), 1)
      : syntheticBatch(config, 1, Number(b), Number(a));
});
// Each scenario once unprofiled first (its GEMM plans and kernels load on first use), then the profiled round: the
// profiler collects only between the two profilerRange calls (profile.sh runs ncu with --profile-from-start off).
for (const batch of batches) await executor.forward(batch);
const { addon } = loadNativeAddon();
addon?.profilerRange(true);
for (const [i, batch] of batches.entries()) {
  await executor.forward(batch);
  console.error(`profiled ${scenarios[i]}`);
}
addon?.profilerRange(false);
await executor.dispose();
