import type { KvCacheManager, Scheduler } from '@ferrum/interfaces';
import type { FinishReason } from '@ferrum/types';
import type { EngineMetrics } from './engine-options.js';
import { HistogramRecorder } from './histogram.js';
import type { RequestTimes } from './output-processor.js';

/** Counters and histograms of one engine; the server renders them. */
export class EngineMetricsRecorder {
  private promptTokens = 0;
  private generationTokens = 0;
  private readonly finished = { stop: 0, length: 0, abort: 0, error: 0 };
  private readonly ttft = new HistogramRecorder();
  private readonly itl = new HistogramRecorder();
  private readonly e2e = new HistogramRecorder();
  private readonly queue = new HistogramRecorder();

  constructor(
    private readonly scheduler: Scheduler,
    private readonly kv: KvCacheManager,
  ) {}

  onScheduled(times: RequestTimes, nowMs: number): void {
    if (times.scheduledMs >= 0) return;
    times.scheduledMs = nowMs;
    this.queue.observe((nowMs - times.arrivalMs) / 1000);
  }

  onToken(times: RequestTimes, nowMs: number): void {
    this.generationTokens++;
    if (times.firstTokenMs < 0) {
      times.firstTokenMs = nowMs;
      this.ttft.observe((nowMs - times.arrivalMs) / 1000);
    } else this.itl.observe((nowMs - times.lastTokenMs) / 1000);
    times.lastTokenMs = nowMs;
  }

  onFinished(times: RequestTimes, promptTokens: number, reason: FinishReason, nowMs: number): void {
    this.promptTokens += promptTokens;
    this.finished[reason]++;
    this.e2e.observe((nowMs - times.arrivalMs) / 1000);
  }

  snapshot(): EngineMetrics {
    const s = this.scheduler.stats();
    const k = this.kv.stats();
    return {
      numRequestsRunning: s.numRunning,
      numRequestsWaiting: s.numWaiting,
      numRequestsSwapped: s.numSwapped,
      kvCacheUsage: k.numSlots === 0 ? 0 : k.numUsedSlots / k.numSlots,
      promptTokensTotal: this.promptTokens,
      generationTokensTotal: this.generationTokens,
      prefixCacheQueriesTotal: k.prefixQueryTokens,
      prefixCacheHitsTotal: k.prefixHitTokens,
      numPreemptionsTotal: s.numPreemptions,
      requestSuccessTotal: { ...this.finished },
      timeToFirstTokenSeconds: this.ttft.snapshot(),
      interTokenLatencySeconds: this.itl.snapshot(),
      e2eRequestLatencySeconds: this.e2e.snapshot(),
      requestQueueTimeSeconds: this.queue.snapshot(),
    };
  }
}
