// A bounded memo of a pure function of a string, least recently used out first. The deliver_webhook
// task keeps a subscription's opened secret by its sealed text and the sender a URL's verdict by the
// URL text: a changed secret or URL is another key, so a change takes effect at the next attempt.
export function boundedMemo<T>(compute: (key: string) => T, max = 1000): (key: string) => T {
  const kept = new Map<string, T>();
  return (key) => {
    if (kept.has(key)) {
      const value = kept.get(key) as T;
      kept.delete(key);
      kept.set(key, value);
      return value;
    }
    const value = compute(key);
    if (kept.size >= max) kept.delete(kept.keys().next().value as string);
    kept.set(key, value);
    return value;
  };
}
