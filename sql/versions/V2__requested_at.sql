-- reactive-workqueue schema version 2: an enqueue that lands while an item is leased is recorded
-- (requested_at), so completing that lease runs the item once more instead of losing the enqueue.
-- A nullable column without a default: a catalog change that rewrites no row, though ALTER TABLE
-- takes the table's exclusive lock for a moment (it waits for running statements, and new ones
-- wait behind it). Queues of this schema version need it before they start.
ALTER TABLE {{prefix}}work_queue_items ADD COLUMN IF NOT EXISTS requested_at TIMESTAMPTZ;

COMMENT ON TABLE {{prefix}}work_queue_items IS 'reactive-workqueue schema 2';
