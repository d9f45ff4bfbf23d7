import { FerrumError } from '@ferrum/types';
import type { CliContext } from '../cli-context.js';
import { BENCH_LATENCY_USAGE, benchLatencyCommand } from './bench-latency-command.js';
import { BENCH_SERVE_USAGE, benchServeCommand } from './bench-serve-command.js';
import { BENCH_THROUGHPUT_USAGE, benchThroughputCommand } from './bench-throughput-command.js';

const BENCHMARKS = {
  serve: {
    run: benchServeCommand,
    usage: BENCH_SERVE_USAGE,
    summary: 'load-test an OpenAI-compatible server over HTTP',
  },
  throughput: {
    run: benchThroughputCommand,
    usage: BENCH_THROUGHPUT_USAGE,
    summary: 'offline: every request at once through the engine in this process',
  },
  latency: {
    run: benchLatencyCommand,
    usage: BENCH_LATENCY_USAGE,
    summary: 'offline: latency of one batch through the engine in this process',
  },
} as const;

type BenchmarkName = keyof typeof BENCHMARKS;

const OVERVIEW = `Usage: ferrum bench <serve|throughput|latency> [options]

${Object.entries(BENCHMARKS)
  .map(([name, b]) => `  ${name.padEnd(12)}${b.summary}`)
  .join('\n')}

\`ferrum bench <benchmark> --help\` describes its options.`;

function isBenchmark(name: string | undefined): name is BenchmarkName {
  return name !== undefined && Object.hasOwn(BENCHMARKS, name);
}

/** The help of `ferrum bench <args[0]>`, or the overview of the benchmarks. */
export function benchUsage(args: readonly string[]): string {
  return isBenchmark(args[0]) ? BENCHMARKS[args[0]].usage : OVERVIEW;
}

/** `ferrum bench <benchmark>`: dispatch to `serve`, `throughput` or `latency`. */
export async function benchCommand(args: readonly string[], context: CliContext): Promise<number> {
  const [name, ...rest] = args;
  if (!isBenchmark(name)) {
    const given = name === undefined ? 'no benchmark given' : `unknown benchmark "${name}"`;
    throw new FerrumError('invalid_argument', `bench: ${given}; use serve, throughput or latency`);
  }
  return BENCHMARKS[name].run(rest, context);
}
