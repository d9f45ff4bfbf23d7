import type { ComputeBackend, ModelExecutor } from '@ferrum/interfaces';
import { type BackendCapabilities, FerrumError, unavailableCapabilities } from '@ferrum/types';

/**
 * Why Metal cannot run: it needs macOS, and the Objective-C++ runtime itself is not written yet, so the
 * backend reports itself unavailable everywhere rather than pretend.
 */
export function metalUnavailableReason(platform: NodeJS.Platform = process.platform): string {
  return platform === 'darwin'
    ? 'the Metal runtime is not implemented yet (planned: Objective-C++ with MSL kernels)'
    : `Metal needs macOS (this is ${platform})`;
}

/** The Metal backend. Its probe never throws and, for now, always reports it unavailable with the reason. */
export function createMetalBackend(): ComputeBackend {
  const reason = metalUnavailableReason();
  return {
    specificationVersion: 'v1',
    name: 'metal',
    async probe(): Promise<BackendCapabilities> {
      return unavailableCapabilities(reason);
    },
    async loadModel(): Promise<ModelExecutor> {
      throw new FerrumError('backend_unavailable', `metal backend unavailable: ${reason}`);
    },
  };
}
