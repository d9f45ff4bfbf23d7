import { describe, expect, it } from 'vitest';
import { parseTokenizerConfig } from './tokenizer-config.js';
import {
  applyTransformersPipeline,
  hasByteFallbackDecoder,
  type TokenizerJson,
} from './transformers-pipeline.js';

function sentencepieceJson(): TokenizerJson {
  return {
    added_tokens: [
      { id: 1, content: '<s>', special: true },
      { id: 2, content: '</s>', special: true },
    ],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: '\u2581' }] },
    pre_tokenizer: null,
    model: { type: 'BPE', byte_fallback: true, vocab: { '<s>': 1, '</s>': 2 } },
  };
}

describe('applyTransformersPipeline', () => {
  it.each([
    [{ legacy: false }, 'first'],
    [{ legacy: true }, 'always'],
    [{}, 'always'],
    [{ add_prefix_space: false }, 'never'],
  ])('gives LlamaTokenizer with %j a Metaspace pre-tokenizer (%s)', (fields, scheme) => {
    const json = sentencepieceJson();
    const config = parseTokenizerConfig(
      { tokenizer_class: 'LlamaTokenizer', bos_token: '<s>', ...fields },
      {},
      'f',
    );
    expect(applyTransformersPipeline(json, config)).toBe(true);
    expect(json.normalizer).toBeNull();
    expect(json.pre_tokenizer).toEqual({
      type: 'Metaspace',
      replacement: '\u2581',
      prepend_scheme: scheme,
      split: false,
    });
    expect(hasByteFallbackDecoder(json.decoder)).toBe(true);
  });

  it('builds the BOS/EOS template from add_bos_token and add_eos_token', () => {
    const json = sentencepieceJson();
    const config = parseTokenizerConfig(
      {
        tokenizer_class: 'LlamaTokenizer',
        bos_token: '<s>',
        eos_token: '</s>',
        add_bos_token: false,
        add_eos_token: true,
      },
      {},
      'f',
    );
    applyTransformersPipeline(json, config);
    expect(json.post_processor).toMatchObject({
      type: 'TemplateProcessing',
      single: [{ Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } }],
      special_tokens: { '</s>': { id: '</s>', ids: [2], tokens: ['</s>'] } },
    });
  });

  it('leaves other classes and byte-level files alone', () => {
    const byteLevel: TokenizerJson = {
      model: { type: 'BPE', byte_fallback: false },
      pre_tokenizer: { type: 'ByteLevel' },
    };
    const llama = parseTokenizerConfig({ tokenizer_class: 'LlamaTokenizer' }, {}, 'f');
    expect(applyTransformersPipeline(byteLevel, llama)).toBe(false);
    expect(byteLevel.pre_tokenizer).toEqual({ type: 'ByteLevel' });
    const qwen = parseTokenizerConfig({ tokenizer_class: 'Qwen2Tokenizer' }, {}, 'f');
    expect(applyTransformersPipeline(sentencepieceJson(), qwen)).toBe(false);
  });
});
