import { ProxyTracerProvider, trace } from "@opentelemetry/api";

// The tracers fencelease's spans come from, by instrumentation scope. Each is
// a proxy of @opentelemetry/api: a no-op until an SDK registers a tracer
// provider, and from then on that provider's, without being fetched again.

/** The server's spans: a request, a store transaction. */
export const serverTracer = trace.getTracer("fencelease");

/** The client's spans: an enqueue, a job in a worker's hands. */
export const clientTracer = trace.getTracer("fencelease/client");

/**
 * Whether an SDK registered a tracer provider (with this copy of the API, or
 * with another one, which is then taken as yes): until one does, the spans of
 * fencelease are skipped before any is made, so that a request or a job
 * costs this check and nothing else.
 */
export function tracerRegistered(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegateTracer("fencelease") !== undefined;
}
