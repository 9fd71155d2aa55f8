// The webhook portal page: a tenant's subscriptions with their health, and its deliveries with every
// attempt. Plain DOM; every call goes through api.ts (the typed client).
import { ApiFailure, portalApi, type Delivery, type EventKind, type PortalApi, type Subscription } from "./api.ts";
import { h, replace, time } from "./dom.ts";
import { forgetSession, readSession, type Session } from "./session.ts";

const EVENT_KINDS = [
  "intake.submitted",
  "intake.batch_submitted",
  "document.uploaded",
  "document.status_changed",
  "document.completed",
  "adjudication.case_created",
  "adjudication.case_resolved",
  "scorecard.created",
] as const satisfies readonly EventKind[];
// Fails the typecheck when the contract gains an event kind the page does not offer.
type Missing = Exclude<EventKind, (typeof EVENT_KINDS)[number]>;
const everyKindListed: Missing extends never ? true : Missing = true;
void everyKindListed;

const PAGE_SIZE = 25;

/** What the user should do about a failure, in words. */
function advice(error: unknown): string {
  if (!(error instanceof ApiFailure))
    return "Something went wrong in the page. Reload it; if it persists, ask for a new portal link.";
  if (error.status === 0) return "The service could not be reached. Check your connection and try again.";
  if (error.status === 401)
    return "This portal link has expired or is not valid. Ask your administrator for a new portal link.";
  if (error.status === 403)
    return "This portal link does not allow that. Ask your administrator for a new portal link.";
  if (error.status === 404) return "It no longer exists (it may have been removed). Refresh the list.";
  if (error.status === 429) return "Too many requests just now. Wait a minute and try again.";
  if (error.status === 422 || error.status === 409) return `The service refused it: ${error.message}`;
  if (error.status >= 500) return "The service had a problem. Try again in a moment.";
  return error.message || `The request failed (${error.status}).`;
}

function errorBox(error: unknown, retry?: () => void): HTMLElement {
  return h(
    "div",
    { class: "state error", role: "alert" },
    h("p", {}, advice(error)),
    retry ? h("button", { type: "button", onclick: () => retry() }, "Try again") : null,
  );
}

function loading(what: string): HTMLElement {
  return h("p", { class: "state loading", role: "status", "aria-busy": "true" }, `Loading ${what}…`);
}

function statusBadge(text: string, tone: "ok" | "bad" | "wait" | "off"): HTMLElement {
  return h("span", { class: `badge ${tone}` }, text);
}

class Portal {
  private subscriptions: Subscription[] = [];
  private readonly root: HTMLElement;
  private readonly api: PortalApi;
  private readonly session: Session;
  private readonly subscriptionsView = h("div", { id: "subscriptions-view" });
  private readonly deliveriesView = h("div", { id: "deliveries-view" });
  private readonly notice = h("div", { id: "notice", "aria-live": "assertive" });

  constructor(api: PortalApi, session: Session, root: HTMLElement) {
    this.api = api;
    this.session = session;
    this.root = root;
  }

  start(): void {
    const expires = this.session.expiresAt ? new Date(this.session.expiresAt).toLocaleString() : "unknown";
    replace(
      this.root,
      h(
        "header",
        { class: "top" },
        h("h1", {}, "Webhooks"),
        h(
          "p",
          { class: "meta" },
          "Tenant ",
          h("code", {}, this.session.tenantId ?? "unknown"),
          " · link valid until ",
          expires,
        ),
      ),
      this.notice,
      h(
        "section",
        { "aria-labelledby": "subscriptions-title" },
        h("h2", { id: "subscriptions-title" }, "Endpoints"),
        this.createForm(),
        this.subscriptionsView,
      ),
      h(
        "section",
        { "aria-labelledby": "deliveries-title" },
        h("h2", { id: "deliveries-title" }, "Deliveries"),
        this.deliveriesView,
      ),
    );
    void this.loadSubscriptions();
    void this.loadDeliveries();
  }

  /** A refused credential ends the session: nothing already shown stays on screen. */
  private refused(error: unknown): boolean {
    if (!(error instanceof ApiFailure) || error.status !== 401) return false;
    forgetSession();
    showStop(this.root, "This portal link has expired or is not valid", advice(error));
    return true;
  }

  private fail(error: unknown): void {
    if (!this.refused(error)) this.say(advice(error), "error");
  }

