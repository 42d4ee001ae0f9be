// A push endpoint as a Cloudflare Worker: fencelease POSTs each due job of a
// queue here (docs/push.md), signed; the Worker checks the signature with
// verifyPush, does the work, and its answer decides the job: a 2xx completes
// it with the answer's body as the result, any other status fails it (due
// again after the backoff, or after this answer's Retry-After). How to deploy
// it, or run it locally: the header of examples/push-worker/wrangler.toml.
import { verifyPush } from "fencelease/client";

export type Env = {
  /** The whsec_... secret of the queue's push settings (a secret); during a rotation, the new and the old, comma-separated. */
  PUSH_SECRET: string;
};

/** What this queue's jobs carry: a mail to send. */
export type Mail = { to: string; subject: string };

/** The work itself; here it only says what it would send. A delivery may come again (a lost answer, a timeout): make the real one idempotent, by the job's id. */
async function send(mail: Mail, jobId: string): Promise<{ sent: string; id: string }> {
  return { sent: `${mail.subject} to ${mail.to}`, id: jobId };
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    if (request.method !== "POST") return new Response("fencelease POSTs deliveries here", { status: 405, headers: { Allow: "POST" } });
    let push;
    try {
      push = await verifyPush<Mail>(request, env.PUSH_SECRET.split(","));
    } catch (error) {
      // Not signed with the secret, or signed more than 5 minutes ago: do nothing.
      return new Response((error as Error).message, { status: 401 });
    }
    if (typeof push.job.payload?.to !== "string") {
      // A job it can never do: failing it again and again only spends its attempts; a day later is soon enough.
      return new Response("the payload has no `to`", { status: 422, headers: { "Retry-After": "86400" } });
    }
    return Response.json(await send(push.job.payload, push.job.id));
  },
};
