export { ChatTemplateRenderer } from './chat-template.js';
export { cleanUpTokenization } from './clean-up-tokenization.js';
export {
  createToolCallParser,
  type ExtractedToolCalls,
  extractToolCalls,
  type ToolCallFormat,
  toolCallFormatNeedsSpecialTokens,
  toolCallFormats,
} from './create-tool-call-parser.js';
export { type GenerationConfig, parseGenerationConfig } from './generation-config.js';
export { createHermesToolCallParser } from './hermes-tool-call-parser.js';
export {
  type DecodeOptions,
  type EncodeOptions,
  HfTokenizer,
  type HfTokenizerParts,
} from './hf-tokenizer.js';
export { createLlama3JsonToolCallParser } from './llama3-json-tool-call-parser.js';
export { type LoadTokenizerOptions, loadTokenizer } from './load-tokenizer.js';
export { createMistralToolCallParser } from './mistral-tool-call-parser.js';
export {
  createStopMatcher,
  type StopMatcher,
  type StopMatcherOptions,
  type StopMatchResult,
} from './stop-matcher.js';
export { strftime } from './strftime.js';
export { parseTokenizerConfig, type TokenizerConfig } from './tokenizer-config.js';
export {
  defaultToolCallId,
  type ToolCallChunk,
  type ToolCallDelta,
  type ToolCallParser,
  type ToolCallParserOptions,
  type ToolCallParseStep,
} from './tool-call.js';