  private say(message: string, tone: "ok" | "error" = "ok", extra?: Node): void {
    replace(
      this.notice,
      h(
        "div",
        { class: `notice ${tone}`, role: tone === "error" ? "alert" : "status" },
        h("p", {}, message),
        extra ?? null,
        h("button", { type: "button", class: "link", onclick: () => replace(this.notice) }, "Dismiss"),
      ),
    );
  }

  /** Shows a secret once, with a copy button. */
  private showSecret(title: string, secret: string): void {
    const field = h("input", {
      type: "text",
      readonly: true,
      value: secret,
      "aria-label": "Signing secret",
      class: "secret",
    });
    const copy = h("button", { type: "button", class: "primary" }, "Copy");
    copy.addEventListener("click", () => {
      const done = () => (copy.textContent = "Copied");
      if (navigator.clipboard) navigator.clipboard.writeText(secret).then(done, () => field.select());
      else field.select();
    });
    this.say(
      `${title} Copy the signing secret now: it is shown only this once.`,
      "ok",
      h("div", { class: "secret-row" }, field, copy),
    );
    field.focus();
    field.select();
  }

  // ---- subscriptions -------------------------------------------------------------------------------

  private createForm(): HTMLElement {
    const url = h("input", {
      id: "new-url",
      name: "url",
      type: "url",
      required: true,
      placeholder: "https://hooks.example.com/review",
      autocomplete: "off",
    });
    const boxes = ["*", ...EVENT_KINDS].map((kind) =>
      h(
        "label",
        { class: "check" },
        h("input", { type: "checkbox", name: "events", value: kind, checked: kind === "*" }),
        kind === "*" ? "all events (*)" : kind,
      ),
    );
    const submit = h("button", { type: "submit", class: "primary" }, "Add endpoint");
    const form = h(
      "form",
      { id: "create-form", class: "card", "aria-label": "Add an endpoint" },
      h("label", { for: "new-url" }, "Endpoint URL (https)"),
      url,
      h("fieldset", {}, h("legend", {}, "Events"), boxes),
      submit,
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const events = [...form.querySelectorAll<HTMLInputElement>("input[name=events]:checked")].map(
        (box) => box.value as EventKind | "*",
      );
      if (events.length === 0) return this.say("Choose at least one event (or all events).", "error");
      submit.disabled = true;
      this.api.createSubscription(url.value.trim(), events).then(
        (created) => {
          submit.disabled = false;
          url.value = "";
          this.showSecret("Endpoint added.", created.secret);
          void this.loadSubscriptions();
        },
        (error: unknown) => {
          submit.disabled = false;
          this.fail(error);
        },
      );
    });
    return form;
  }

  private async loadSubscriptions(): Promise<void> {
    replace(this.subscriptionsView, loading("endpoints"));
    try {
      const { subscriptions } = await this.api.listSubscriptions();
      this.subscriptions = subscriptions;
      this.renderSubscriptions();
    } catch (error) {
      if (this.refused(error)) return;
      replace(
        this.subscriptionsView,
        errorBox(error, () => void this.loadSubscriptions()),
      );
    }
  }

  private renderSubscriptions(): void {
    if (this.subscriptions.length === 0) {
      replace(
        this.subscriptionsView,
        h("p", { class: "state empty" }, "No endpoints yet. Add your HTTPS endpoint above to start receiving events."),
      );
      return;
    }
    replace(
      this.subscriptionsView,
      h(
        "ul",
        { class: "cards", id: "subscription-list" },
        this.subscriptions.map((subscription) => this.subscriptionCard(subscription)),
      ),
    );
  }

  private subscriptionCard(subscription: Subscription): HTMLElement {
    const healthy = subscription.is_active;
    const actions = h(
      "div",
      { class: "actions" },
      this.action("Stop deliveries", () => this.deactivate(subscription), { danger: true }),
    );
    return h(
      "li",
      { class: `card subscription ${healthy ? "" : "disabled"}`, "data-subscription-id": subscription.id },
      h("p", { class: "url" }, h("code", {}, subscription.url)),
      h(
        "p",
        { class: "meta" },
        healthy ? statusBadge("active", "ok") : statusBadge("disabled", "bad"),
        " ",
        subscription.events.join(", "),
        " · created ",
        time(subscription.created_at),
      ),
      actions,
      h(
        "p",
        { class: "unavailable" },
        "Sending a test event, rotating the secret and re-enabling are not available on this server yet.",
      ),
    );
  }

  private action(label: string, run: () => Promise<unknown>, options: { danger?: boolean } = {}): HTMLButtonElement {
    const button = h("button", { type: "button", class: options.danger ? "danger" : "" }, label);
    button.addEventListener("click", () => {
      button.disabled = true;
      run().then(
        () => (button.disabled = false),
        (error: unknown) => {
          button.disabled = false;
          this.fail(error);
        },
      );
    });
    return button;
  }

  private async deactivate(subscription: Subscription): Promise<void> {
    if (!window.confirm(`Stop all deliveries to ${subscription.url}? This cannot be undone.`)) return;
    await this.api.deactivateSubscription(subscription.id);
    this.say("Deliveries to that endpoint are stopped.");
    await this.loadSubscriptions();
  }

  // ---- deliveries ----------------------------------------------------------------------------------

  private async loadDeliveries(): Promise<void> {
    replace(this.deliveriesView, loading("deliveries"));
    try {
      const { deliveries, total } = await this.api.listDeliveries(PAGE_SIZE);
      this.renderDeliveries(deliveries, total);
    } catch (error) {
      if (this.refused(error)) return;
      replace(
        this.deliveriesView,
        errorBox(error, () => void this.loadDeliveries()),
      );
    }
  }

  private renderDeliveries(deliveries: Delivery[], total: number): void {
    const refresh = h(
      "button",
      { type: "button", id: "refresh-deliveries", onclick: () => void this.loadDeliveries() },
      "Refresh",
    );
    const body =
      deliveries.length === 0
        ? h(
            "p",
            { class: "state empty" },
            "No deliveries yet. Events for your endpoints will appear here; send a test event to try one.",
          )
        : h(
            "ul",
            { class: "deliveries", id: "delivery-list" },
            deliveries.map((delivery) => this.deliveryItem(delivery)),
          );
    replace(
      this.deliveriesView,
      h(
        "div",
        { class: "toolbar" },
        refresh,
        h("span", { class: "meta" }, `${deliveries.length} of ${total} shown, newest first`),
      ),
      h("p", { class: "unavailable" }, "Filters and paging are not available on this server yet."),
      body,
    );
  }

  private deliveryItem(delivery: Delivery): HTMLElement {
    const tone = delivery.status === "delivered" ? "ok" : delivery.status === "failed" ? "bad" : "wait";
    const target = this.subscriptions.find((subscription) => subscription.id === delivery.subscription_id);
    return h(
      "li",
      { class: "delivery", "data-delivery-id": delivery.id },
      h(
        "details",
        {},
        h(
          "summary",
          {},
          statusBadge(delivery.status, tone),
          " ",
          h("strong", {}, delivery.event_type),
          " ",
          h("span", { class: "meta" }, time(delivery.created_at), target ? ` → ${target.url}` : ""),
        ),
        h(
          "dl",
          { class: "facts" },
          h("dt", {}, "Delivery id"),
          h("dd", {}, h("code", {}, delivery.id)),
          h("dt", {}, "Attempts"),
          h("dd", {}, String(delivery.attempts)),
          h("dt", {}, "Last attempt"),
          h("dd", {}, time(delivery.last_attempt_at)),
          h("dt", {}, "HTTP status"),
          h("dd", {}, delivery.response_code === null ? "—" : String(delivery.response_code)),
          h("dt", {}, "Error"),
          h("dd", {}, delivery.error_message ?? "—"),
        ),
        h("h3", {}, "Payload"),
        h("pre", { class: "payload", tabindex: 0 }, JSON.stringify(delivery.payload, null, 2)),
      ),
    );
  }
}

function showStop(root: HTMLElement, title: string, text: string): void {
  replace(root, h("div", { class: "state error stop", role: "alert" }, h("h1", {}, title), h("p", {}, text)));
}

function main(): void {
  const root = document.getElementById("app");
  if (!root) return;
  const session = readSession();
  if (!session) {
    showStop(
      root,
      "No portal link",
      "Open this page through a portal link from your administrator (it ends in #token=…).",
    );
    return;
  }
  if (session.expiresAt !== undefined && session.expiresAt <= Date.now()) {
    forgetSession();
    showStop(
      root,
      "This portal link has expired",
      "Portal links are valid for a few minutes. Ask your administrator for a new one.",
    );
    return;
  }
  new Portal(portalApi(session.token), session, root).start();
}

main();
