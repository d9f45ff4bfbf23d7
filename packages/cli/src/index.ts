export {
  type BatchLatencySummary,
  formatLatencyReport,
  latencyResultJson,
  summarizeBatchLatency,
} from './bench/batch-latency.js';
export { benchResultJson, formatBenchReport } from './bench/bench-report.js';
export { engineRequest } from './bench/engine-request.js';
export type { LatencySummary } from './bench/latency-summary.js';
export {
  type BenchmarkResult,
  type BenchmarkSummary,
  type LoadShape,
  offerLoad,
  type SendRequest,
} from './bench/offer-load.js';
export { type BenchPrompt, filePrompts, randomPrompts } from './bench/prompt-dataset.js';
export { runServeBenchmark } from './bench/serve-benchmark.js';
export type { BenchTarget, RequestResult } from './bench/stream-request.js';
export type { CliContext } from './cli-context.js';
export { defaultModelDir } from './default-model.js';
export { cachedSnapshotDir, hubCacheDir, hubToken, repoFolderName } from './hub/hf-cache.js';
export type { HubConnection } from './hub/hub-api.js';
export { DEFAULT_INCLUDE, type PullOptions, type PullResult, pullModel } from './hub/pull-model.js';
export { resolveModelDir } from './resolve-model.js';
export { EXIT_USAGE, runCli } from './run-cli.js';
