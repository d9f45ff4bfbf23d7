export { createServer, type ServableEngine, type ServerOptions } from './create-server.js';
export type { OpenAIErrorBody, OpenAIErrorType } from './openai-error.js';
export { renderPrometheusMetrics } from './prometheus-metrics.js';
export { type RunningServer, type StartServerOptions, startServer } from './start-server.js';
export { detectToolCallFormat } from './tool-call-format.js';
