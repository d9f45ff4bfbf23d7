import { probeBackends } from '@ferrum/engine';
import type { CliContext } from '../cli-context.js';
import { parseOptions } from '../parse-options.js';

export const DEVICES_USAGE = `Usage: ferrum devices [--json]

Probe every backend (cpu, cuda, metal) and print whether it can run here, and why not.`;

function gib(bytes: number): string {
  return `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
}

/** `ferrum devices`: one line per backend, or the probes as JSON. */
export async function devicesCommand(args: readonly string[], context: CliContext): Promise<number> {
  const parsed = parseOptions('devices', args, { json: { type: 'boolean' } });
  const probes = await probeBackends();
  if (parsed.values.json) {
    context.stdout.write(`${JSON.stringify(probes, null, 2)}\n`);
    return 0;
  }
  for (const { name, capabilities: c } of probes) {
    const detail = c.available
      ? `${c.device}; ${gib(c.freeMemoryBytes)} free of ${gib(c.totalMemoryBytes)}; dtypes ${c.dtypes.join(', ')}; score ${c.score}`
      : (c.reason ?? 'unavailable');
    context.stdout.write(
      `${name.padEnd(6)} ${(c.available ? 'available' : 'unavailable').padEnd(12)} ${detail}\n`,
    );
  }
  return 0;
}
