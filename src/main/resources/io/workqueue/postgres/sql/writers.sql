-- The writers that wait for row locks, and what completing does. Every writer that can wait for a
-- row lock takes its locks in primary-key order (item_key is COLLATE "C"), through lock_named:
-- two overlapping batches then queue behind each other instead of deadlocking (40P01).

-- param delay bigint: microseconds until available (negative means now)
-- param last_error text: null for none
-- param attempts int[]: the attempts the claim gave each key
-- param prior_leases int[]: each key's lease before the claim: {{prior_lease_none}} none, {{prior_lease_lapsed}} lapsed, {{prior_lease_handed_back}} handed back
-- param claimed_us bigint[]: when each key's claim leased it (its claimed_at), microseconds since the epoch
-- param leases bigint[]: each key's new lease, in microseconds from now

-- fragment: lock_named
-- The lock-ordering CTE "target" of every writer that waits for row locks: it reaches the rows
-- :keys names in primary-key order and locks them in that order. {{which_rows}} narrows it to
-- pending_rows or leaves it at any_rows.

target AS MATERIALIZED (
    SELECT queue_name, item_key, requested_at, lease_until
    FROM {{table}}
    WHERE queue_name = {{this_queue}} AND item_key = ANY({{these_keys}}::text[]){{which_rows}}
    ORDER BY item_key
    FOR UPDATE
)

-- fragment: pending_rows
-- Completed rows are neither locked nor touched. Spelled IS NOT DISTINCT FROM NULL on purpose:
-- written as "completed_at IS NULL", the condition matches the partial due index's predicate,
-- and once statistics say few rows are pending the planner reads the named rows through that
-- index, filtering on the key, instead of looking them up in the primary key. While a
-- transaction holds the horizon that index is mostly dead entries, and the walk cost seconds per
-- statement (1.2M buffers for a completion of 100 keys, docs/benchmarks/pressure/ANALYSIS.md).
-- This spelling means the same and matches no index predicate, so the primary key is the only
-- index the lookup can use. (Locking completed rows too would also avoid the index, but every
-- extra lock a writer holds is one more a claim can meet, and a run of LockOrderIT with that
-- shape saw a claim-versus-complete deadlock.)

 AND completed_at IS NOT DISTINCT FROM NULL::timestamptz

-- fragment: any_rows
-- Every named row, whatever its state: what removing takes.


-- fragment: completing
-- The one rendering of completing, for every completing statement: "target" locks the named
-- pending rows in key order, "done" completes them ({{done}}: mark_completed, or delete_completed
-- when the queue deletes on complete), a row per item, and "rearmed" hands those enqueued again
-- during their lease back to the queue instead.

{{lock_named}},
done AS (
    {{done}}
        AND target.requested_at IS NULL AND target.lease_until <> {{handed_back}}
    RETURNING q.item_key, q.claimed_at
),
rearmed AS (
    {{rearm}}
)

-- fragment: mark_completed
-- What completing does to a row: kept until reaped, lease dropped, last error cleared.

UPDATE {{table}} AS q
SET completed_at = now(), lease_until = 'epoch', last_error = NULL
FROM target
WHERE q.queue_name = target.queue_name AND q.item_key = target.item_key

-- fragment: delete_completed
-- What completing does to the rows "target" locked when the queue deletes on complete: nothing
-- is kept, so nothing is left to reap. Also the whole of what removing does.

DELETE FROM {{table}} AS q
USING target
WHERE q.queue_name = target.queue_name AND q.item_key = target.item_key

-- fragment: rearm
-- What completing does instead to a row enqueued again while it was leased (its requested_at
-- set): the work runs once more, so the row stays pending, unleased, with fresh attempts, due
-- at the earliest availability those enqueues asked for (or now, if that has passed: the row
-- then sorts ahead of the claim cursors, not behind them). Its lease becomes handed_back.
-- Touches only rows "target" locked.

UPDATE {{table}} AS q
SET lease_until = {{handed_back}}, available_at = GREATEST(target.requested_at, now()), requested_at = NULL,
    attempts = 0, last_error = NULL
FROM target
WHERE q.queue_name = target.queue_name AND q.item_key = target.item_key
    AND target.requested_at IS NOT NULL AND target.lease_until <> {{handed_back}}
RETURNING q.item_key

-- statement: completeKeys
-- params: queue, keys, timed
-- use: which_rows = pending_rows
-- use: done = mark_completed
-- Marks the items completed. One row: "completed", the count, and "completed_keys", null when
-- every key named was completed, else the keys that were (empty when none was); "rearmed",
-- how many it handed back instead because they were enqueued during their lease; and
-- "completed_held_us", how long each completed item had been held since its claim (null
-- unless :timed).
WITH {{completing}}
{{completed_keys}}

-- statement: completeKeysDeleting
-- params: queue, keys, timed
-- use: which_rows = pending_rows
-- use: done = delete_completed
-- completeKeys for a queue that deletes on complete: the items are deleted.
WITH {{completing}}
{{completed_keys}}

-- fragment: completed_keys
-- What completeKeys returns.

