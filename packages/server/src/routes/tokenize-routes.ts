import type { FastifyInstance } from 'fastify';
import { renderChatPrompt } from '../chat-prompt.js';
import { encodeText } from '../encode-text.js';
import { invalidRequest } from '../openai-error.js';
import { checkModel, type RouteContext } from '../route-context.js';
import {
  type DetokenizeRequest,
  DetokenizeRequestSchema,
  type TokenizeRequest,
  TokenizeRequestSchema,
} from '../schemas/tokenize-request.js';
import { tokenString } from '../token-text.js';

/** `POST /tokenize` and `POST /detokenize` in vLLM's shapes. */
export function registerTokenizeRoutes(app: FastifyInstance, context: RouteContext): void {
  const { engine } = context;
  app.post('/tokenize', { schema: { body: TokenizeRequestSchema } }, async (request) => {
    const body = request.body as TokenizeRequest;
    checkModel(context, body.model);
    const tokenizer = engine.tokenizer;
    if (!tokenizer) throw invalidRequest('this model has no tokenizer', null, 'tokenizer_unavailable');
    let tokens: number[];
    if ('messages' in body) {
      const prompt = await renderChatPrompt(tokenizer, {
        messages: body.messages,
        tools: body.tools,
        addGenerationPrompt: body.add_generation_prompt,
        chatTemplateKwargs: body.chat_template_kwargs,
      });
      tokens = body.add_special_tokens ? await encodeText(tokenizer, prompt.text, true) : prompt.tokenIds;
    } else {
      tokens = await encodeText(tokenizer, body.prompt, body.add_special_tokens ?? true);
    }
    return {
      count: tokens.length,
      max_model_len: context.maxModelLen,
      tokens,
      token_strs: body.return_token_strs ? tokens.map((id) => tokenString(tokenizer, id)) : null,
    };
  });
  app.post('/detokenize', { schema: { body: DetokenizeRequestSchema } }, async (request) => {
    const body = request.body as DetokenizeRequest;
    checkModel(context, body.model);
    const tokenizer = engine.tokenizer;
    if (!tokenizer) throw invalidRequest('this model has no tokenizer', null, 'tokenizer_unavailable');
    const vocabSize = engine.modelInfo.config.vocabSize;
    const bad = body.tokens.find((id) => id >= vocabSize);
    if (bad !== undefined) throw invalidRequest(`token id ${bad} is outside [0, ${vocabSize})`, 'tokens');
    return { prompt: tokenizer.decode(body.tokens) };
  });
}
