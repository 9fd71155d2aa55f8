// The webhook benchmark's receiver, run as a child process of scripts/bench/webhooks.ts so that it does not
// share the worker's event loop: an integrator's endpoint runs on a machine of its own, and here it still
// shares the two CPUs, as autocannon does in bench:intake. An HTTPS server (test/helpers/https-receiver.ts)
// with the certificate of the test CA in the folder argv[2], answering 204 to everything, keep-alive as
// Node's own default (5 s). It tells its parent its port, then, for every request received, the wall-clock
// time of its receipt (ms since the epoch, fractional) and the submission it is about ("" for a request to
// the path argv[3], which is not a delivery's), in batches: one message for the requests received in one
// turn of the event loop. The benchmark imports its types only.
import fs from "node:fs";
import path from "node:path";
import { startReceiver } from "../../test/helpers/https-receiver.ts";

/** What the receiver sends its parent. */
export type ReceiverMessage = { port: number } | { receipts: [submissionId: string, receivedAt: number][] };

const [caDir, notADeliveryPath] = process.argv.slice(2);
if (caDir !== undefined && process.send) {
  const send = (message: ReceiverMessage) => process.send?.(message);
  let receipts: [string, number][] = [];
  const flush = () => {
    send({ receipts });
    receipts = [];
  };
  const receiver = await startReceiver(
    {
      key: fs.readFileSync(path.join(caDir, "server.key"), "utf8"),
      cert: fs.readFileSync(path.join(caDir, "server.pem"), "utf8"),
    },
    () => ({ status: 204 }),
    {
      keepRecords: false,
      keepAliveTimeoutMs: 5000,
      onRequest: (request) => {
        const submissionId =
          request.path === notADeliveryPath
            ? ""
            : (JSON.parse(request.rawBody.toString("utf8")) as { data: { submission_id: string } }).data.submission_id;
        if (receipts.length === 0) setImmediate(flush);
        receipts.push([submissionId, performance.timeOrigin + request.receivedAt]);
      },
    },
  );
  send({ port: receiver.port });
  process.on("disconnect", () => void receiver.close().finally(() => process.exit(0)));
}
