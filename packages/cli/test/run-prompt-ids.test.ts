import { copyFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultModelDir } from '../src/index.js';
import { runFerrum } from './helpers/cli-run.js';

const TINY = defaultModelDir()!;
/** The tiny model's vocabulary size, as its config.json states it. */
const VOCAB = 512;

describe('ferrum run checks the prompt before the engine loads', () => {
  // A model directory with the tiny model's config.json and nothing else: loading its weights would fail,
  // so an answer about the ids proves they were checked first.
  let configOnly: string;
  beforeAll(async () => {
    configOnly = await mkdtemp(join(tmpdir(), 'ferrum-config-only-'));
    copyFileSync(join(TINY, 'config.json'), join(configOnly, 'config.json'));
  });
  afterAll(() => rm(configOnly, { recursive: true, force: true }));

  it.each([
    ['1,x', '--prompt-ids must be comma-separated token ids, got "1,x"'],
    ['', '--prompt-ids must be comma-separated token ids, got ""'],
    ['1,,2', '--prompt-ids must be comma-separated token ids, got "1,,2"'],
    ['-1', '--prompt-ids must be comma-separated token ids, got "-1"'],
    ['1.5', '--prompt-ids must be comma-separated token ids, got "1.5"'],
  ])('rejects the syntax of %j before even looking for the model', async (ids, message) => {
    const run = await runFerrum(['run', '--model', '/nonexistent/model', `--prompt-ids=${ids}`]);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`ferrum: ${message}\n`);
  });

  it('rejects an empty --prompt before looking for the model too', async () => {
    const run = await runFerrum(['run', '--model', '/nonexistent/model', '--prompt=']);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe('ferrum: run: the prompt is empty (give --prompt TEXT)\n');
  });

  it.each([
    ['1,99999', 99_999, 1],
    [`${VOCAB}`, VOCAB, 0],
    ['3, 4, 123456789012345678901234567890', 1.2345678901234568e29, 2],
  ])(
    'rejects ids outside the vocabulary (%j) from config.json, before loading weights',
    async (ids, id, index) => {
      const run = await runFerrum(['run', '--model', configOnly, '--prompt-ids', ids, '--device', 'cpu']);
      expect(run.code).toBe(2);
      expect(run.stderr).toBe(
        `ferrum: --prompt-ids: token id ${id} at index ${index} is outside the model's vocabulary [0, ${VOCAB})\n`,
      );
    },
  );

  it('starts no engine for a bad id (no start-up log with --verbose)', async () => {
    const run = await runFerrum(['run', '--prompt-ids', '7,512', '--verbose', '--device', 'cpu']);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      `ferrum: --prompt-ids: token id 512 at index 1 is outside the model's vocabulary [0, ${VOCAB})\n`,
    );
  });

  it('accepts the last id of the vocabulary, with spaces around ids', async () => {
    const run = await runFerrum([
      'run',
      '--prompt-ids',
      ` 0, ${VOCAB - 1} `,
      '--max-tokens',
      '1',
      '--temperature',
      '0',
      '--json',
      '--device',
      'cpu',
    ]);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout).usage.promptTokens).toBe(2);
  });
});
