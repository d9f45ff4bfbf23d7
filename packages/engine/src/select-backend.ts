import type { ComputeBackend } from '@ferrum/interfaces';
import { type BackendCapabilities, FerrumError, unavailableCapabilities } from '@ferrum/types';

/** A backend with the result of its probe. */
export interface ProbedBackend {
  readonly backend: ComputeBackend;
  readonly capabilities: BackendCapabilities;
}

/** Probe every backend; a probe that throws despite its contract counts as unavailable. */
export async function probeAll(backends: readonly ComputeBackend[]): Promise<ProbedBackend[]> {
  return Promise.all(
    backends.map(async (backend) => {
      try {
        return { backend, capabilities: await backend.probe() };
      } catch (error) {
        return {
          backend,
          capabilities: unavailableCapabilities(`probe failed: ${(error as Error).message}`),
        };
      }
    }),
  );
}

/**
 * Pick a backend: the named one (which must be available), or under `auto` the available one with the
 * highest score. Every rejected candidate's reason is reported through `log`, so a fallback to CPU says why.
 */
export function chooseBackend(
  probed: readonly ProbedBackend[],
  device: string,
  log: (message: string) => void,
): ProbedBackend {
  if (device !== 'auto') {
    const named = probed.find((p) => p.backend.name === device);
    if (!named) {
      const known = probed.map((p) => p.backend.name).join(', ');
      throw new FerrumError('invalid_argument', `unknown device "${device}" (known: ${known})`);
    }
    if (!named.capabilities.available) {
      throw new FerrumError(
        'backend_unavailable',
        `device "${device}" is unavailable: ${named.capabilities.reason ?? 'no reason given'}`,
      );
    }
    return named;
  }
  const candidates = probed.filter((p) => p.capabilities.available && p.capabilities.score > 0);
  for (const p of probed) {
    if (!p.capabilities.available)
      log(`backend ${p.backend.name} skipped: ${p.capabilities.reason ?? 'unavailable'}`);
  }
  if (candidates.length === 0) {
    const reasons = probed
      .map((p) => `${p.backend.name}: ${p.capabilities.reason ?? 'unavailable'}`)
      .join('; ');
    throw new FerrumError('backend_unavailable', `no compute backend is available (${reasons})`);
  }
  return candidates.reduce((best, p) => (p.capabilities.score > best.capabilities.score ? p : best));
}
