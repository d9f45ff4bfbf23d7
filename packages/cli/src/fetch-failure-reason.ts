/**
 * One line saying why a request or the read of its body failed. undici (`fetch`) reports only `fetch failed`
 * or `terminated` and puts the reason in `cause` (`connect ECONNREFUSED 127.0.0.1:8000`, `getaddrinfo
 * ENOTFOUND host`, `other side closed`); other errors (Node's `http` client's, bad JSON) speak for themselves.
 */
export function fetchFailureReason(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  const reason = cause?.message || cause?.code || (error as Error | null)?.message || String(error);
  return String(reason).replace(/\s+/g, ' ').trim();
}
