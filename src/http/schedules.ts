import type { OpenAPIHono } from "@hono/zod-openapi";
import type { LeaseStore } from "../store/store.ts";
import type { routes } from "./routes.ts";
import { NotFound } from "../store/errors.ts";
import type { Schedule } from "../store/schedules.ts";
import { ApiError } from "./api-error.ts";
import type { Permit } from "./permit.ts";

/** Serves the schedule routes on `app`, over `store.schedules`; a fire's jobs are enqueued by the maintenance, not here. */
export function scheduleRoutes(app: OpenAPIHono, route: ReturnType<typeof routes>, store: LeaseStore, clock: () => number): void {
  /** A schedule by name; one of a queue the token may not see is none at all (NotFound), as for jobs. */
  async function visibleSchedule(permit: Permit, name: string): Promise<Schedule> {
    const schedule = await store.schedules.get(name);
    if (!permit.sees(schedule.queue)) throw new NotFound(name, `no schedule has the name ${JSON.stringify(name)}`);
    return schedule;
  }

  app.openapi(route.putSchedule, async (c) => {
    const { name } = c.req.valid("param");
    const permit = c.get("permit");
    permit.need("manage", c.req.valid("json").queue);
    // A schedule's name is one for all queues, like a job's id: a replace must also be allowed on the queue it had.
    if (!permit.everywhere("manage")) {
      const before = await store.schedules.get(name).catch((error: unknown) => (error instanceof NotFound ? null : Promise.reject(error)));
      if (before !== null && !permit.sees(before.queue)) throw new ApiError(409, "conflict", `the schedule name ${JSON.stringify(name)} is taken by a schedule of a queue this token may not see; nothing changed: choose another name`);
      if (before !== null) permit.need("manage", before.queue);
    }
    const { created, schedule } = await store.schedules.put(name, c.req.valid("json"), clock());
    return created ? c.json(schedule, 201) : c.json(schedule, 200);
  });

  app.openapi(route.getSchedule, async (c) => c.json(await visibleSchedule(c.get("permit"), c.req.valid("param").name), 200));

  app.openapi(route.listSchedules, async (c) => {
    const permit = c.get("permit");
    return c.json({ schedules: (await store.schedules.list()).filter((schedule) => permit.sees(schedule.queue)) }, 200);
  });

  app.openapi(route.deleteSchedule, async (c) => {
    const permit = c.get("permit");
    if (!permit.everywhere("manage")) permit.need("manage", (await visibleSchedule(permit, c.req.valid("param").name)).queue);
    await store.schedules.delete(c.req.valid("param").name);
    return c.body(null, 204);
  });
}
