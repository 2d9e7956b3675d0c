-- The operator's statements (PostgresWorkQueueAdmin): listings, one item, retry, remove, purge.
-- They read every logical queue of a table; each state is the predicate the queue itself uses
-- (due for ready, delayed, leased, stalled, completed), never a second spelling of it.

-- param key text: the stored key
-- param band int: the priority band the last page ended in; null for the first page
-- param available bigint: where in that band it ended, microseconds since the epoch
-- param after_key text: and the key it ended at
-- param next_bands bigint: the highest priority of the bands after it (the int maximum for the first page)
-- param page_size int
-- param scan_budget int: the most index entries each part reads
-- param completed_at bigint: the completion instant the last page ended at, microseconds since the epoch; null for the first page
-- param purge_limit int: the most completed items to delete

-- fragment: raw_columns
-- The raw columns a listing reads from the table, named as the predicates name them, so the
-- predicates apply unchanged to the derived table "b" they are read into.

item_key, priority, attempts, last_error, enqueued_at, available_at, lease_until, completed_at, requested_at

-- fragment: item_columns
-- What a listing or a detail returns of each item; ages in microseconds on the database clock.

b.item_key, b.priority, b.attempts, b.last_error,
(EXTRACT(EPOCH FROM now() - b.enqueued_at) * 1000000)::bigint AS age_us,
(EXTRACT(EPOCH FROM b.available_at - now()) * 1000000)::bigint AS available_in_us,
CASE WHEN b.lease_until > now() THEN (EXTRACT(EPOCH FROM b.lease_until - now()) * 1000000)::bigint END AS lease_left_us,
CASE WHEN b.completed_at IS NOT NULL THEN (EXTRACT(EPOCH FROM now() - b.completed_at) * 1000000)::bigint END AS completed_ago_us,
b.requested_at IS NOT NULL AS requeue_requested,
-- A real lease (after the epoch) that ran out: the next claim is a reclaim.
(b.lease_until > 'epoch' AND b.lease_until <= now()) AS lease_lapsed,
({{due}}) AS is_ready, ({{delayed}}) AS is_delayed, ({{leased}}) AS is_leased, ({{stalled}}) AS is_stalled, ({{completed}}) AS is_completed,
-- The item's place in its listing order, for the next page's cursor.
(EXTRACT(EPOCH FROM b.available_at) * 1000000)::bigint AS available_us,
(EXTRACT(EPOCH FROM b.completed_at) * 1000000)::bigint AS completed_us

-- statement: admin.queueNames
-- params:
-- The distinct queue names of the table, in order. A loose index scan of the primary key: one
-- probe per name, however many rows each queue has.
WITH RECURSIVE names AS (
    (SELECT queue_name FROM {{table}} ORDER BY queue_name LIMIT 1)
    UNION ALL
    SELECT (SELECT t.queue_name FROM {{table}} AS t WHERE t.queue_name > names.queue_name
            ORDER BY t.queue_name LIMIT 1)
    FROM names
    WHERE names.queue_name IS NOT NULL
)
SELECT queue_name FROM names WHERE queue_name IS NOT NULL

-- statement: admin.item
-- params: queue, attempt_limit, key
-- That item's row, or none.
SELECT {{item_columns}}
FROM (SELECT {{raw_columns}} FROM {{table}} WHERE queue_name = :queue::text AND item_key = :key::text) AS b

-- fragment: page_part
-- One part of a page: the rows of the queue in {{range}}, read in {{order}} up to the scan budget
-- and numbered; of those, the ones in {{state}}, plus the last one read whatever its state (where
-- the part stopped, if the budget ended it); at most a page of rows. {{number}} tells the parts
-- apart.

SELECT {{number}} AS part, s.*
FROM (
    SELECT row_number() OVER (ORDER BY {{order}}) AS n, {{item_columns}}, ({{state}}) AS wanted
    FROM (
        SELECT {{raw_columns}}
        FROM {{table}}
        WHERE queue_name = {{this_queue}} AND {{range}}
        ORDER BY {{order}}
        LIMIT :scan_budget::int
    ) AS b
) AS s
WHERE s.wanted OR s.n = :scan_budget::int
LIMIT :page_size::int

