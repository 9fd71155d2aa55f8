// Text from outside the service on the /portal page, in a real headless Chromium: a receiver's answer and an
// event's data may hold bidirectional controls (U+202E RIGHT-TO-LEFT OVERRIDE makes "\u202Egnp.exe" read
// "exe.png"). The page shows each as its escape, `\u202E`, so what is shown reads as what was received.
import t from "tap";
import { emitEvent } from "../../db/events.ts";
import { BROWSER_FILE_TIMEOUT_MS, browserSession, portalLink, screenshot } from "../helpers/browser.ts";
import { intakeEventData, startWebhookRig, testCa } from "../helpers/webhooks.ts";

// Every wait below is on a condition, with the generous deadline of test/helpers/browser.ts.
t.setTimeout(BROWSER_FILE_TIMEOUT_MS);

const ca = testCa(t);
const ANSWER = "saved \u202Egnp.exe and \u2067isolated\u2069 \u200Fmarked";

t.test(
  "bidi controls in a receiver's answer and an event's data show as escapes, never reorder the text",
  async (t) => {
    const rig = await startWebhookRig(t, ca, {
      answer: () => ({ status: 200, headers: { "Content-Type": "text/plain; charset=utf-8" }, body: ANSWER }),
    });
    await rig.subscribe(rig.receiver.url("/bidi"), ["intake.submitted"]);
    const data = intakeEventData({ external_reference: "order-\u202E1174" });
    await rig.server.services.db.transaction((trx) => emitEvent(trx, rig.tenant.tenantId, "intake.submitted", data));

    const browser = await browserSession(t);
    const page = await browser.context.newPage();
    await page.goto(await portalLink(rig.server, rig.tenant));
    const delivery = page.locator("#delivery-list li.delivery").first();
    await delivery.locator("summary .badge", { hasText: "delivered" }).waitFor();
    await delivery.locator("summary").click();
    await delivery.locator("details.exchange summary").click();

    const body = await delivery.locator("pre.response-body").innerText();
    t.equal(
      body,
      "saved \\u202Egnp.exe and \\u2067isolated\\u2069 \\u200Fmarked",
      "the answer's body, each control escaped",
    );
    t.notMatch(body, /[\u200E\u200F\u202A-\u202E\u2066-\u2069]/u, "no bidi control is left to act");
    const payload = await delivery.locator("pre.payload").innerText();
    t.match(payload, /"external_reference": "order-\\u202E1174"/, "the event's data, escaped too");
    t.notMatch(payload, /\u202E/u);
    await screenshot(page, "portal", "12-bidi-escaped");
  },
);
