// The responses the API server is answering, for a shutdown to drain them (createApiServer in http/server.ts).
// Invariant: a closed response is unreachable from here (a linked list: a Set's discarded tables kept them alive).
import type { ServerResponse } from "node:http";

interface Link {
  response: ServerResponse | undefined;
  previous: Link;
  next: Link;
}

export class InFlightResponses {
  /** The list's ends: `head.next` is the oldest response, `head.previous` the newest. */
  readonly #head: Link;
  #size = 0;

  constructor() {
    const head = { response: undefined } as Link;
    head.previous = head.next = head;
    this.#head = head;
  }

  /** How many responses have started and not yet closed. */
  get size(): number {
    return this.#size;
  }

  /** Holds `response` until it closes (finished, or its connection gone). */
  track(response: ServerResponse): void {
    const head = this.#head;
    const link: Link = { response, previous: head.previous, next: head };
    head.previous.next = link;
    head.previous = link;
    this.#size += 1;
    response.once("close", () => this.#release(link));
  }

  /** The responses in flight now, oldest first. */
  list(): ServerResponse[] {
    const responses: ServerResponse[] = [];
    for (let link = this.#head.next; link !== this.#head; link = link.next) responses.push(link.response!);
    return responses;
  }

  #release(link: Link): void {
    if (link.response === undefined) return;
    link.previous.next = link.next;
    link.next.previous = link.previous;
    link.previous = link.next = link;
    link.response = undefined;
    this.#size -= 1;
  }
}
