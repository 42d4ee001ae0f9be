import { trace } from "@opentelemetry/api";

// The tracers fencelease's spans come from, by instrumentation scope. Each is
// a proxy of @opentelemetry/api: a no-op until an SDK registers a tracer
// provider, and from then on that provider's, without being fetched again.

/** The server's spans: a request, a store transaction. */
export const serverTracer = trace.getTracer("fencelease");

/** The client's spans: an enqueue, a job in a worker's hands. */
export const clientTracer = trace.getTracer("fencelease/client");
