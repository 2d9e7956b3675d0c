-- Enqueueing: the group commit's merged upsert, and the transactional enqueue's two forms.

-- param keys text[]: the stored keys, distinct
-- param priorities int[]: one per key
-- param delays bigint[]: one per key, in microseconds
-- param channel text: to notify
-- param traces text[]: one per key: the W3C trace contexts of the enqueues that asked for it, separated by spaces; null for none

-- fragment: upsert
-- Writes the entries: new keys are inserted, outstanding ones merged (the same rule the client's
-- merge applies), completed ones restarted. {{entries}}, {{trace_insert}}, {{trace_value}},
-- {{trace_merge}} and {{trace_changed}} store the enqueues' trace contexts, or leave them be.

-- Rows go in key order (the ORDER BY puts a Sort under the Insert), so concurrent
-- upserts lock in the one total order every writer uses. The caller has merged
-- duplicate keys already: ON CONFLICT cannot touch a row twice (21000).
INSERT INTO {{table}} AS q (queue_name, item_key, priority, available_at{{trace_insert}})
SELECT :queue::text, e.item_key, e.priority, now() + e.delay_us * INTERVAL '1 microsecond'{{trace_value}}
FROM {{entries}}
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
    {{trace_merge}}completed_at = NULL
-- Skip rewriting rows the enqueue would not change: fewer dead tuples. An enqueue
-- during a lease always changes the row (the mark), unless it asks for nothing new.
WHERE q.completed_at IS NOT NULL
    OR EXCLUDED.priority > q.priority
    OR EXCLUDED.available_at < q.available_at
    OR (q.lease_until > now() AND (q.requested_at IS NULL OR EXCLUDED.available_at < q.requested_at)){{trace_changed}}

-- fragment: untraced_entries
-- The entries, without trace contexts.

unnest(:keys::text[], :priorities::int[], :delays::bigint[]) AS e(item_key, priority, delay_us)

-- fragment: traced_entries
-- The entries with their trace contexts.

unnest(:keys::text[], :priorities::int[], :delays::bigint[], :traces::text[]) AS e(item_key, priority, delay_us, traces)

-- fragment: nothing
-- Nothing: a slot left empty.


-- fragment: trace_contexts_column
-- The column the trace contexts go in.

, trace_contexts

-- fragment: trace_contexts_value
-- A new row's trace contexts: its entry's, NULL when it brought none.

, string_to_array(e.traces, ' ')

-- fragment: trace_contexts_merge
-- An outstanding row keeps its trace contexts and gains the new ones, the most recent
-- {{max_trace_contexts}} kept (the slice's lower bound may fall below 1: it then starts at the
-- first); a completed row starts over with the new ones, as it starts over in everything else.

trace_contexts = CASE WHEN q.completed_at IS NULL
        THEN (q.trace_contexts || EXCLUDED.trace_contexts)[COALESCE(cardinality(q.trace_contexts), 0)
            + COALESCE(cardinality(EXCLUDED.trace_contexts), 0) - {{max_trace_contexts}} + 1:]
        ELSE EXCLUDED.trace_contexts END,
    

-- fragment: trace_contexts_changed
-- An enqueue that brings a trace context changes the row, even if it asks for nothing else.

 OR EXCLUDED.trace_contexts IS NOT NULL

-- statement: enqueue
-- params: queue, keys, priorities, delays
-- use: entries = untraced_entries
-- use: trace_insert = nothing
-- use: trace_value = nothing
-- use: trace_merge = nothing
-- use: trace_changed = nothing
{{upsert}}

-- statement: enqueueTraced
-- params: queue, keys, priorities, delays, traces
-- use: entries = traced_entries
-- use: trace_insert = trace_contexts_column
-- use: trace_value = trace_contexts_value
-- use: trace_merge = trace_contexts_merge
-- use: trace_changed = trace_contexts_changed
-- enqueue for a queue that stores its enqueues' trace contexts.
{{upsert}}

-- fragment: upsert_in_transaction
-- The transactional enqueue on a queue that notifies: the upsert, then the transaction's id.

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

-- fragment: upsert_notifying
-- The transactional enqueue that notifies with the caller's commit: the upsert, then the NOTIFY.

-- Asked for by the caller: the notification goes out with the caller's commit, and
-- not at all on rollback, so no listener wakes before the rows are visible. The
-- caller's commit then takes the database-wide notify lock (see enqueueInTransaction).
WITH written AS (
    {{upsert}}
)
SELECT pg_notify(:channel::text, '')

-- statement: enqueueInTransaction
-- params: queue, keys, priorities, delays
-- use: entries = untraced_entries
-- use: trace_insert = nothing
-- use: trace_value = nothing
-- use: trace_merge = nothing
-- use: trace_changed = nothing
-- One row, "xid": the caller's transaction, for the notifier to await.
{{upsert_in_transaction}}

-- statement: enqueueInTransactionTraced
-- params: queue, keys, priorities, delays, traces
-- use: entries = traced_entries
-- use: trace_insert = trace_contexts_column
-- use: trace_value = trace_contexts_value
-- use: trace_merge = trace_contexts_merge
-- use: trace_changed = trace_contexts_changed
-- enqueueInTransaction for a queue that stores its enqueues' trace contexts.
{{upsert_in_transaction}}

-- statement: enqueueNotifying
-- params: queue, keys, priorities, delays, channel
-- use: entries = untraced_entries
-- use: trace_insert = nothing
-- use: trace_value = nothing
-- use: trace_merge = nothing
-- use: trace_changed = nothing
-- The transactional enqueue the caller asked to notify with its commit.
{{upsert_notifying}}

-- statement: enqueueNotifyingTraced
-- params: queue, keys, priorities, delays, traces, channel
-- use: entries = traced_entries
-- use: trace_insert = trace_contexts_column
-- use: trace_value = trace_contexts_value
-- use: trace_merge = trace_contexts_merge
-- use: trace_changed = trace_contexts_changed
-- enqueueNotifying for a queue that stores its enqueues' trace contexts.
{{upsert_notifying}}
