import type { LogitsContext, SamplerRow } from '@ferrum/interfaces';
import { numOutputTokensOf, type RowSampling } from '@ferrum/types';

type MutableContext = { -readonly [K in keyof LogitsContext]: LogitsContext[K] };

/** A sampler row rewritten for each step's row; its context reads the outputs through to the row. */
interface BoundRow {
  seed: number;
  readonly context: MutableContext;
  source: RowSampling;
}

/**
 * The {@link SamplerRow}s handed to the host sampler, reused from step to step: on runtimes without device
 * sampling every row goes through here every step. A row's `context.outputTokenIds` reads the step's
 * record when read (an own enumerable getter, so spread copies take it), so outputs that only a penalty or
 * a custom processor needs cost nothing otherwise (see `RowSampling.numOutputTokens`).
 */
export class HostSamplerRows {
  private readonly bound: BoundRow[] = [];
  private readonly rows: SamplerRow[] = [];

  constructor(private readonly eosTokenIds: readonly number[]) {}

  /**
   * Rows for `sampling[indices[j]]` (`sampling[j]` when `indices` is null), j < `count`. Valid until the
   * next call.
   */
  bind(sampling: readonly RowSampling[], indices: Int32Array | null, count: number): readonly SamplerRow[] {
    const { bound, rows } = this;
    for (let j = 0; j < count; j++) {
      const source = sampling[indices === null ? j : indices[j]];
      const row = bound[j] ?? this.create(source);
      bound[j] = row;
      row.source = source;
      row.seed = source.seed;
      const { context } = row;
      context.requestId = source.requestId;
      context.params = source.params;
      context.promptTokenIds = source.promptTokenIds;
      context.numOutputTokens = numOutputTokensOf(source);
      rows[j] = row;
    }
    rows.length = count;
    return rows;
  }

  private create(source: RowSampling): BoundRow {
    const row: BoundRow = {
      seed: 0,
      source,
      context: {
        requestId: source.requestId,
        params: source.params,
        promptTokenIds: source.promptTokenIds,
        get outputTokenIds(): Int32Array {
          return row.source.outputTokenIds;
        },
        numOutputTokens: 0,
        eosTokenIds: this.eosTokenIds,
      },
    };
    return row;
  }
}
