-- The statements reactive-workqueue runs, as named blocks the library renders once per table
-- (io.workqueue.postgres.SqlTemplates). The format, for every file of this folder:
--
--   -- param NAME TYPE: what it is     a parameter, declared once for every statement; the SQL
--                                      names it :NAME, and the driver receives $1, $2, ...
--   -- fragment: NAME                  a piece of SQL others include as {{NAME}}, indented as the
--                                      placeholder is; its first paragraph (up to a blank line)
--                                      says what it is for and is not rendered
--   -- statement: NAME                 a statement the library runs, then its directives:
--   -- params: a, b, c                 its parameters, in the order the driver numbers them
--   -- use: SLOT = FRAGMENT            fills {{SLOT}} with a fragment, for this statement only:
--                                      variants of one shape are named, not flagged in code
--   {{NAME with SLOT = FRAGMENT, ...}} includes NAME with slots filled for this inclusion only
--
-- A block runs to the next param, fragment or statement line. Every other comment is part of the
-- text and says why; the driver receives the text without comments. {{table}} and
-- {{queues_table}} are the validated table names, the only identifiers ever rendered into SQL;
-- every value is a bind parameter. Batches travel as arrays (unnest, = ANY), so a statement's text
-- is the same whatever the batch size and is prepared once per connection. Durations travel as
-- microsecond counts times INTERVAL '1 microsecond': the database's now() is the only clock.
-- docs/sql/statements.sql is every statement rendered for the default table.

-- param queue text: the logical queue's name
-- param attempt_limit int: 0 means unlimited

-- fragment: this_queue
-- The queue's name as every statement that reads a queue's rows of the items table compares
-- it: in a subquery, whose value the planner does not see, so that it estimates the queue's
-- rows as it would for any queue rather than from the statistics for this name. Planned with the
-- name itself, a queue the statistics have not seen (new since the last ANALYZE, or grown
-- since) is estimated at one row, and a claim then read the queue through its primary key,
-- filtering every completed row of its history on each claim where the due index reaches the
-- due rows directly (14,000 rows filtered per claim, 32 ms against 8, on a queue ten seconds
-- old in the fleet benchmark; docs/benchmarks/fleet/ANALYSIS.md); completes, stats(), the
-- health check and the reaper read the history the same way. The subquery runs once per
-- statement.

(SELECT :queue::text)

-- fragment: these_keys
-- The :keys a statement writes, as the key-locking writers and a completing claim read them: in a
-- subquery, as this_queue reads the queue's name, so that a plan made for one batch looks no
-- better to the server than the generic plan it then keeps (see claim.sql's note on plans).

(SELECT :keys::text[])

-- fragment: due
-- What a claim hands out, and what stats().ready counts: the same text in both. Never-leased
-- and released rows have lease_until = 'epoch' (rows a complete handed back, {{handed_back}},
-- earlier still), so one comparison covers "no lease" and "lease lapsed".

completed_at IS NULL
    AND lease_until <= now()
    AND available_at <= now()
    AND (:attempt_limit::int = 0 OR attempts < :attempt_limit::int)

-- fragment: delayed
-- Pending, not leased, within its attempts, and not yet available: exactly the items that
-- become due by the passing of time alone. With due, leased and stalled it covers every
-- pending item.

completed_at IS NULL
    AND lease_until <= now()
    AND available_at > now()
    AND (:attempt_limit::int = 0 OR attempts < :attempt_limit::int)

-- fragment: leased
-- Pending with a live lease: what stats().leased counts. An item on its last attempt is both
-- leased and stalled, as the stats count it.

completed_at IS NULL AND lease_until > now()

-- fragment: stalled
-- Pending and out of attempts; never true when attempts are unlimited.

completed_at IS NULL AND :attempt_limit::int > 0 AND attempts >= :attempt_limit::int

-- fragment: completed
-- Completed and not yet reaped: what stats().completed counts.

completed_at IS NOT NULL

-- fragment: ready_since
-- When a due row became claimable: when it was available and any lease on it had lapsed,
-- whichever was later. What stats().oldestReadyAge and the health check measure.

GREATEST(available_at, lease_until)

-- fragment: claim_order
-- The order claims hand items out in: a total order, since keys are unique per queue.

priority DESC, available_at, item_key

-- fragment: handed_back
-- The lease of a row a complete handed back to run once more, until a claim leases it: no
-- lease, like 'epoch' (due, not a reclaim, not leased), but distinct, so that no complete
-- completes it before it has run again. That is what makes a complete retried after an
-- ambiguous failure (the connection dropped after the first attempt committed) harmless: the
-- retry finds the row handed back and leaves it.

'-infinity'

-- fragment: queue_paused
-- Whether an operator paused the queue, fleet-wide (WorkQueueAdmin.pause): claims lease nothing
-- while it is, on every instance, from their next claim. Uncorrelated, so a claim evaluates it
-- once, one primary-key lookup in the small queues table, before it reads any item.

EXISTS (SELECT 1 FROM {{queues_table}} WHERE queue_name = :queue::text AND paused_at IS NOT NULL)

-- fragment: paused_us
-- When the queue was paused, in microseconds since the epoch; null while it runs.

(SELECT (EXTRACT(EPOCH FROM paused_at) * 1000000)::bigint FROM {{queues_table}} WHERE queue_name = :queue::text)
