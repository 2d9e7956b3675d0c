-- reactive-workqueue schema version 5: what observation needs.
-- trace_contexts on the items: the W3C trace contexts (traceparent) of the enqueues the item's next
-- run answers, written only by a queue that stores them (WorkQueueConfig.storeTraceContexts), so a
-- handler's span can link to the requests that asked for the work. At most a handful per item
-- (WorkQueueConfig.MAX_TRACE_CONTEXTS), the most recent. longest_lease_us on the queues: the
-- housekeeper's reading of the longest-running live lease, beside the stats it publishes. Two
-- nullable columns without a default: catalog changes that rewrite no row, though ALTER TABLE takes
-- each table's exclusive lock for a moment. Needs version 4.
ALTER TABLE {{prefix}}work_queue_items ADD COLUMN IF NOT EXISTS trace_contexts TEXT[];
ALTER TABLE {{prefix}}work_queue_queues ADD COLUMN IF NOT EXISTS longest_lease_us BIGINT;

COMMENT ON TABLE {{prefix}}work_queue_items IS 'reactive-workqueue schema 5';
