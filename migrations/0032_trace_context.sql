-- The W3C trace context a job was enqueued with (issue 21): traceparent and
-- tracestate as the producer sent them (src/tracing/trace-context.ts checks
-- them), handed back with every lease so that a worker continues the
-- producer's trace. Written by the enqueue's INSERT only and never changed:
-- no index, no trigger, no row of their own, and NULL (nothing stored beyond
-- the row's header) for a job enqueued without one.
ALTER TABLE jobs ADD COLUMN traceparent TEXT;
ALTER TABLE jobs ADD COLUMN tracestate TEXT;
