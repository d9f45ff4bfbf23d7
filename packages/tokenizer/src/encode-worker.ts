import { createRequire } from 'node:module';
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { FerrumError } from '@ferrum/types';

/** Where the worker gets its `tokenizer.json`: the file as is, or text this package rewrote. */
export type EncodeWorkerSource = { readonly file: string } | { readonly json: string };

type Reply = {
  readonly id: number;
  readonly ids?: Int32Array;
  /** Ids of each text of a batch request. */
  readonly batch?: Int32Array[];
  readonly error?: string;
};

/** Longest a synchronous encode may block before we assume the worker is gone. */
const MAX_WAIT_MS = 300_000;

/*
 * The `tokenizers` binding only encodes asynchronously (on the libuv pool), but `Tokenizer.encode` is
 * synchronous. A worker thread owns the native tokenizer. Synchronous calls post on their own port, sleep
 * on an Atomics flag and take the reply with `receiveMessageOnPort`; asynchronous calls use a second port
 * and a listener, so the two never pick up each other's replies. The first message on the async port
 * (id 0) says whether the tokenizer loaded.
 */
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
const { syncPort, asyncPort, flag, modulePath, source } = workerData;
let tokenizer, loadError;
try {
  const { Tokenizer } = require(modulePath);
  tokenizer = source.file ? Tokenizer.fromFile(source.file) : Tokenizer.fromString(source.json);
} catch (error) {
  loadError = String(error && error.message ? error.message : error);
}
asyncPort.postMessage({ id: 0, error: loadError });
async function encode({ id, text, texts, addSpecialTokens }) {
  try {
    if (loadError) throw new Error(loadError);
    if (texts) {
      const encodings = await tokenizer.encodeBatch(texts, { addSpecialTokens });
      return { id, batch: encodings.map((encoding) => Int32Array.from(encoding.getIds())) };
    }
    const encoding = await tokenizer.encode(text, null, { addSpecialTokens });
    return { id, ids: Int32Array.from(encoding.getIds()) };
  } catch (error) {
    return { id, error: String(error && error.message ? error.message : error) };
  }
}
const buffers = (reply) => (reply.ids ? [reply.ids.buffer] : reply.batch ? reply.batch.map((ids) => ids.buffer) : []);
syncPort.on('message', async (request) => {
  const reply = await encode(request);
  syncPort.postMessage(reply, buffers(reply));
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
});
asyncPort.on('message', async (request) => {
  const reply = await encode(request);
  asyncPort.postMessage(reply, buffers(reply));
});
`;

/** A worker thread holding the native tokenizer; encodes synchronously or asynchronously. */
export class EncodeWorker {
  private readonly worker: Worker;
  private readonly syncPort: MessagePort;
  private readonly asyncPort: MessagePort;
  private readonly flag = new Int32Array(new SharedArrayBuffer(4));
  private readonly pending = new Map<
    number,
    { resolve: (reply: Reply) => void; reject: (e: Error) => void }
  >();
  private nextId = 1;
  private closed = false;

  private constructor(source: EncodeWorkerSource) {
    const sync = new MessageChannel();
    const async = new MessageChannel();
    this.worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        syncPort: sync.port2,
        asyncPort: async.port2,
        flag: this.flag,
        modulePath: createRequire(import.meta.url).resolve('tokenizers'),
        source,
      },
      transferList: [sync.port2, async.port2],
    });
    // Neither the worker nor the sync port keeps the process alive; the async port does while calls wait.
    this.worker.unref();
    this.syncPort = sync.port1;
    this.syncPort.unref();
    this.asyncPort = async.port1;
    this.asyncPort.on('message', (reply: Reply) => this.settle(reply));
  }

  /**
   * Start a worker and wait until its tokenizer has loaded.
   *
   * @throws FerrumError `invalid_checkpoint` when the tokenizer does not load; `describe` names the file.
   */
  static async start(source: EncodeWorkerSource, describe: string): Promise<EncodeWorker> {
    const worker = new EncodeWorker(source);
    const loaded = new Promise<void>((resolve, reject) =>
      worker.pending.set(0, { resolve: () => resolve(), reject }),
    );
    try {
      await loaded;
    } catch (error) {
      await worker.dispose();
      throw new FerrumError(
        'invalid_checkpoint',
        `${describe} cannot be loaded: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    }
    return worker;
  }

  /** Encode `text`, blocking the calling thread until the worker answers. */
  encodeSync(text: string, addSpecialTokens: boolean): number[] {
    this.checkOpen();
    Atomics.store(this.flag, 0, 0);
    this.syncPort.postMessage({ id: -1, text, addSpecialTokens });
    if (Atomics.wait(this.flag, 0, 0, MAX_WAIT_MS) === 'timed-out') {
      // A late answer would pair with the next request: retire this worker.
      void this.dispose();
      throw new FerrumError('internal', `the tokenizer worker did not answer within ${MAX_WAIT_MS} ms`);
    }
    const reply = receiveMessageOnPort(this.syncPort)?.message as Reply | undefined;
    if (reply === undefined) throw new FerrumError('internal', 'the tokenizer worker answered nothing');
    if (reply.error !== undefined) throw new FerrumError('internal', `tokenization failed: ${reply.error}`);
    return Array.from(reply.ids!);
  }

  /** Encode `text` without blocking the event loop. */
  async encode(text: string, addSpecialTokens: boolean): Promise<number[]> {
    const reply = await this.request({ text, addSpecialTokens });
    return reply.ids ? Array.from(reply.ids) : [];
  }

  /** Encode each of `texts`, in one message to the worker, without blocking the event loop. */
  async encodeMany(texts: readonly string[], addSpecialTokens: boolean): Promise<Int32Array[]> {
    const reply = await this.request({ texts, addSpecialTokens });
    return reply.batch ?? [];
  }

  private request(message: { text?: string; texts?: readonly string[]; addSpecialTokens: boolean }) {
    this.checkOpen();
    const id = this.nextId++;
    const result = new Promise<Reply>((resolve, reject) => this.pending.set(id, { resolve, reject }));
    this.asyncPort.ref();
    this.asyncPort.postMessage({ id, ...message });
    return result;
  }

  /** Stop the worker; calls still waiting fail. */
  async dispose(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const { reject } of this.pending.values())
      reject(new FerrumError('aborted', 'the tokenizer was disposed'));
    this.pending.clear();
    this.syncPort.close();
    this.asyncPort.close();
    await this.worker.terminate();
  }

  private settle(reply: Reply): void {
    const waiter = this.pending.get(reply.id);
    this.pending.delete(reply.id);
    if (this.pending.size === 0) this.asyncPort.unref();
    if (waiter === undefined) return;
    if (reply.error !== undefined) {
      waiter.reject(
        reply.id === 0
          ? new Error(reply.error)
          : new FerrumError('internal', `tokenization failed: ${reply.error}`),
      );
    } else {
      waiter.resolve(reply);
    }
  }

  private checkOpen(): void {
    if (this.closed) throw new FerrumError('invalid_argument', 'this tokenizer is disposed');
  }
}
