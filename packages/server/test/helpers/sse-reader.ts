/** The `data:` payloads of an SSE response, read one at a time (`[DONE]` included, as sent). */
export interface SseReader {
  readonly status: number;
  /** The next event's data, or null when the response ended. */
  next(): Promise<string | null>;
  /** Every remaining event's data, up to the end of the response. */
  rest(): Promise<string[]>;
}

/** POST `body` as JSON to `url` and read the reply as server-sent events. */
export async function postSse(url: string, body: unknown): Promise<SseReader> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const next = async (): Promise<string | null> => {
    for (;;) {
      const end = buffer.indexOf('\n\n');
      if (end >= 0) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (event.startsWith('data: ')) return event.slice('data: '.length);
        continue;
      }
      const { done, value } = await reader.read();
      if (done) return null;
      buffer += decoder.decode(value, { stream: true });
    }
  };
  const rest = async () => {
    const events: string[] = [];
    for (let event = await next(); event !== null; event = await next()) events.push(event);
    return events;
  };
  return { status: res.status, next, rest };
}
