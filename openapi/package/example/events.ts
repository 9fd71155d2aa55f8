// Event payloads are narrowed by `event`: each kind's data is typed, and a misspelt kind does not compile
// (every @ts-expect-error below must meet an error, or tsc reports the directive as unused).
import { verifyWebhook, type WebhookEventPayload } from "integrator-api-contract";

export function submissionOf(body: string, headers: Headers, secret: string): string | undefined {
  const event = verifyWebhook(body, headers, secret);
  if (event.event === "intake.submitted") return event.data.submission_id;
  // @ts-expect-error a misspelt kind in a comparison
  if (event.event === "intake.submited") return "never";
  return undefined;
}

export function describe(event: WebhookEventPayload): string {
  switch (event.event) {
    case "intake.submitted":
    case "intake.batch_submitted":
      return `${event.data.submission_id}: ${event.data.accepted_count} of ${event.data.item_count} accepted`;
    case "document.status_changed": {
      const status: string = event.data.status;
      // @ts-expect-error a document event's data has no submission counts
      const accepted: number = event.data.accepted_count;
      return `${event.data.document_id} ${status} ${accepted}`;
    }
    // @ts-expect-error a misspelt kind in a switch
    case "document.statuschanged":
      return "never";
    case "webhook.test":
      return "a test event";
    default:
      return event.event;
  }
}
