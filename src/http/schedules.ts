import type { OpenAPIHono } from "@hono/zod-openapi";
import type { LeaseStore } from "../store/store.ts";
import type { routes } from "./routes.ts";

/** Serves the schedule routes on `app`, over `store.schedules`; a fire's jobs are enqueued by the maintenance, not here. */
export function scheduleRoutes(app: OpenAPIHono, route: ReturnType<typeof routes>, store: LeaseStore, clock: () => number): void {
  app.openapi(route.putSchedule, async (c) => {
    const { created, schedule } = await store.schedules.put(c.req.valid("param").name, { ...c.req.valid("json"), now: clock() });
    return created ? c.json(schedule, 201) : c.json(schedule, 200);
  });

  app.openapi(route.getSchedule, async (c) => c.json(await store.schedules.get(c.req.valid("param").name), 200));

  app.openapi(route.listSchedules, async (c) => c.json({ schedules: await store.schedules.list() }, 200));

  app.openapi(route.deleteSchedule, async (c) => {
    await store.schedules.delete(c.req.valid("param").name);
    return c.body(null, 204);
  });
}
