-- Enqueueing: the group commit's merged upsert, and the transactional enqueue's two forms.

-- param keys text[]: the stored keys, distinct
-- param priorities int[]: one per key
-- param delays bigint[]: one per key, in microseconds
-- param channel text: to notify

-- fragment: upsert
-- Writes the entries: new keys are inserted, outstanding ones merged (the same rule the client's
-- merge applies), completed ones restarted.

-- Rows go in key order (the ORDER BY puts a Sort under the Insert), so concurrent
-- upserts lock in the one total order every writer uses. The caller has merged
-- duplicate keys already: ON CONFLICT cannot touch a row twice (21000).
INSERT INTO {{table}} AS q (queue_name, item_key, priority, available_at)
SELECT :queue::text, e.item_key, e.priority, now() + e.delay_us * INTERVAL '1 microsecond'
FROM unnest(:keys::text[], :priorities::int[], :delays::bigint[]) AS e(item_key, priority, delay_us)
ORDER BY e.item_key COLLATE "C"
ON CONFLICT (queue_name, item_key) DO UPDATE SET
    -- Outstanding: priority only rises, availability only moves earlier, attempts,
    -- last error and a live lease are kept. Completed: restart it outright.
    priority = CASE WHEN q.completed_at IS NULL
        THEN GREATEST(q.priority, EXCLUDED.priority) ELSE EXCLUDED.priority END,
    available_at = CASE WHEN q.completed_at IS NULL
        THEN LEAST(q.available_at, EXCLUDED.available_at) ELSE EXCLUDED.available_at END,
    attempts = CASE WHEN q.completed_at IS NULL THEN q.attempts ELSE 0 END,
    last_error = CASE WHEN q.completed_at IS NULL THEN q.last_error END,
    enqueued_at = CASE WHEN q.completed_at IS NULL THEN q.enqueued_at ELSE EXCLUDED.enqueued_at END,
    lease_until = CASE WHEN q.completed_at IS NULL THEN q.lease_until ELSE 'epoch' END,
    -- Enqueued while leased: the work the lease is doing may predate this enqueue,
    -- so completing it will run it once more, from the earliest availability asked
    -- for (LEAST ignores the NULL of "not asked yet"). A completed row is restarted
    -- above and carries no mark; a lapsed lease keeps its mark.
    requested_at = CASE WHEN q.lease_until > now() THEN LEAST(q.requested_at, EXCLUDED.available_at)
        WHEN q.completed_at IS NULL THEN q.requested_at END,
    completed_at = NULL
-- Skip rewriting rows the enqueue would not change: fewer dead tuples. An enqueue
-- during a lease always changes the row (the mark), unless it asks for nothing new.
WHERE q.completed_at IS NOT NULL
    OR EXCLUDED.priority > q.priority
    OR EXCLUDED.available_at < q.available_at
    OR (q.lease_until > now() AND (q.requested_at IS NULL OR EXCLUDED.available_at < q.requested_at))

-- statement: enqueue
-- params: queue, keys, priorities, delays
{{upsert}}

-- statement: enqueueInTransaction
-- params: queue, keys, priorities, delays
-- A transaction that notifies takes, at commit, a lock that every other notifying
-- commit in the database waits for, held through its WAL flush: in the caller's
-- business transaction that would serialise the database's notifying commits. So
-- nothing is queued here; the transaction's id goes back to the queue, which
-- notifies from a connection of its own once the transaction has committed.
-- The id is assigned by the upsert anyway (pg_current_xact_id assigns one if it
-- runs first, and the upsert then uses it); xids are cluster-wide, so any
-- session, through any pooler, can ask about it.
WITH written AS (
    {{upsert}}
)
SELECT pg_current_xact_id()::text AS xid

-- statement: enqueueNotifying
-- params: queue, keys, priorities, delays, channel
-- Asked for by the caller: the notification goes out with the caller's commit, and
-- not at all on rollback, so no listener wakes before the rows are visible. The
-- caller's commit then takes the database-wide notify lock (see enqueueInTransaction).
WITH written AS (
    {{upsert}}
)
SELECT pg_notify(:channel::text, '')
