// end_listen_session: ends a listen session once it is past its end (it was not polled for
// LISTEN_IDLE_SECONDS after a poll's wait): it takes no new events, its pending deliveries end failed and
// its offers are dropped (db/webhooks/listen-sessions.ts endListenSession). Queued for the session's end
// when it starts; a session polled since then has a later end, and the task queues itself again for it,
// so a session costs one job per minute or so while it lives and none once it has ended.
import type { Task } from "graphile-worker";
import type { Services } from "../../foundation/services.ts";
import { isEndListenSessionPayload, JOB } from "../../db/jobs.ts";
import { endListenSession, listenSessionState } from "../../db/webhooks/listen-sessions.ts";

export function endListenSessionTask(services: Services): Task<"end_listen_session"> {
  return async (payload, helpers) => {
    if (!isEndListenSessionPayload(payload)) {
      helpers.logger.error(`end_listen_session job ${helpers.job.id} has a malformed payload; dropped`);
      return;
    }
    const { tenant_id: tenantId, session_id: sessionId } = payload;
    const state = await listenSessionState(services.db, tenantId, sessionId);
    if (!state?.active) return;
    if (!state.expired) {
      await helpers.addJob(JOB.endListenSession, payload, { runAt: state.expiresAt });
      return;
    }
    await endListenSession(services.db, tenantId, sessionId, { onlyIfExpired: true });
  };
}
