import { readFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { loadTokenizer } from '@ferrum/tokenizer';
import { describe, expect, it } from 'vitest';
import { defaultModelDir } from '../src/index.js';
import { runFerrum } from './helpers/cli-run.js';

const TINY = defaultModelDir()!;
const golden = JSON.parse(readFileSync(join(TINY, 'golden.json'), 'utf8')) as {
  prompts: number[][];
  greedy: number[][];
};

describe('ferrum run (embedded tiny model, CPU)', () => {
  it("reproduces transformers' greedy continuation as JSON", async () => {
    const ids = golden.prompts[3].join(',');
    const { code, stdout, stderr } = await runFerrum([
      'run',
      '--prompt-ids',
      ids,
      '--max-tokens',
      '24',
      '--temperature',
      '0',
      '--ignore-eos',
      '--json',
      '--device',
      'cpu',
    ]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const out = JSON.parse(stdout);
    expect(out.tokenIds).toEqual(golden.greedy[3]);
    expect(out.finishReason).toBe('length');
    expect(out.usage).toEqual({
      promptTokens: golden.prompts[3].length,
      completionTokens: 24,
      cachedPromptTokens: 0,
    });
    const tokenizer = (await loadTokenizer(TINY))!;
    expect(out.text).toBe(tokenizer.decode(golden.greedy[3], { skipSpecialTokens: true }));
  });

  it('streams seeded text to stdout, the same on every run', async () => {
    const args = [
      'run',
      '--prompt',
      'Once upon a time',
      '--max-tokens',
      '12',
      '--temperature',
      '0.8',
      '--seed',
      '7',
      '--ignore-eos',
    ];
    const first = await runFerrum(args);
    const second = await runFerrum(args);
    expect(first.code).toBe(0);
    expect(first.stdout.endsWith('\n')).toBe(true);
    expect(first.stdout.length).toBeGreaterThan(1);
    expect(second.stdout).toBe(first.stdout);
  });

  it('renders --chat prompts with the chat template', async () => {
    const { code, stdout } = await runFerrum([
      'run',
      '--chat',
      '--system',
      'be brief',
      '--prompt',
      'hi',
      '--max-tokens',
      '3',
      '--json',
    ]);
    expect(code).toBe(0);
    const tokenizer = (await loadTokenizer(TINY))!;
    const rendered =
      '<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n';
    expect(JSON.parse(stdout).usage.promptTokens).toBe(
      tokenizer.encode(rendered, { addSpecialTokens: false }).length,
    );
  });

  it('chats turn by turn with --interactive on piped input', async () => {
    const { code, stdout, stderr } = await runFerrum(
      ['run', '--interactive', '--max-tokens', '4', '--temperature', '0', '--ignore-eos'],
      {
        stdin: 'hello\n/reset\nhow are you?\n/exit\nnever read\n',
      },
    );
    expect(code).toBe(0);
    expect(stderr).toContain('Chatting with qwen3-qknorm');
    // Two replies, one line each.
    expect(stdout.split('\n').filter((line) => line !== '')).toHaveLength(2);
  });

  it.each([
    [['run', '--max-tokens', 'abc'], 2, 'ferrum: --max-tokens must be an integer, got "abc"'],
    [['run', '--temperature=-1', '--prompt', 'x'], 2, 'ferrum: --temperature must be at least 0, got -1'],
    [
      ['run', '--temperature', '-1'],
      2,
      "ferrum: run: Option '--temperature' argument is ambiguous. Did you forget to specify the option argument for '--temperature'? To specify an option argument starting with a dash use '--temperature=-XYZ'. (see `ferrum run --help`)",
    ],
    [['run', '--bogus'], 2, "ferrum: run: Unknown option '--bogus' (see `ferrum run --help`)"],
    // --prompt-ids errors: run-prompt-ids.test.ts.
    [
      ['run', '--model', '/nonexistent/model', '--prompt', 'x'],
      1,
      'ferrum: model /nonexistent/model is neither a directory nor in the Hugging Face cache',
    ],
    [
      ['run', '--model', 'org/missing', '--prompt', 'x'],
      1,
      'ferrum: model org/missing is neither a directory nor in the Hugging Face cache; download it with `ferrum pull org/missing`',
    ],
    [['serve', '--port', '70000'], 2, 'ferrum: --port must be between 0 and 65535, got 70000'],
    [
      ['serve', '--enable-prefix-caching', '--no-enable-prefix-caching'],
      2,
      'ferrum: --enable-prefix-caching and --no-enable-prefix-caching conflict',
    ],
    [['bench', 'serve'], 2, 'ferrum: bench serve: --base-url is required'],
    [['frobnicate'], 2, 'ferrum: unknown command "frobnicate"'],
  ])('rejects %j with one line on stderr', async (args, expectedCode, message) => {
    const { code, stderr } = await runFerrum(args, { env: { HF_HUB_CACHE: '/nonexistent-cache' } });
    expect(code).toBe(expectedCode);
    expect(stderr.split('\n')[0]).toBe(message);
    expect(stderr).not.toContain('    at ');
  });

  it('says in one line that the port is taken when serve cannot listen (a bad --port)', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    try {
      const { code, stderr } = await runFerrum(['serve', '--port', String(port), '--max-kv-tokens', '256']);
      expect(code).toBe(2);
      const last = stderr.trimEnd().split('\n').at(-1);
      expect(last).toBe(`ferrum: cannot listen on 127.0.0.1:${port}: the address is already in use`);
      expect(stderr).not.toContain('    at ');
    } finally {
      taken.close();
    }
  });

  it('prints help', async () => {
    const top = await runFerrum(['--help']);
    expect(top.code).toBe(0);
    expect(top.stdout).toContain('serve');
    const serve = await runFerrum(['serve', '--help']);
    expect(serve.stdout).toContain('--max-num-batched-tokens');
  });
});

describe('ferrum devices', () => {
  it('lists every backend with availability and the reason when unavailable', async () => {
    const { code, stdout } = await runFerrum(['devices']);
    expect(code).toBe(0);
    const lines = stdout.trim().split('\n');
    expect(lines.map((line) => line.split(/\s+/)[0]).sort()).toEqual(['cpu', 'cuda', 'metal']);
    expect(lines.find((line) => line.startsWith('cpu'))).toMatch(/^cpu\s+available\s+\S/);
    for (const line of lines.filter((l) => /unavailable/.test(l)))
      expect(line.split(/unavailable\s+/)[1].length).toBeGreaterThan(0);
    const json = JSON.parse((await runFerrum(['devices', '--json'])).stdout);
    expect(json.find((p: { name: string }) => p.name === 'cpu').capabilities.available).toBe(true);
  });
});
