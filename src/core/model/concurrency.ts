/** Maps `items` through `fn` with at most `limit` calls in flight; results keep input order. */
export async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return results;
}

/** Like mapLimit but never rejects: each slot is a value or the error it threw. */
export async function settleLimit<T, R>(items: T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<Array<{ ok: true; value: R } | { ok: false; error: unknown }>> {
  return mapLimit(items, limit, async (item, i) => {
    try {
      return { ok: true as const, value: await fn(item, i) };
    } catch (error) {
      return { ok: false as const, error };
    }
  });
}
