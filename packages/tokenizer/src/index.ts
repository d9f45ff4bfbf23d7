export { ChatTemplateRenderer } from './chat-template.js';
export { cleanUpTokenization } from './clean-up-tokenization.js';
export { type GenerationConfig, parseGenerationConfig } from './generation-config.js';
export {
  type DecodeOptions,
  type EncodeOptions,
  HfTokenizer,
  type HfTokenizerParts,
} from './hf-tokenizer.js';
export { type LoadTokenizerOptions, loadTokenizer } from './load-tokenizer.js';
export {
  createStopMatcher,
  type StopMatcher,
  type StopMatcherOptions,
  type StopMatchResult,
} from './stop-matcher.js';
export { strftime } from './strftime.js';
export { parseTokenizerConfig, type TokenizerConfig } from './tokenizer-config.js';
