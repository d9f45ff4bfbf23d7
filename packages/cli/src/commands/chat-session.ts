import { createInterface } from 'node:readline';
import type { FerrumEngine } from '@ferrum/engine';
import { type ChatMessage, FerrumError, type SamplingParams } from '@ferrum/types';
import type { CliContext } from '../cli-context.js';

/** Options of {@link chatSession}. */
export interface ChatSessionOptions {
  readonly system?: string;
  readonly sampling: Partial<SamplingParams>;
}

/**
 * A streaming chat in the terminal: each line is a user turn, the reply streams as it is generated.
 * `/reset` forgets the conversation, `/exit` or end of input quits; Ctrl-C stops a reply, or quits at the prompt.
 */
export async function chatSession(
  engine: FerrumEngine,
  context: CliContext,
  options: ChatSessionOptions,
): Promise<void> {
  const tokenizer = engine.tokenizer;
  if (!tokenizer) throw new FerrumError('invalid_argument', 'chat needs a model with a tokenizer');
  const start: ChatMessage[] = options.system ? [{ role: 'system', content: options.system }] : [];
  let history = [...start];
  const terminal = context.stdin.isTTY === true;
  const rl = createInterface({ input: context.stdin, output: context.stdout, terminal, prompt: '> ' });
  let reply: AbortController | null = null;
  rl.on('SIGINT', () => (reply ? reply.abort() : rl.close()));
  context.stderr.write(`Chatting with ${engine.modelName}. /reset forgets, /exit quits.\n`);
  if (terminal) rl.prompt();
  for await (const line of rl) {
    const input = line.trim();
    if (input === '/exit' || input === '/quit' || context.signal.aborted) break;
    if (input === '/reset') history = [...start];
    else if (input !== '') {
      history.push({ role: 'user', content: input });
      reply = new AbortController();
      const signal = AbortSignal.any([reply.signal, context.signal]);
      const prompt = { text: tokenizer.applyChatTemplate(history), addSpecialTokens: false };
      let text = '';
      for await (const chunk of engine.generate({ prompt, sampling: options.sampling }, { signal })) {
        text += chunk.text;
        context.stdout.write(chunk.text);
      }
      reply = null;
      context.stdout.write('\n');
      history.push({ role: 'assistant', content: text });
    }
    if (terminal) rl.prompt();
  }
  rl.close();
}
