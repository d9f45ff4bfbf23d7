import { createEngine, warmUp } from '@ferrum/engine';
import { startServer } from '@ferrum/server';
import { type ToolCallFormat, toolCallFormats } from '@ferrum/tokenizer';
import { FerrumError } from '@ferrum/types';
import type { CliContext } from '../cli-context.js';
import { ENGINE_FLAGS, ENGINE_FLAGS_HELP, engineOptionsFrom } from '../engine-flags.js';
import { choiceOption, numberOption, parseOptions, stringOption } from '../parse-options.js';

export const SERVE_USAGE = `Usage: ferrum serve [options]

Serve a model over an OpenAI-compatible HTTP API (/v1/chat/completions, /v1/completions, /v1/models,
/tokenize, /detokenize, /health, /metrics). Ctrl-C or SIGTERM stops it gracefully: new requests get 503,
open ones may finish for up to --shutdown-timeout seconds, then the rest are aborted (streams still end
with finish_reason "abort" and [DONE]). A second Ctrl-C exits at once.

  --host HOST                   default 127.0.0.1 (0.0.0.0 listens on every interface)
  --port PORT                   default 8000; 0 picks a free port
  --served-model-name NAME      name clients send as \`model\` (default: the model directory's name)
  --api-key KEY                 require \`Authorization: Bearer KEY\` on /v1 (or set FERRUM_API_KEY)
  --tool-call-parser auto|${toolCallFormats.join('|')}|none   how tool calls are read back (default auto)
  --seed S                      seed of dummy weights and of requests that give none
  --shutdown-timeout SECONDS    how long open requests may run on after Ctrl-C / SIGTERM (default 30)
  --skip-warmup                 listen at once, without the few short requests that first warm the engine up
${ENGINE_FLAGS_HELP}`;

/** Seconds open requests may run on after the stop signal: Kubernetes' default grace period. */
const DEFAULT_SHUTDOWN_SECONDS = 30;

/**
 * `ferrum serve`: runs until the context's signal fires, then drains the server (see
 * `RunningServer.shutdown`) and shuts the engine down. The second signal is the binary's to handle.
 */
export async function serveCommand(args: readonly string[], context: CliContext): Promise<number> {
  const parsed = parseOptions('serve', args, {
    ...ENGINE_FLAGS,
    host: { type: 'string' },
    port: { type: 'string' },
    'served-model-name': { type: 'string' },
    'api-key': { type: 'string' },
    'tool-call-parser': { type: 'string' },
    seed: { type: 'string' },
    'shutdown-timeout': { type: 'string' },
    'skip-warmup': { type: 'boolean' },
  });
  if (parsed.positionals.length > 0) {
    throw new FerrumError(
      'invalid_argument',
      `serve: unexpected argument "${parsed.positionals[0]}" (use --model)`,
    );
  }
  const port = numberOption(parsed, 'port', { min: 0, max: 65535, integer: true }) ?? 8000;
  const shutdownSeconds = numberOption(parsed, 'shutdown-timeout', { min: 0 }) ?? DEFAULT_SHUTDOWN_SECONDS;
  const parser = choiceOption(parsed, 'tool-call-parser', ['auto', ...toolCallFormats, 'none']) ?? 'auto';
  const log = (line: string) => context.stderr.write(`${line}\n`);
  const engineOptions = engineOptionsFrom(parsed, context.env);
  const engine = await createEngine({
    ...engineOptions,
    servedModelName: stringOption(parsed, 'served-model-name'),
    seed: numberOption(parsed, 'seed', { integer: true }),
    log,
  });
  try {
    if (parsed.values['skip-warmup'] !== true) {
      const started = performance.now();
      await warmUp(engine);
      log(`warmed up in ${Math.round(performance.now() - started)} ms`);
    }
    const server = await startServer(engine, {
      host: stringOption(parsed, 'host') ?? '127.0.0.1',
      port,
      apiKey: stringOption(parsed, 'api-key') ?? context.env.FERRUM_API_KEY,
      maxModelLen: engineOptions.maxModelLen,
      toolCallParser: parser === 'none' ? null : (parser as ToolCallFormat | 'auto'),
    });
    log(`serving ${engine.modelName} on ${engine.modelInfo.backend} at ${server.url}`);
    if (!context.signal.aborted) {
      await new Promise((resolve) => context.signal.addEventListener('abort', resolve, { once: true }));
    }
    const numOpen = server.numOpenRequests();
    log(
      `shutting down: waiting up to ${shutdownSeconds} s for ${numOpen} open request${numOpen === 1 ? '' : 's'}` +
        ' (Ctrl-C again exits at once)',
    );
    await server.shutdown({ timeoutMs: shutdownSeconds * 1000 });
  } finally {
    await engine.shutdown();
  }
  return 0;
}
