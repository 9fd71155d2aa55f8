// The webhook portal page: a tenant's subscriptions with their health, and its deliveries with every
// attempt. Plain DOM; every call goes through api.ts (the typed client).
import {
  ApiFailure,
  portalApi,
  type Attempt,
  type DeliveredEventKind,
  type Delivery,
  type DeliveryFilters,
  type EndpointInput,
  type EventKind,
  type EventSelector,
  type PortalApi,
  type Subscription,
} from "./api.ts";
import { h, replace, time, visibleBidi } from "./dom.ts";
import { FormProblems, type Problem, type ProblemField } from "./form-problems.ts";
// The subscribable kinds and the catalogue's line for each, generated from the document's `webhooks` section.
import { EVENT_DESCRIPTIONS, EVENT_KINDS } from "../generated/event-kinds.ts";
import { forgetSession, readSession, storeSession, type Session } from "./session.ts";

const PAGE_SIZE = 25;
/** The session warns this long before it ends, with a button to stay. */
const SESSION_WARNING_MS = 2 * 60 * 1000;
/** How `disabled_reason` begins when the tenant disabled the endpoint (disableWebhookSubscription). */
const DISABLED_BY_HAND = "Disabled by hand";

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
  private session: Session;
  private readonly tenantLabel = h("strong", { id: "tenant-name" });
  private readonly sessionLabel = h("span", { id: "session-ends" });
  private readonly sessionWarning = h("div", { id: "session-warning" });
  private readonly catalogueView = h("div", { id: "catalogue-view" });
  private sessionTimers: number[] = [];
  private readonly subscriptionsView = h("div", { id: "subscriptions-view" });
  private readonly deliveriesView = h("div", { id: "deliveries-view" });
  // Each part of the page says what happened where it happened: the header (the session), the endpoints
  // (one removed), each endpoint's card (its own actions), the deliveries and the catalogue.
  private readonly notice = h("div", { id: "notice", "aria-live": "assertive" });
  private readonly endpointsNotice = h("div", { id: "endpoints-notice", "aria-live": "assertive" });
  private readonly deliveriesNotice = h("div", { id: "deliveries-notice", "aria-live": "assertive" });
  private readonly catalogueNotice = h("div", { id: "catalogue-notice", "aria-live": "assertive" });
  private readonly createForm = this.buildCreateForm();

  constructor(session: Session, root: HTMLElement) {
    this.session = session;
    this.api = portalApi(() => this.session.token);
    this.root = root;
  }

  start(): void {
    replace(this.tenantLabel, this.session.tenantId ?? "unknown");
    const extend = h("button", { type: "button", class: "link", id: "extend-session" }, "Extend session");
    extend.addEventListener("click", () => this.busyWhile(extend, () => this.extendSession()));
    replace(
      this.root,
      h(
        "header",
        { class: "top" },
        h("h1", {}, "Webhooks"),
        h("p", { class: "meta" }, "Tenant ", this.tenantLabel, " · ", this.sessionLabel, " ", extend),
      ),
      this.sessionWarning,
      this.notice,
      // What exists comes first (the endpoints, then their deliveries); adding one is below them, and a
      // button at the top of the endpoints takes the focus there.
      h(
        "section",
        { "aria-labelledby": "subscriptions-title" },
        h("h2", { id: "subscriptions-title" }, "Endpoints"),
        h(
          "div",
          { class: "toolbar" },
          h(
            "button",
            { type: "button", id: "go-add-endpoint", onclick: () => this.goToCreateForm() },
            "Add an endpoint",
          ),
        ),
        this.endpointsNotice,
        this.subscriptionsView,
      ),
      h(
        "section",
        { "aria-labelledby": "deliveries-title" },
        h("h2", { id: "deliveries-title" }, "Deliveries"),
        this.deliveriesNotice,
        this.deliveriesView,
      ),
      h(
        "section",
        { "aria-labelledby": "add-endpoint-title" },
        h("h2", { id: "add-endpoint-title" }, "Add an endpoint"),
        this.createForm,
      ),
      h(
        "section",
        { "aria-labelledby": "catalogue-title" },
        h("h2", { id: "catalogue-title" }, "Event catalogue"),
        h(
          "p",
          { class: "meta" },
          "The events an endpoint can subscribe to. Send an example of one to see exactly what your endpoint will receive (marked as a test delivery).",
        ),
        this.catalogueNotice,
        this.catalogueView,
      ),
    );
    this.showSession();
    this.renderCatalogue();
    void this.loadTenant();
    void this.loadSubscriptions();
    void this.loadDeliveries();
  }

  // ---- tenant and session ----------------------------------------------------------------------------

  private async loadTenant(): Promise<void> {
    try {
      const me = await this.api.me();
      if (me.tenant_name) {
        replace(this.tenantLabel, me.tenant_name);
        this.tenantLabel.title = me.tenant_id;
      }
    } catch (error) {
      // The id stays shown; an expired link is handled by whichever call notices it first.
      this.refused(error);
    }
  }

  /** When the session ends; a warning with "Stay signed in" shortly before, and the stop page at the end. */
  private showSession(): void {
    for (const timer of this.sessionTimers) window.clearTimeout(timer);
    this.sessionTimers = [];
    replace(this.sessionWarning);
    const ends = this.session.expiresAt;
    if (ends === undefined) return replace(this.sessionLabel, "session without an end");
    replace(this.sessionLabel, "session until ", h("time", { datetime: new Date(ends).toISOString() }, clock(ends)));
    const warnIn = ends - SESSION_WARNING_MS - Date.now();
    if (warnIn <= 0) this.warnSessionEnding();
    else this.sessionTimers.push(window.setTimeout(() => this.warnSessionEnding(), warnIn));
    this.sessionTimers.push(
      window.setTimeout(
        () => {
          forgetSession();
          showStop(
            this.root,
            "This portal session has ended",
            "Portal links are valid for a few minutes. Ask your administrator for a new one.",
          );
        },
        Math.max(0, ends - Date.now()),
      ),
    );
  }

  private warnSessionEnding(): void {
    const stay = h("button", { type: "button", class: "primary" }, "Stay signed in");
    stay.addEventListener("click", () => this.busyWhile(stay, () => this.extendSession()));
    replace(
      this.sessionWarning,
      h(
        "div",
        { class: "notice warn", role: "alert" },
        h(
          "p",
          {},
          `Your session ends at ${clock(this.session.expiresAt ?? Date.now())}. Stay signed in to keep working.`,
        ),
        stay,
      ),
    );
  }

  private async extendSession(): Promise<void> {
    const refreshed = await this.api.refreshSession();
    const token = new URLSearchParams(new URL(refreshed.url).hash.replace(/^#/, "")).get("token");
    if (!token) throw new Error("the refreshed link holds no credential");
    this.session = storeSession(token);
    this.showSession();
    this.say(`Session extended until ${clock(this.session.expiresAt ?? Date.now())}.`);
  }

  /** A refused credential ends the session: nothing already shown stays on screen. */
  private refused(error: unknown): boolean {
    if (!(error instanceof ApiFailure) || error.status !== 401) return false;
    forgetSession();
    showStop(this.root, "This portal link has expired or is not valid", advice(error));
    return true;
  }

  private fail(error: unknown, where?: HTMLElement): void {
    if (!this.refused(error)) this.say(advice(error), "error", { in: where });
  }

  /**
   * Says `message` in the notice area `in` (the page's own by default) and scrolls it into view if it is
   * not: a message is shown where the person is, beside what they just used.
   */
  private say(message: string, tone: "ok" | "error" = "ok", options: { in?: HTMLElement; extra?: Node } = {}): void {
    const area = options.in ?? this.notice;
    // One outcome at a time: what earlier actions said elsewhere goes, but a secret still to be copied.
    for (const earlier of this.root.querySelectorAll<HTMLElement>(".notice.ok"))
      if (!area.contains(earlier) && !earlier.querySelector("input.secret")) earlier.parentElement?.replaceChildren();
    replace(
      area,
      h(
        "div",
        { class: `notice ${tone}`, role: tone === "error" ? "alert" : "status" },
        h("p", {}, message),
        options.extra ?? null,
        h("button", { type: "button", class: "link", onclick: () => replace(area) }, "Dismiss"),
      ),
    );
    area.scrollIntoView({ block: "nearest" });
  }

  /** The notice area of an endpoint's card as the list shows it now (the list is drawn again after changes). */
  private cardNotice(subscriptionId: string): HTMLElement {
    return (
      this.subscriptionsView.querySelector<HTMLElement>(`li[data-subscription-id="${subscriptionId}"] .card-notice`) ??
      this.endpointsNotice
    );
  }

  /** Shows a secret once, with a copy button, in the card of the endpoint it signs for. */
  private showSecret(title: string, secret: string, subscriptionId: string): void {
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
    this.say(`${title} Copy the signing secret now: it is shown only this once.`, "ok", {
      in: this.cardNotice(subscriptionId),
      extra: h("div", { class: "secret-row" }, field, copy),
    });
    field.focus();
    field.select();
  }

  // ---- subscriptions -------------------------------------------------------------------------------

  /**
   * The fields of an endpoint, for adding one and for editing one: its URL, its events ("all events" and
   * single kinds exclude each other: choosing one clears the other), its description and its rate limit,
   * each in a block of its own where a problem with it is said. `read` answers what they hold, or undefined
   * (saying why beside the field) when no event is chosen or the rate limit is not a whole number from 1 to
   * 1000; a blank description is none, and so is a blank rate limit. `problems` says what the service
   * refused beside the field it names.
   */
  private endpointFields(
    prefix: string,
    current?: Subscription,
  ): { fields: HTMLElement[]; problems: FormProblems; read(): EndpointInput | undefined; focus(): void } {
    const url = h("input", {
      id: `${prefix}-url`,
      name: "url",
      type: "url",
      required: true,
      placeholder: "https://hooks.example.com/review",
      autocomplete: "off",
      value: current?.url,
    });
    const chosen = new Set<string>(current?.events ?? ["*"]);
    const box = (kind: string) =>
      h(
        "label",
        { class: "check" },
        h("input", { type: "checkbox", name: "events", value: kind, checked: chosen.has(kind) }),
        kind === "*" ? "all events (*)" : kind,
      );
    // `*` and single lifecycle kinds exclude each other; the reports about endpoints are never part of `*`
    // and go with either.
    const boxes = ["*", ...EVENT_KINDS.filter((kind) => !isOperational(kind))].map(box);
    const reportBoxes = EVENT_KINDS.filter(isOperational).map(box);
    const inputsOf = (labels: HTMLElement[]) =>
      labels.map((label) => label.querySelector("input")).filter((input) => input !== null);
    const lifecycle = inputsOf(boxes);
    const inputs = [...lifecycle, ...inputsOf(reportBoxes)];
    const [all] = lifecycle;
    for (const input of lifecycle)
      input.addEventListener("change", () => {
        if (!input.checked) return;
        for (const other of lifecycle) if (other !== input && (input === all || other === all)) other.checked = false;
      });
    const description = h("input", {
      id: `${prefix}-description`,
      name: "description",
      type: "text",
      maxlength: 500,
      autocomplete: "off",
      placeholder: "e.g. claims intake for the review team",
      value: current?.description ?? undefined,
    });
    const rateLimit = h("input", {
      id: `${prefix}-rate-limit`,
      name: "rate_limit_per_second",
      type: "number",
      min: 1,
      max: 1000,
      step: 1,
      inputmode: "numeric",
      autocomplete: "off",
      placeholder: "no limit",
      value: current?.rate_limit_per_second?.toString() ?? undefined,
    });
    const block = (label: string, control: HTMLInputElement): ProblemField => ({
      block: h("div", { class: "field" }, h("label", { for: control.id }, label), control),
      control,
    });
    const events = h(
      "fieldset",
      { id: `${prefix}-events` },
      h("legend", {}, "Events"),
      boxes,
      h("p", { class: "meta reports" }, "Reports on your other endpoints (never part of all events):"),
      reportBoxes,
    );
    // Keyed by the body field the service names in a refusal (`loc: ["body", "url"]`).
    const fields: Record<string, ProblemField> = {
      url: block("Endpoint URL (https)", url),
      events: { block: events, control: events, focus: all },
      description: block("Description (optional)", description),
      rate_limit_per_second: block("Rate limit, deliveries per second (optional, 1–1000; blank for none)", rateLimit),
    };
    const problems = new FormProblems(prefix, fields);
    return {
      fields: Object.values(fields).map((field) => field.block),
      problems,
      read: () => {
        problems.clear();
        const events = inputs.filter((box) => box.checked).map((box) => box.value as EventSelector);
        const text = description.value.trim();
        const rate = rateLimit.value.trim();
        const perSecond = rate === "" ? null : Number(rate);
        const found: Problem[] = [];
        if (events.length === 0) found.push({ field: "events", message: "Choose at least one event (or all events)." });
        if (perSecond !== null && !(Number.isInteger(perSecond) && perSecond >= 1 && perSecond <= 1000))
          found.push({
            field: "rate_limit_per_second",
            message: "The rate limit is a whole number of deliveries per second from 1 to 1000, or blank for none.",
          });
        if (found.length > 0) {
          problems.show(found);
          return undefined;
        }
        return {
          url: url.value.trim(),
          events,
          description: text === "" ? null : text,
          rate_limit_per_second: perSecond,
        };
      },
      focus: () => url.focus(),
    };
  }

  private buildCreateForm(): HTMLFormElement {
    const endpoint = this.endpointFields("new");
    const submit = h("button", { type: "submit", class: "primary" }, "Add endpoint");
    const form = h(
      "form",
      { id: "create-form", class: "card", "aria-label": "Add an endpoint" },
      endpoint.fields,
      endpoint.problems.summary,
      h("div", { class: "actions" }, submit),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const input = endpoint.read();
      if (!input) return;
      this.submitting(submit, endpoint.problems, async () => {
        const created = await this.api.createSubscription(input);
        form.reset();
        await this.loadSubscriptions();
        this.showSecret("Endpoint added.", created.secret, created.id);
      });
    });
    return form;
  }

  /** "Add an endpoint" at the top of the endpoints: the focus goes to the form's URL field, in view. */
  private goToCreateForm(): void {
    const url = this.createForm.querySelector<HTMLInputElement>("#new-url");
    url?.focus({ preventScroll: true });
    this.createForm.scrollIntoView({ block: "nearest" });
  }

  /**
   * Runs `work` for a form with its submit button disabled meanwhile; a refusal is said inside the form,
   * beside the field it names when it names one.
   */
  private submitting(button: HTMLButtonElement, problems: FormProblems, work: () => Promise<unknown>): void {
    button.disabled = true;
    problems.clear();
    work().then(
      () => (button.disabled = false),
      (error: unknown) => {
        button.disabled = false;
        if (this.refused(error)) return;
        if (error instanceof ApiFailure && error.issues.length > 0) problems.show(error.issues);
        else problems.show([{ message: advice(error) }]);
      },
    );
  }

  /** "Edit" opens the endpoint's fields under the card's buttons, as they are now; Escape or Cancel closes them. */
  private editButton(subscription: Subscription, area: HTMLElement): HTMLButtonElement {
    return this.formButton("Edit", "", area, (close) => {
      const endpoint = this.endpointFields(`edit-${subscription.id}`, subscription);
      const submit = h("button", { type: "submit", class: "primary" }, "Save changes");
      const form = this.cardForm({
        label: `Edit the endpoint ${subscription.url}`,
        tone: "edit",
        text: "Deliveries waiting for a retry go to the new URL; new events are matched against the new event list.",
        fields: endpoint.fields,
        problems: endpoint.problems,
        submit,
        close,
        onSubmit: () => {
          const input = endpoint.read();
          if (input) this.submitting(submit, endpoint.problems, () => this.update(subscription, input));
        },
      });
      return { form, focus: () => endpoint.focus() };
    });
  }

  /** A card button that opens the form `open` makes in `area`, and closes it when pressed again. */
  private formButton(
    label: string,
    tone: "" | "danger",
    area: HTMLElement,
    open: (close: () => void) => { form: HTMLFormElement; focus(): void },
  ): HTMLButtonElement {
    const button = h(
      "button",
      { type: "button", class: tone, "aria-expanded": "false", "aria-controls": area.id },
      label,
    );
    const close = () => {
      replace(area);
      button.setAttribute("aria-expanded", "false");
      button.focus();
    };
    button.addEventListener("click", () => {
      if (area.childElementCount > 0) return close();
      const opened = open(close);
      replace(area, opened.form);
      button.setAttribute("aria-expanded", "true");
      opened.focus();
    });
    return button;
  }

  /**
   * A form under a card's buttons: what it does, its fields, what is wrong with them (said beside its
   * buttons when no field is concerned), its submit button and Cancel; Escape closes it.
   */
  private cardForm(options: {
    label: string;
    tone: "edit" | "danger";
    text: string;
    fields: (HTMLElement | null)[];
    problems: FormProblems;
    submit: HTMLButtonElement;
    close: () => void;
    onSubmit: () => void;
  }): HTMLFormElement {
    const form = h(
      "form",
      { class: options.tone === "edit" ? "confirm edit" : "confirm", "aria-label": options.label },
      h("p", {}, options.text),
      options.fields,
      options.problems.summary,
      h(
        "div",
        { class: "actions" },
        options.submit,
        h("button", { type: "button", onclick: () => options.close() }, "Cancel"),
      ),
    );
    form.addEventListener("keydown", (event) => {
      if (event.key !== "Escape") return;
      event.preventDefault();
      options.close();
    });
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      options.onSubmit();
    });
    return form;
  }

  private async loadSubscriptions(): Promise<void> {
    // The cards stay while they are read again: the page keeps its height, and the reader their place.
    if (!this.subscriptionsView.querySelector("#subscription-list"))
      replace(this.subscriptionsView, loading("endpoints"));
    try {
      const { subscriptions } = await this.api.listSubscriptions();
      this.subscriptions = subscriptions;
      this.renderSubscriptions();
      this.syncSubscriptionFilter();
      this.renderCatalogue();
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
        h(
          "p",
          { class: "state empty" },
          "No endpoints yet. Add your HTTPS endpoint to start receiving events: Add an endpoint, above, takes you to the form.",
        ),
      );
      return;
    }
    // What a card says (a secret shown once, an action's outcome) stays when the list is drawn again.
    const notices = new Map<string, Node[]>();
    for (const notice of this.subscriptionsView.querySelectorAll<HTMLElement>(".card-notice"))
      notices.set(notice.dataset.for ?? "", [...notice.childNodes]);
    replace(
      this.subscriptionsView,
      h(
        "ul",
        { class: "cards", id: "subscription-list" },
        this.subscriptions.map((subscription) => this.subscriptionCard(subscription)),
      ),
    );
    for (const [id, nodes] of notices) {
      const notice = this.subscriptionsView.querySelector(`li[data-subscription-id="${id}"] .card-notice`);
      notice?.append(...nodes);
    }
  }

  private subscriptionCard(subscription: Subscription): HTMLElement {
    const disabled = subscription.status === "disabled";
    const confirmArea = h("div", { id: `disable-${subscription.id}` });
    const editArea = h("div", { id: `edit-${subscription.id}` });
    // The card's actions say what came of them in the card, under its buttons.
    const inCard = () => this.cardNotice(subscription.id);
    const actions = h(
      "div",
      { class: "actions" },
      disabled
        ? this.action("Re-enable", () => this.enable(subscription), { primary: true, where: inCard })
        : this.action("Send test event", () => this.sendTest(subscription), { where: inCard }),
      disabled ? null : this.disableButton(subscription, confirmArea),
      this.editButton(subscription, editArea),
      this.action("Rotate secret", () => this.rotate(subscription), { where: inCard }),
      this.action("Show deliveries", async () => this.filterBySubscription(subscription.id), { where: inCard }),
      this.action("Delete", () => this.remove(subscription), { danger: true, where: inCard }),
    );
    return h(
      "li",
      {
        class: `card subscription${disabled ? " disabled" : ""}`,
        "data-subscription-id": subscription.id,
        "aria-label": `Endpoint ${subscription.url}${disabled ? " (disabled)" : ""}`,
      },
      h("p", { class: "url" }, h("code", {}, subscription.url)),
      subscription.description ? h("p", { class: "description" }, subscription.description) : null,
      h(
        "p",
        { class: "meta" },
        disabled ? statusBadge("disabled", "bad") : statusBadge("active", "ok"),
        " ",
        subscription.events.join(", "),
        " · created ",
        time(subscription.created_at),
      ),
      subscription.rate_limit_per_second === null
        ? null
        : h(
            "p",
            { class: "meta rate-limit" },
            `Rate limit: at most ${subscription.rate_limit_per_second} ${
              subscription.rate_limit_per_second === 1 ? "delivery" : "deliveries"
            } a second`,
          ),
      h("p", { class: "meta health", "data-health-for": subscription.id }, healthLine(subscription.health)),
      disabled ? this.disabledNote(subscription) : null,
      subscription.previous_secret_expires_at
        ? h(
            "p",
            { class: "meta" },
            "The previous secret also signs deliveries until ",
            time(subscription.previous_secret_expires_at),
            ".",
          )
        : null,
      actions,
      h("div", { class: "card-notice", "data-for": subscription.id, "aria-live": "assertive" }),
      confirmArea,
      editArea,
    );
  }

  /**
   * Each endpoint's health read again (the subscriptions' `health`, as the API answers it), written into the
   * cards without drawing them again: an open form or the focus stays where it is.
   */
  private async refreshHealth(): Promise<void> {
    try {
      const { subscriptions } = await this.api.listSubscriptions();
      for (const subscription of subscriptions) {
        const into = this.subscriptionsView.querySelector<HTMLElement>(`[data-health-for="${subscription.id}"]`);
        if (into) replace(into, healthLine(subscription.health));
      }
    } catch (error) {
      // The cards keep the figure they show; an expired link is handled here as everywhere.
      this.refused(error);
    }
  }

  /** Why and since when the endpoint is disabled, and what to do about it. */
  private disabledNote(subscription: Subscription): HTMLElement {
    const reason = subscription.disabled_reason ?? "its deliveries kept failing";
    if (reason.startsWith(DISABLED_BY_HAND)) {
      const given = reason.slice(DISABLED_BY_HAND.length).replace(/^: /, "");
      return h(
        "p",
        { class: "reason", role: "note" },
        `${DISABLED_BY_HAND} `,
        time(subscription.disabled_at),
        given ? `: ${given}. ` : ". ",
        "Nothing is sent to it. Re-enable it when it should receive events again, then resend the deliveries that failed meanwhile.",
      );
    }
    return h(
      "p",
      { class: "reason", role: "note" },
      "Disabled ",
      time(subscription.disabled_at),
      `: ${reason}. `,
      "Fix the endpoint, then re-enable it and resend the failed deliveries.",
    );
  }

  /** "Disable" opens a confirmation with an optional reason under the card's buttons; Escape or Cancel closes it. */
  private disableButton(subscription: Subscription, area: HTMLElement): HTMLButtonElement {
    return this.formButton("Disable", "danger", area, (close) => {
      const fieldId = `disable-reason-${subscription.id}`;
      const reason = h("input", {
        id: fieldId,
        name: "reason",
        type: "text",
        maxlength: 200,
        autocomplete: "off",
        placeholder: "e.g. the receiver moves until 18:00 UTC",
      });
      const submit = h("button", { type: "submit", class: "danger" }, "Disable endpoint");
      const reasonField = {
        block: h(
          "div",
          { class: "field" },
          h("label", { for: fieldId }, "Reason (optional, shown on the endpoint)"),
          reason,
        ),
        control: reason,
      };
      const problems = new FormProblems(`disable-${subscription.id}`, { reason: reasonField });
      const form = this.cardForm({
        label: `Disable the endpoint ${subscription.url}`,
        tone: "danger",
        text: "Disable this endpoint? Nothing is sent to it until you re-enable it; events meanwhile are recorded as failed deliveries that you can resend.",
        fields: [reasonField.block],
        problems,
        submit,
        close,
        onSubmit: () => this.submitting(submit, problems, () => this.disable(subscription, reason.value)),
      });
      return { form, focus: () => reason.focus() };
    });
  }

  /** Moves the keyboard focus to a button of an endpoint's card (after the list was drawn again). */
  private focusAction(subscriptionId: string, label: string): void {
    const card = this.subscriptionsView.querySelector(`li[data-subscription-id="${subscriptionId}"]`);
    const button = [...(card?.querySelectorAll("button") ?? [])].find((candidate) => candidate.textContent === label);
    button?.focus();
  }

  /** A button that runs `run`; a failure is said in the notice area `where` finds (the page's by default). */
  private action(
    label: string,
    run: () => Promise<unknown>,
    options: { danger?: boolean; primary?: boolean; where?: () => HTMLElement } = {},
  ): HTMLButtonElement {
    const tone = options.danger ? "danger" : options.primary ? "primary" : "";
    const button = h("button", { type: "button", class: tone }, label);
    button.addEventListener("click", () => this.busyWhile(button, run, options.where));
    return button;
  }

  /**
   * Runs `work` with `button` disabled meanwhile (no double submit); a failure is said in the notice area
   * `where` finds when it fails (the page's by default) and the button is usable again.
   */
  private busyWhile(button: HTMLButtonElement, work: () => Promise<unknown>, where?: () => HTMLElement): void {
    button.disabled = true;
    work().then(
      () => (button.disabled = false),
      (error: unknown) => {
        button.disabled = false;
        this.fail(error, where?.());
      },
    );
  }

  private async remove(subscription: Subscription): Promise<void> {
    if (!window.confirm(`Delete the endpoint ${subscription.url}? Nothing more is sent to it; this cannot be undone.`))
      return;
    await this.api.deleteSubscription(subscription.id);
    await this.loadSubscriptions();
    this.say(`Endpoint ${subscription.url} deleted: nothing more is sent to it.`, "ok", { in: this.endpointsNotice });
  }

  private async enable(subscription: Subscription): Promise<void> {
    await this.api.enableSubscription(subscription.id);
    // The message comes once the list shows what it says (and the focus is on the next action).
    await this.loadSubscriptions();
    this.focusAction(subscription.id, "Disable");
    this.say(
      "Endpoint re-enabled: new events are delivered again. Resend the deliveries that failed meanwhile.",
      "ok",
      {
        in: this.cardNotice(subscription.id),
      },
    );
  }

  private async disable(subscription: Subscription, reason: string): Promise<void> {
    await this.api.disableSubscription(subscription.id, reason);
    await this.loadSubscriptions();
    this.focusAction(subscription.id, "Re-enable");
    this.say("Endpoint disabled: nothing is sent to it until you re-enable it.", "ok", {
      in: this.cardNotice(subscription.id),
    });
  }

  private async update(subscription: Subscription, input: EndpointInput): Promise<void> {
    await this.api.updateSubscription(subscription.id, input);
    await this.loadSubscriptions();
    this.focusAction(subscription.id, "Edit");
    this.say("Endpoint saved.", "ok", { in: this.cardNotice(subscription.id) });
  }

  private async rotate(subscription: Subscription): Promise<void> {
    if (!window.confirm(`Rotate the signing secret of ${subscription.url}?`)) return;
    const rotated = await this.api.rotateSecret(subscription.id);
    await this.loadSubscriptions();
    const until = rotated.previous_secret_expires_at
      ? ` The previous secret also signs until ${new Date(rotated.previous_secret_expires_at).toLocaleString()}.`
      : "";
    this.showSecret(`Secret rotated.${until}`, rotated.secret, subscription.id);
  }

  /** The subscribable kinds, each with what it means and a button that sends its example to a chosen endpoint. */
  private renderCatalogue(): void {
    const active = this.subscriptions.filter((subscription) => subscription.status !== "disabled");
    const chosen = this.catalogueView.querySelector<HTMLSelectElement>("#example-target")?.value;
    const target = h(
      "select",
      { id: "example-target", name: "example-target", disabled: active.length === 0 },
      active.map((subscription) => h("option", { value: subscription.id }, subscription.url)),
    );
    if (chosen && active.some((subscription) => subscription.id === chosen)) target.value = chosen;
    replace(
      this.catalogueView,
      h(
        "div",
        { class: "card catalogue-target" },
        h("label", { for: "example-target" }, "Send examples to"),
        active.length > 0
          ? target
          : h(
              "p",
              { class: "state empty" },
              this.subscriptions.length > 0
                ? "No active endpoint: re-enable one or add one above to send examples to it."
                : "Add an endpoint above to send examples to it.",
            ),
      ),
      h(
        "ul",
        { class: "catalogue", id: "event-catalogue" },
        EVENT_KINDS.map((kind) => {
          const send = h(
            "button",
            { type: "button", disabled: active.length === 0, "aria-label": `Send an example ${kind} event` },
            "Send example",
          );
          send.addEventListener("click", () =>
            this.busyWhile(
              send,
              () => this.sendExample(kind, target.value),
              () => this.catalogueNotice,
            ),
          );
          return h(
            "li",
            { class: "event-kind", "data-kind": kind },
            h("div", {}, h("code", {}, kind), h("p", { class: "meta" }, EVENT_DESCRIPTIONS[kind])),
            send,
          );
        }),
      ),
    );
  }

  private async sendExample(kind: EventKind, subscriptionId: string): Promise<void> {
    const target = this.subscriptions.find((subscription) => subscription.id === subscriptionId);
    if (!target) return this.say("Choose an endpoint to send the example to.", "error", { in: this.catalogueNotice });
    await this.api.sendTestEvent(target.id, kind);
    await this.loadDeliveries();
    this.say(`Example ${kind} event queued for ${target.url}. It appears under Deliveries.`, "ok", {
      in: this.catalogueNotice,
    });
  }

  private async sendTest(subscription: Subscription): Promise<void> {
    await this.api.sendTestEvent(subscription.id);
    await this.loadDeliveries();
    this.say(`Test event queued for ${subscription.url}. It appears under Deliveries.`, "ok", {
      in: this.cardNotice(subscription.id),
    });
  }

  // ---- deliveries ----------------------------------------------------------------------------------

  private filters: DeliveryFilters = {};
  private nextCursor: string | null = null;
  /** Counts list loads: the answer of a load that a newer one replaced (filters applied, Refresh) is dropped. */
  private deliveryLoads = 0;
  private readonly filterForm = this.buildFilters();
  private readonly deliveryList = h("ul", { class: "deliveries", id: "delivery-list" });
  private readonly deliveryFooter = h("div", { class: "toolbar" });
  private readonly deliverySummary = h("p", { class: "meta", id: "delivery-summary" });

  private buildFilters(): HTMLFormElement {
    const select = (name: string, label: string, options: [string, string][]) =>
      h(
        "div",
        {},
        h("label", { for: `filter-${name}` }, label),
        h(
          "select",
          { id: `filter-${name}`, name },
          options.map(([value, text]) => h("option", { value }, text)),
        ),
      );
    const instant = (name: string, label: string) =>
      h(
        "div",
        {},
        h("label", { for: `filter-${name}` }, label),
        // To the second: deliveries a few seconds apart can be told apart.
        h("input", { id: `filter-${name}`, name, type: "datetime-local", step: 1 }),
      );
    const kinds: DeliveredEventKind[] = [...EVENT_KINDS, "webhook.test"];
    const form = h(
      "form",
      { class: "filters card", id: "delivery-filters", "aria-label": "Filter deliveries" },
      select("subscription_id", "Endpoint", [["", "All endpoints"]]),
      select("status", "Status", [
        ["", "Any status"],
        ["pending", "pending"],
        ["delivered", "delivered"],
        ["failed", "failed"],
      ]),
      select("event_type", "Event", [["", "Any event"], ...kinds.map((kind): [string, string] => [kind, kind])]),
      instant("created_after", "Created after"),
      instant("created_before", "Created before"),
      h(
        "div",
        { class: "actions" },
        h("button", { type: "submit", class: "primary" }, "Apply"),
        h("button", { type: "reset" }, "Clear"),
      ),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.filters = this.readFilters(form);
      void this.loadDeliveries();
    });
    form.addEventListener("reset", () => {
      this.filters = {};
      setTimeout(() => void this.loadDeliveries(), 0);
    });
    return form;
  }

  private readFilters(form: HTMLFormElement): DeliveryFilters {
    const data = new FormData(form);
    const text = (name: string) => {
      const value = data.get(name);
      return typeof value === "string" && value !== "" ? value : undefined;
    };
    const instant = (name: string) => {
      const value = text(name);
      return value ? new Date(value).toISOString() : undefined;
    };
    const filters: DeliveryFilters = {};
    const subscriptionId = text("subscription_id");
    const status = text("status");
    const eventType = text("event_type");
    const after = instant("created_after");
    const before = instant("created_before");
    if (subscriptionId) filters.subscription_id = subscriptionId;
    if (status) filters.status = status as NonNullable<DeliveryFilters["status"]>;
    if (eventType) filters.event_type = eventType as NonNullable<DeliveryFilters["event_type"]>;
    if (after) filters.created_after = after;
    if (before) filters.created_before = before;
    return filters;
  }

  private syncSubscriptionFilter(): void {
    const select = this.filterForm.querySelector<HTMLSelectElement>("#filter-subscription_id");
    if (!select) return;
    const chosen = select.value;
    replace(
      select,
      h("option", { value: "" }, "All endpoints"),
      this.subscriptions.map((subscription) => h("option", { value: subscription.id }, subscription.url)),
    );
    select.value = this.subscriptions.some((subscription) => subscription.id === chosen) ? chosen : "";
  }

  private async filterBySubscription(id: string): Promise<void> {
    for (const field of this.filterForm.querySelectorAll<HTMLInputElement | HTMLSelectElement>("input, select"))
      field.value = "";
    const select = this.filterForm.querySelector<HTMLSelectElement>("#filter-subscription_id");
    if (select) select.value = id;
    this.filters = { subscription_id: id };
    await this.loadDeliveries();
    document.getElementById("deliveries-title")?.scrollIntoView();
  }

  private async loadDeliveries(): Promise<void> {
    replace(
      this.deliveriesView,
      h(
        "div",
        { class: "toolbar" },
        h("button", { type: "button", id: "refresh-deliveries", onclick: () => void this.loadDeliveries() }, "Refresh"),
        this.deliverySummary,
      ),
      this.filterForm,
      this.deliveryList,
      this.deliveryFooter,
    );
    replace(this.deliveryList, loading("deliveries"));
    replace(this.deliveryFooter);
    replace(this.deliverySummary);
    void this.refreshHealth();
    await this.loadDeliveryPage(undefined, ++this.deliveryLoads);
  }

  private async loadDeliveryPage(cursor: string | undefined, load: number): Promise<void> {
    try {
      const page = await this.api.listDeliveries({ ...this.filters, limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) });
      if (load !== this.deliveryLoads) return;
      if (!cursor) replace(this.deliveryList);
      this.nextCursor = page.next_cursor;
      const filtered = Object.keys(this.filters).length > 0;
      if (!cursor && page.deliveries.length === 0) {
        this.deliveryList.append(
          h(
            "li",
            { class: "state empty" },
            filtered
              ? "No delivery matches these filters. Clear them to see every delivery."
              : "No deliveries yet. Events for your endpoints appear here; send a test event to try one.",
          ),
        );
      }
      for (const delivery of page.deliveries) this.deliveryList.append(this.deliveryItem(delivery));
      const shown = this.deliveryList.querySelectorAll("li.delivery").length;
      replace(
        this.deliverySummary,
        `${shown} shown, newest first${filtered ? " (filtered)" : ""} · ${page.total} deliveries in all`,
      );
      replace(
        this.deliveryFooter,
        this.nextCursor
          ? this.action("Load older deliveries", () => this.loadDeliveryPage(this.nextCursor ?? undefined, load))
          : null,
      );
    } catch (error) {
      if (this.refused(error) || load !== this.deliveryLoads) return;
      replace(
        this.deliveryList,
        h(
          "li",
          {},
          errorBox(error, () => void this.loadDeliveries()),
        ),
      );
    }
  }

  private deliveryItem(delivery: Delivery): HTMLElement {
    const tone = delivery.status === "delivered" ? "ok" : delivery.status === "failed" ? "bad" : "wait";
    const target = this.subscriptions.find((subscription) => subscription.id === delivery.subscription_id);
    const detail = h("div", { class: "detail" });
    const details = h(
      "details",
      {},
      h(
        "summary",
        {},
        statusBadge(delivery.status, tone),
        " ",
        h("strong", {}, delivery.event_type),
        delivery.origin !== "event" ? h("span", { class: "badge off" }, delivery.origin) : null,
        this.reportSummary(delivery),
        " ",
        h("span", { class: "meta" }, time(delivery.created_at), target ? ` → ${target.url}` : ""),
        delivery.next_attempt_at
          ? h("span", { class: "meta next-attempt" }, " · next attempt ", time(delivery.next_attempt_at))
          : null,
      ),
      detail,
    );
    let loaded = false;
    details.addEventListener("toggle", () => {
      if (details.open && !loaded) {
        loaded = true;
        void this.loadDetail(delivery, detail);
      }
    });
    return h("li", { class: "delivery", "data-delivery-id": delivery.id }, details);
  }

  /**
   * What an operational event reports, in words, beside its kind: which endpoint was disabled and why, or
   * which delivery to which endpoint used its attempts (the endpoint by its URL when it is listed).
   */
  private reportSummary(delivery: Delivery): HTMLElement | null {
    const { payload } = delivery;
    const endpoint = (id: string) =>
      this.subscriptions.find((subscription) => subscription.id === id)?.url ?? `endpoint ${id}`;
    if (payload.event === "webhook.endpoint_disabled")
      return h(
        "span",
        { class: "report" },
        ` · ${endpoint(payload.data.subscription_id)} was disabled: ${payload.data.reason}`,
      );
    if (payload.event === "webhook.delivery_exhausted") {
      const { data } = payload;
      const answer = data.last_response_code === null ? "no answer" : `HTTP ${data.last_response_code}`;
      return h(
        "span",
        { class: "report" },
        ` · ${data.event_type} to ${endpoint(data.subscription_id)} failed ${
          data.attempts === 1 ? "its one attempt" : `all ${data.attempts} attempts`
        } (last: ${answer})`,
      );
    }
    return null;
  }

  private async loadDetail(delivery: Delivery, into: HTMLElement): Promise<void> {
    replace(into, loading("attempts"));
    try {
      const { delivery: current, attempts } = await this.api.getDelivery(delivery.id);
      const resendNotice = h("div", { class: "detail-notice", "aria-live": "assertive" });
      replace(
        into,
        h(
          "dl",
          { class: "facts" },
          h("dt", {}, "Delivery id"),
          h("dd", {}, h("code", {}, current.id)),
          h("dt", {}, "Event id"),
          h("dd", {}, h("code", {}, current.event_id)),
          h("dt", {}, "Status"),
          h("dd", {}, current.status),
          h("dt", {}, "Next attempt"),
          h(
            "dd",
            { class: "next-attempt" },
            current.next_attempt_at ? time(current.next_attempt_at) : `none: the delivery is ${current.status}`,
          ),
          current.redelivery_of ? [h("dt", {}, "Resend of"), h("dd", {}, h("code", {}, current.redelivery_of))] : null,
        ),
        h("h3", {}, "Attempts"),
        attempts.length > 0
          ? this.attemptTable(attempts)
          : current.status === "pending"
            ? h(
                "p",
                { class: "state empty" },
                "No attempt yet: it is queued and will be sent shortly. Refresh to see it.",
              )
            : h(
                "p",
                { class: "state empty not-sent" },
                current.error_message ? `No attempt was made: ${current.error_message}.` : "No attempt was made.",
              ),
        h(
          "div",
          { class: "actions" },
          this.action("Resend", () => this.resend(current), { primary: true, where: () => resendNotice }),
        ),
        resendNotice,
        h("h3", {}, "Payload"),
        h("pre", { class: "payload", tabindex: 0 }, visibleBidi(JSON.stringify(current.payload, null, 2))),
      );
    } catch (error) {
      if (this.refused(error)) return;
      replace(
        into,
        errorBox(error, () => void this.loadDetail(delivery, into)),
      );
    }
  }

  /**
   * The attempts, oldest first: outcome and HTTP status first, so they stay in view on a narrow screen
   * (the table scrolls sideways only for the time and duration); under each, why it failed in words and,
   * folded, the request's headers and the answer's headers and body.
   */
  private attemptTable(attempts: Attempt[]): HTMLElement {
    const columns = ["#", "Outcome", "HTTP status", "Time", "Duration"];
    // On a narrow screen (portal.css) each attempt's cells wrap onto lines of their own, the HTTP status
    // and the attempt number named by data-label; the roles keep it a table for assistive technology then.
    const cell = (label: string | undefined, ...content: (Node | string)[]) =>
      h("td", { role: "cell", "data-label": label }, ...content);
    return h(
      "div",
      { class: "table-wrap", tabindex: 0 },
      h(
        "table",
        { class: "attempts", role: "table" },
        h(
          "thead",
          { role: "rowgroup" },
          h(
            "tr",
            { role: "row" },
            columns.map((title) => h("th", { scope: "col", role: "columnheader" }, title)),
          ),
        ),
        h(
          "tbody",
          { role: "rowgroup" },
          attempts.flatMap((attempt) => [
            h(
              "tr",
              { class: `attempt ${attempt.outcome}`, role: "row" },
              cell("Attempt", String(attempt.number)),
              cell(undefined, statusBadge(attempt.outcome, attempt.outcome === "delivered" ? "ok" : "bad")),
              cell("HTTP", attempt.response_code === null ? "—" : String(attempt.response_code)),
              cell(undefined, time(attempt.attempted_at)),
              cell(undefined, `${attempt.duration_ms} ms`),
            ),
            h(
              "tr",
              { class: "attempt-detail", role: "row" },
              h("td", { colspan: columns.length, role: "cell" }, this.attemptDetail(attempt)),
            ),
          ]),
        ),
      ),
    );
  }

  private attemptDetail(attempt: Attempt): HTMLElement {
    const headers = (values: Record<string, string> | null) =>
      h(
        "pre",
        { class: "headers" },
        visibleBidi(
          Object.entries(values ?? {})
            .map(([name, value]) => `${name}: ${value}`)
            .join("\n"),
        ),
      );
    const body = attempt.response_body;
    return h(
      "div",
      {},
      attempt.error_message
        ? h("p", { class: "failure" }, attempt.error_message, " ", h("code", {}, attempt.error_class ?? ""))
        : null,
      h(
        "details",
        { class: "exchange" },
        h("summary", {}, "Request and response"),
        h("h4", {}, "Request headers"),
        attempt.request_headers
          ? headers(attempt.request_headers)
          : h("p", { class: "meta" }, "Not kept for attempts made before request headers were recorded."),
        h("h4", {}, "Response"),
        attempt.response_headers === null
          ? h("p", { class: "meta no-answer" }, "No answer was received.")
          : [
              headers(attempt.response_headers),
              h(
                "h4",
                {},
                "Response body",
                attempt.response_body_truncated ? h("span", { class: "meta" }, " (its beginning only)") : null,
              ),
              body === null || body === ""
                ? h("p", { class: "meta" }, "Empty.")
                : h("pre", { class: "response-body", tabindex: 0 }, visibleBidi(body)),
            ],
      ),
    );
  }

  private async resend(delivery: Delivery): Promise<void> {
    await this.api.redeliver(delivery.id);
    await this.loadDeliveries();
    this.say("Resend queued: it appears as a new delivery at the top of the list.", "ok", {
      in: this.deliveriesNotice,
    });
  }
}

