import { FerrumError } from '@ferrum/types';
import type { CliContext } from '../cli-context.js';
import { hubCacheDir, hubToken } from '../hub/hf-cache.js';
import { DEFAULT_INCLUDE, pullModel } from '../hub/pull-model.js';
import { parseOptions, stringOption } from '../parse-options.js';

export const PULL_USAGE = `Usage: ferrum pull REPO[@REVISION] [--include GLOB]... [--cache-dir DIR]

Download a model from the Hugging Face hub into the Hugging Face cache (HF_HUB_CACHE, HF_HOME) and print
its snapshot directory. Interrupted downloads resume; every file is checked against the hub's checksum.

  --include GLOB   files to fetch (repeatable); default: ${DEFAULT_INCLUDE.join(' ')}
  --cache-dir DIR  cache folder instead of the Hugging Face default

Environment: HF_TOKEN (gated or private repositories), HF_ENDPOINT (a mirror), HF_HUB_CACHE, HF_HOME.`;

/** `ferrum pull`: prints the snapshot directory on stdout, progress on stderr. */
export async function pullCommand(args: readonly string[], context: CliContext): Promise<number> {
  const parsed = parseOptions('pull', args, {
    include: { type: 'string', multiple: true },
    'cache-dir': { type: 'string' },
  });
  const target = parsed.positionals[0];
  const match = target === undefined ? null : /^([\w.-]+\/[\w.-]+)(?:@(.+))?$/.exec(target);
  if (!match || parsed.positionals.length > 1) {
    throw new FerrumError('invalid_argument', 'pull: give one repository as org/name[@revision]');
  }
  const include = parsed.values.include as string[] | undefined;
  const result = await pullModel({
    repo: match[1],
    revision: match[2],
    hub: {
      endpoint: (context.env.HF_ENDPOINT ?? 'https://huggingface.co').replace(/\/+$/, ''),
      token: hubToken(context.env),
    },
    cacheDir: stringOption(parsed, 'cache-dir') ?? hubCacheDir(context.env),
    include,
    progress: context.stderr,
  });
  const fetched = result.files.length - result.cachedFiles.length;
  context.stderr.write(
    `${match[1]}@${result.commit.slice(0, 12)}: ${fetched} downloaded, ${result.cachedFiles.length} already cached\n`,
  );
  context.stdout.write(`${result.snapshotDir}\n`);
  return 0;
}
