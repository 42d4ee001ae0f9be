import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, type TextMapGetter, trace } from "@opentelemetry/api";
import type { MiddlewareHandler } from "hono";
import { serverTracer, tracerRegistered } from "../../tracing/tracer.ts";
import { knownMethod, routePattern } from "../route-pattern.ts";

const fromHeaders: TextMapGetter<Headers> = {
  get: (headers, key) => headers.get(key) ?? undefined,
  keys: (headers) => [...headers.keys()],
};

/**
 * A span for each request, through @opentelemetry/api: kind server, named by
 * its method and route pattern ("POST /v1/jobs/:id/complete"), the child of
 * the caller's span when its headers carry one (read by the registered
 * propagator: traceparent, with an SDK's defaults), and active while the
 * request is served, so that the store's transactions are its children
 * (src/drivers/traced.ts) and a claim links it to each job's trace
 * (linkJobTrace). A 5xx sets its status to error, with the exception. With no
 * SDK registered a request costs one check (tracerRegistered); with a span not
 * sampled, one non-recording span, and nothing is made active.
 */
export function tracing(): MiddlewareHandler {
  return async function tracing(c, next) {
    if (!tracerRegistered()) return next();
    const parent = propagation.extract(ROOT_CONTEXT, c.req.raw.headers, fromHeaders);
    const method = knownMethod(c);
    const route = routePattern(c);
    const span = serverTracer.startSpan(`${method} ${route}`, {
      kind: SpanKind.SERVER,
      attributes: { "http.request.method": method, "http.route": route, "url.path": c.req.path, "url.scheme": new URL(c.req.url).protocol.slice(0, -1) },
    }, parent);
    if (!span.isRecording()) return next();
    try {
      await context.with(trace.setSpan(parent, span), next);
      const status = c.res.status;
      span.setAttribute("http.response.status_code", status);
      if (status >= 500) {
        span.setAttribute("error.type", String(status));
        span.setStatus({ code: SpanStatusCode.ERROR });
        if (c.error) span.recordException(c.error);
      }
    } finally {
      span.end();
    }
  };
}