/** A time of day in the reader's locale (hours and minutes). */
function clock(ms: number): string {
  return new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

/** An operational kind: the service's report about one of the tenant's endpoints, never part of `*`. */
function isOperational(kind: string): boolean {
  return kind.startsWith("webhook.");
}

/** How each health status is toned on the card. */
const HEALTH_TONES: Record<Subscription["health"]["status"], "ok" | "wait" | "bad" | "off"> = {
  healthy: "ok",
  degraded: "wait",
  failing: "bad",
  unknown: "off",
};

/**
 * The endpoint's health as the API answers it: "Health: failing · 3 of 4 recent attempts delivered (75%) ·
 * last attempt failed, HTTP 503, <time>"; recent is the newest 100 attempts of the last 24 hours.
 */
function healthLine(health: Subscription["health"]): (Node | string)[] {
  const parts: (Node | string)[] = ["Health: ", statusBadge(health.status, HEALTH_TONES[health.status])];
  if (health.attempts === 0) {
    parts.push(" · no attempts in the last 24 hours");
    return parts;
  }
  parts.push(
    ` · ${health.delivered} of ${health.attempts} recent ${health.attempts === 1 ? "attempt" : "attempts"} delivered`,
    ` (${health.delivered_percent ?? 0}%)`,
    ` · last attempt ${health.last_outcome ?? "—"}`,
    health.last_response_code === null ? ", no answer" : `, HTTP ${health.last_response_code}`,
    ", ",
    time(health.last_attempt_at),
  );
  return parts;
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
  new Portal(session, root).start();
}

main();
