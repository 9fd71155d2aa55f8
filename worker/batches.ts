// Database calls of the worker that go together: reads of the deliveries to send and records of attempts.
// Each call asked for joins the others asked for in the same turn of the event loop, and those asked for
// while `inFlight` calls are already on their way wait for the next: one statement for many, as
// graphile-worker's own batched completions are written. Nothing waits for a timer: a call asked for
// alone, with none on its way, leaves at once (a turn of the event loop later), so batching costs no
// latency when the worker is quiet and saves round trips when it is busy (an event's deliveries read
// together, attempts that end together recorded together).

interface Waiting<In, Out> {
  item: In;
  resolve: (value: Out) => void;
  reject: (error: unknown) => void;
}

export class Batches<In, Out> {
  readonly #flush: (items: In[]) => Promise<(Out | Error)[]>;
  readonly #inFlight: number;
  readonly #largest: number;
  #waiting: Waiting<In, Out>[] = [];
  #running = 0;
  #scheduled = false;

  /**
   * `flush` runs one batch and answers element by element (an Error fails that element alone); a batch
   * holds at most `largest` items, and at most `inFlight` batches run at once.
   */
  constructor(flush: (items: In[]) => Promise<(Out | Error)[]>, options: { inFlight: number; largest: number }) {
    this.#flush = flush;
    this.#inFlight = Math.max(1, options.inFlight);
    this.#largest = Math.max(1, options.largest);
  }

  run(item: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => {
          this.#scheduled = false;
          this.#drain();
        });
      }
    });
  }

  #drain(): void {
    while (this.#running < this.#inFlight && this.#waiting.length > 0) {
      const batch = this.#waiting.splice(0, this.#largest);
      this.#running++;
      this.#flush(batch.map((one) => one.item))
        .then(
          (results) =>
            batch.forEach((one, index) => {
              const result = results[index];
              if (result instanceof Error) one.reject(result);
              else if (index >= results.length) one.reject(new Error("the batch gave no answer for this element"));
              else one.resolve(result as Out);
            }),
          (error: unknown) => batch.forEach((one) => one.reject(error)),
        )
        .finally(() => {
          this.#running--;
          this.#drain();
        });
    }
  }
}
