import { createRoute, z } from "@hono/zod-openapi";
import { MAX_STEP_BYTES, MAX_STEPS } from "../store/sql/steps.ts";
import { MAX_STEP_NAME_BYTES, utf8Bytes } from "../store/validate.ts";
import { LEASES_TAG } from "./leases.ts";
import { type Api, error, IdParam, json, refusals, requestBody, type Served } from "./resource.ts";
import { anyJson, body, Fence, jsonValueRules, label, labelPattern, labelRules, Owner } from "./shapes.ts";

// Fenced steps (issue 30): a job's handler records each named step's result
// under its lease, and every later lease of the job is handed them back
// (`steps` on the Job), so that a job taken over resumes after its last
// recorded step, and a stalled worker that wakes up cannot record a step the
// new lease records.

/** A step's name: what label() takes, in at most MAX_STEP_NAME_BYTES bytes of UTF-8. */
export const StepName = label()
  .refine((value) => utf8Bytes(value) <= MAX_STEP_NAME_BYTES, { error: `must be at most ${MAX_STEP_NAME_BYTES} bytes of UTF-8` })
  .openapi({ example: "charge", maxLength: MAX_STEP_NAME_BYTES, pattern: labelPattern(), description: `A step's name, the same under every lease of the job: ${labelRules(MAX_STEP_NAME_BYTES)}` });

/** The {id} and {name} of a step's path. */
const StepParams = IdParam.extend({ name: StepName.openapi({ param: { name: "name", in: "path" } }) });

/** What POST /v1/jobs/{id}/steps/{name} sends: the lease, and the step's result. */
export const StepBody = body({
  owner: Owner,
  fence: Fence,
  result: anyJson().openapi(jsonValueRules(`Any JSON value (null for none): the step's result, handed back with every later lease of the job. A job's steps take at most ${MAX_STEP_BYTES} bytes of results as JSON together`)),
});

/** A step as recorded: its name, its result, the fence of the lease that recorded it, and when. */
export const StepSchema = z
  .object({
    name: z.string(),
    result: anyJson().openapi({ description: "The JSON value recorded" }),
    fence: z.number().int().openapi({ description: "The fence of the lease that recorded it" }),
    at: z.number().int().openapi({ description: "When it was recorded, in ms since the epoch" }),
  })
  .openapi("Step");

/** What a step answers: whether this call recorded it, and the step as recorded. */
const StepAnswer = z.object({ recorded: z.boolean(), step: StepSchema });

/** The step routes. */
export function stepRoutes() {
  return {
    step: createRoute({
      method: "post",
      path: "/v1/jobs/{id}/steps/{name}",
      tags: [LEASES_TAG.name],
      operationId: "recordStep",
      summary: "Record a step's result under the current lease; a step recorded already (by any lease) answers as it was recorded",
      request: { params: StepParams, ...requestBody(StepBody) },
      responses: {
        201: json(StepAnswer, "Recorded now, under this lease: recorded true"),
        200: json(StepAnswer, "Recorded before, by this lease or an earlier one: recorded false, and the step as it was recorded (its result, not the one sent)"),
        404: error("not_found"),
        409: error("stale_lease, with details.reason and details.currentFence: nothing is stored, even when the step was recorded already"),
        ...refusals,
        413: error(`too_many_steps (the job has its ${MAX_STEPS} steps) or steps_too_large (its steps' results would take more than ${MAX_STEP_BYTES} bytes as JSON), with details.limit: nothing is stored; or payload_too_large: the body is over the limit`),
      },
    }),
  };
}

/** Serves the step routes on `app`. */
export function serveSteps(app: Api, route: ReturnType<typeof stepRoutes>, { store, clock }: Served): void {
  app.openapi(route.step, async (c) => {
    const { id, name } = c.req.valid("param");
    const { owner, fence, result } = c.req.valid("json");
    await c.get("permit").job("work", id);
    const answer = await store.step(id, name, { owner, fence, result, now: clock() });
    return answer.recorded ? c.json({ recorded: true, step: answer.step }, 201) : c.json({ recorded: false, step: answer.step }, 200);
  });
}
