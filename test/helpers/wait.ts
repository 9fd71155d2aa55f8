// Polling with a bounded deadline: tests wait for outcomes, never for fixed amounts of time.
export async function waitFor<T>(
  probe: () => Promise<T>,
  done: (value: T) => boolean,
  options: { seconds?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + (options.seconds ?? 20) * 1000;
  for (;;) {
    const value = await probe();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 50));
  }
}
