-- reactive-workqueue schema version 4: what long-running work and an operator's levers need.
-- claimed_at on the items: when the item's latest claim leased it. With attempts it names that
-- claim (attempts alone start over when a completed item is enqueued again), so a lease extension
-- or a snooze acts only for the holder of the latest claim, never for a straggler whose lease
-- lapsed and was taken over. paused_at on the queues: a queue an operator paused, fleet-wide;
-- claims hand out nothing while it is set. Two nullable columns without a default: catalog changes
-- that rewrite no row, though ALTER TABLE takes the items table's exclusive lock for a moment (it
-- waits for running statements, and new ones wait behind it). Needs version 3 (work_queue_queues).
ALTER TABLE {{prefix}}work_queue_items ADD COLUMN IF NOT EXISTS claimed_at TIMESTAMPTZ;
ALTER TABLE {{prefix}}work_queue_queues ADD COLUMN IF NOT EXISTS paused_at TIMESTAMPTZ;

COMMENT ON TABLE {{prefix}}work_queue_items IS 'reactive-workqueue schema 4';
