export { createKvCacheManager, type KvCacheManagerOptions } from './kv-cache-manager.js';