-- fragment: pending_page
-- A page of the pending items in {{state}}, in claim order, continuing from a position (:band,
-- and :available and :after_key within it; :next_bands the highest priority of the bands after
-- it, a bigint so that "none" is expressible below the lowest int). Claim order is priority
-- descending but availability and key ascending, which no single row comparison can seek to in
-- the claim's index. So the page is two index range scans, each in index order: the rest of the
-- band, then the bands below. Each reads at most :scan_budget entries (its LIMIT under the
-- state's filter) and returns the matching ones, numbered, plus its last entry read whatever its
-- state: where that part stopped, if the budget ended it. The client takes them in order, up to
-- the page size or that stop, whichever comes first, and continues from the last row it took. A
-- state that matches most rows (ready, usually) stops each part after about a page of entries.

-- The rest of the band the last page ended in, then the bands after it.
SELECT * FROM (
{{page_part with number = part_one, order = band_order, range = rest_of_band}}
) AS rest_of_band
UNION ALL
SELECT * FROM (
{{page_part with number = part_two, order = claim_order, range = next_bands}}
) AS next_bands
ORDER BY part, n

-- fragment: part_one
-- The first part of a page.

1

-- fragment: part_two
-- The second part of a page.

2

-- fragment: band_order
-- Claim order within one band.

available_at, item_key

-- fragment: rest_of_band
-- The rest of the band the last page ended in.

completed_at IS NULL AND priority = :band::int AND (available_at, item_key) > ('epoch'::timestamptz + :available::bigint * INTERVAL '1 microsecond', :after_key::text)

-- fragment: next_bands
-- The bands below it.

completed_at IS NULL AND priority <= :next_bands::bigint

-- statement: admin.readyPage
-- params: queue, attempt_limit, band, available, after_key, next_bands, page_size, scan_budget
-- use: state = due
-- A page of the ready items, in claim order.
{{pending_page}}

-- statement: admin.delayedPage
-- params: queue, attempt_limit, band, available, after_key, next_bands, page_size, scan_budget
-- use: state = delayed
-- A page of the delayed items, in claim order.
{{pending_page}}

-- statement: admin.leasedPage
-- params: queue, attempt_limit, band, available, after_key, next_bands, page_size, scan_budget
-- use: state = leased
-- A page of the leased items, in claim order.
{{pending_page}}

-- statement: admin.stalledPage
-- params: queue, attempt_limit, band, available, after_key, next_bands, page_size, scan_budget
-- use: state = stalled
-- A page of the stalled items, in claim order.
{{pending_page}}

-- fragment: completion_instant
-- Where the last page of completed items ended.

'epoch'::timestamptz + :completed_at::bigint * INTERVAL '1 microsecond'

-- fragment: rest_of_instant
-- The rest of the completion instant the last page ended in (items completed by one statement
-- share it).

{{completed}} AND completed_at = {{completion_instant}} AND item_key < :after_key::text

-- fragment: older
-- The completions before it.

{{completed}} AND completed_at < COALESCE({{completion_instant}}, 'infinity')

-- fragment: key_descending
-- Within one completion instant.

item_key DESC

-- fragment: newest_first
-- Completed items, newest first.

completed_at DESC, item_key DESC

-- statement: admin.completedPage
-- params: queue, attempt_limit, completed_at, after_key, page_size, scan_budget
-- use: state = completed
-- A page of completed items, newest completion first, then key descending, through the reap
-- index, continuing from where the last page ended (:completed_at and :after_key; both null for
-- the first page). As the pending pages: the rest of the completion instant the last page ended
-- in, then the older ones.
SELECT * FROM (
{{page_part with number = part_one, order = key_descending, range = rest_of_instant}}
) AS rest_of_instant
UNION ALL
SELECT * FROM (
{{page_part with number = part_two, order = newest_first, range = older}}
) AS older
ORDER BY part, n

-- statement: admin.retryKeys
-- params: queue, attempt_limit, keys
-- use: which_rows = pending_rows
-- Makes the stalled and delayed ones among :keys due now with fresh attempts; returns the keys
-- it changed.
WITH {{lock_named}}
-- No FROM: the predicates name the row's own columns, unqualified. The row is
-- locked already, in key order; they are checked on its latest version.
UPDATE {{table}} AS q
SET available_at = now(), attempts = 0
WHERE q.queue_name = {{this_queue}} AND q.item_key = ANY(ARRAY(SELECT item_key FROM target))
    AND NOT ({{leased}}) AND (({{stalled}}) OR ({{delayed}}))
RETURNING q.item_key

-- statement: admin.purgeCompleted
-- params: queue, purge_limit
-- Deletes the oldest completed items.
-- The oldest completions through the reap index, then locked in key order like
-- every writer; a row enqueued again meanwhile is pending and stays (the
-- condition is checked on its latest version, and spelled so that it matches
-- no partial index: the primary key finds the rows, as in lock_named).
WITH oldest AS MATERIALIZED (
    SELECT item_key
    FROM {{table}}
    WHERE queue_name = {{this_queue}} AND {{completed}}
    ORDER BY completed_at
    LIMIT :purge_limit::int
),
target AS MATERIALIZED (
    SELECT queue_name, item_key
    FROM {{table}}
    WHERE queue_name = {{this_queue}} AND item_key = ANY(ARRAY(SELECT item_key FROM oldest))
    ORDER BY item_key
    FOR UPDATE
)
DELETE FROM {{table}} AS q
WHERE q.queue_name = {{this_queue}} AND q.item_key = ANY(ARRAY(SELECT item_key FROM target))
    AND q.completed_at IS DISTINCT FROM NULL::timestamptz

-- statement: admin.pause
-- params: queue
-- Pauses the queue fleet-wide: every claim leases nothing until it is resumed; enqueues still
-- land. Pausing a paused queue keeps its first pause. A queue with no row yet gets one naming
-- no keeper ('' until '-infinity'), which the next housekeeping round takes over. One row:
-- "paused_us", when it was paused, microseconds since the epoch.
INSERT INTO {{queues_table}} AS k (queue_name, keeper, keeper_until, paused_at)
VALUES (:queue::text, '', '-infinity', now())
ON CONFLICT (queue_name) DO UPDATE SET paused_at = COALESCE(k.paused_at, now())
RETURNING (EXTRACT(EPOCH FROM k.paused_at) * 1000000)::bigint AS paused_us

-- statement: admin.resume
-- params: queue
-- Resumes a paused queue; a row for each queue that was paused, none if it was not.
UPDATE {{queues_table}}
SET paused_at = NULL
WHERE queue_name = :queue::text AND paused_at IS NOT NULL
RETURNING queue_name
