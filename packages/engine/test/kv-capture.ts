import type { KvCacheManager } from '@ferrum/interfaces';
import { createKvCacheManager } from '@ferrum/kv';
import type { EngineBuildContext } from '../src/index.js';

/**
 * The engine's default KV cache manager (prefix caching on), kept where a test can reach it after the
 * engine is built: pass `factory` as the `kvCacheManager` override, then read `manager()`.
 */
export function capturedKvCache(): {
  factory: (context: EngineBuildContext) => KvCacheManager;
  manager: () => KvCacheManager;
} {
  let kv: KvCacheManager | undefined;
  return {
    factory: ({ executor }) => {
      kv = createKvCacheManager({
        numSlots: executor.info.numKvSlots,
        numHostSlots: executor.info.numHostKvSlots,
        enablePrefixCaching: true,
      });
      return kv;
    },
    manager: () => {
      if (kv === undefined) throw new Error('the engine has not built its KV cache manager yet');
      return kv;
    },
  };
}