-- One row: how many items were completed and, only when that is fewer than the keys
-- named, which ones, so a merged write can credit each caller. Usually every key
-- completes and the count is all that crosses the wire. array_agg over no rows is
-- NULL, which would read as "all": none completed is the empty array.
SELECT count(*) AS completed,
    CASE WHEN count(*) < cardinality(:keys::text[])
        THEN COALESCE(array_agg(item_key), '{}'::text[]) END AS completed_keys,
    (SELECT count(*) FROM rearmed) AS rearmed,
    {{done_held}} AS completed_held_us
FROM done

-- statement: releaseKeys
-- params: queue, keys, delay, last_error
-- use: which_rows = pending_rows
-- Drops the leases, sets the availability and records the last error.
WITH {{lock_named}}
UPDATE {{table}} AS q
SET lease_until = 'epoch',
    available_at = now() + GREATEST(:delay::bigint, 0) * INTERVAL '1 microsecond',
    last_error = :last_error::text,
    -- A release runs the item again anyway, after its own delay.
    requested_at = NULL
FROM target
WHERE q.queue_name = target.queue_name AND q.item_key = target.item_key

-- statement: handBackKeys
-- params: queue, keys, attempts, prior_leases
-- use: which_rows = pending_rows
WITH {{lock_named}}
-- Undoes a claim nobody took (its caller left while the statement ran): the lease
-- goes back to what it was, so a lapsed one still reads as a reclaim and a row
-- handed back to run again is still protected, and the attempt is not counted.
-- Only where the claim is still the row's latest: leased, at the attempt it gave.
-- Last error and availability are the row's own and stay; a re-request made
-- during the brief lease is void, since the row is due again at once.
UPDATE {{table}} AS q
SET lease_until = CASE mine.prior_lease WHEN {{prior_lease_lapsed}} THEN 'epoch'::timestamptz + INTERVAL '1 microsecond'
        WHEN {{prior_lease_handed_back}} THEN {{handed_back}} ELSE 'epoch' END,
    attempts = q.attempts - 1,
    requested_at = NULL
FROM target
JOIN unnest(:keys::text[], :attempts::int[], :prior_leases::int[]) AS mine(item_key, attempts, prior_lease)
    ON mine.item_key = target.item_key
WHERE q.queue_name = target.queue_name AND q.item_key = target.item_key
    AND q.attempts = mine.attempts AND q.lease_until > now()

-- statement: removeKeys
-- params: queue, keys
-- use: which_rows = any_rows
-- Deletes the items, whatever their state; returns the keys deleted (the queue counts them, the
-- admin lists them).
WITH {{lock_named}}
{{delete_completed}}
RETURNING q.item_key

-- fragment: held_by_caller
-- The caller still holds the row ("mine" names its claim: the attempts and the claimed_at it
-- gave): the row's latest claim is the caller's, and its lease is live. A holder whose lease
-- lapsed acts on nothing, whether or not someone has claimed the row since: attempts alone would
-- not do, since they start over when a completed item is enqueued again; the claim's instant
-- tells two claims at the same attempt apart.

q.attempts = mine.attempts
    AND q.claimed_at = 'epoch'::timestamptz + mine.claimed_us * INTERVAL '1 microsecond'
    AND q.lease_until > now()

-- statement: extendKeys
-- params: queue, keys, attempts, claimed_us, leases
-- use: which_rows = pending_rows
-- Extends the leases the callers still hold, each to now() plus its :leases entry, on the database
-- clock; a lease that lapsed, or a row claimed since, is left alone. Returns the keys extended.
WITH {{lock_named}}
UPDATE {{table}} AS q
SET lease_until = now() + mine.lease * INTERVAL '1 microsecond'
FROM target
JOIN unnest(:keys::text[], :attempts::int[], :claimed_us::bigint[], :leases::bigint[])
    AS mine(item_key, attempts, claimed_us, lease) ON mine.item_key = target.item_key
WHERE q.queue_name = target.queue_name AND q.item_key = target.item_key
    AND {{held_by_caller}}
RETURNING q.item_key

-- statement: snoozeKeys
-- params: queue, keys, attempts, claimed_us, delay
-- use: which_rows = pending_rows
-- Hands back leases the caller still holds without counting the attempt: not ready rather than
-- failed. The lease is dropped, the item due after :delay, its last error kept; an enqueue during
-- the lease is absorbed, as a release absorbs it. Returns the keys snoozed.
WITH {{lock_named}}
UPDATE {{table}} AS q
SET lease_until = 'epoch',
    available_at = now() + GREATEST(:delay::bigint, 0) * INTERVAL '1 microsecond',
    attempts = q.attempts - 1,
    requested_at = NULL
FROM target
JOIN unnest(:keys::text[], :attempts::int[], :claimed_us::bigint[])
    AS mine(item_key, attempts, claimed_us) ON mine.item_key = target.item_key
WHERE q.queue_name = target.queue_name AND q.item_key = target.item_key
    AND {{held_by_caller}}
RETURNING q.item_key
