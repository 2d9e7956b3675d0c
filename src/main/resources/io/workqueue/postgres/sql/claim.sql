-- Claiming: a claim alone or after completing, from the head of the due index or from the
-- instance's claim cursors (see ClaimCursors), and the look behind the cursors.

-- param limit int: the most items to lease
-- param lease bigint: its length in microseconds
-- param bands int[]: the bands to read, highest first
-- param band_starts bigint[]: where each band's read starts, microseconds since the epoch
-- param band_keys text[]: where each band's read starts within that microsecond, a key (the band's rows from it on, in key order)
-- param timed boolean: whether to return each item's wait and holding time (only timing meters read them; when false they are not computed)

-- fragment: claim
-- The claim, as the CTEs "due" and "leased" and the select that returns the leased items as one
-- row of parallel arrays, aligned but not sorted (keys, priorities, attempts, the kind of lease
-- each row had before: {{prior_lease_none}} none, {{prior_lease_lapsed}} lapsed,
-- {{prior_lease_handed_back}} handed back; all null when nothing was leased) plus how many items
-- the completing CTEs completed and re-armed (completed_count, rearmed_count) and how long the
-- completed ones had been held (completed_held). "due" is
-- due_from_head or due_from_cursors. The LIMIT sits above the lock: SKIP LOCKED passes over rows
-- other claimers hold and the scan carries on, so a claim gets a full batch while work remains.
-- One row rather than a row per item: the driver's per-row path (a data row message through its
-- reactive pipeline, a codec lookup per column) cost more client CPU than the claim's SQL saved;
-- each array decodes in one step. The aggregates of one select see its rows in one sequence, so
-- the arrays line up; the client sorts them into claim order.

-- Every claim reads its limit, its bands and the keys it completes in subqueries, as it reads
-- the queue's name (this_queue): values the planner does not see when it plans, so a plan made
-- for one claim's values is no better than one made for none. The server then settles on one
-- generic plan per connection after the plan cache's first five runs, instead of planning every
-- claim afresh: measured on the fleet benchmark's table, 0.42-0.55 ms of planning on every run
-- before, 0.02 ms after, and execution no slower (100 items: 1.1-1.6 ms with per-run plans,
-- 0.7-0.8 ms generic; docs/benchmarks/fleet/ANALYSIS.md). SqlExplainIT and ClaimPlanIT hold the
-- generic plans to the index paths the claim needs.

{{due_read}}
-- One index scan of the primary key for the whole batch (the array is sorted and
-- walked once), whatever a generic plan estimates: joining "due" row by row would
-- also re-check each row against the array, quadratic in the batch.
leased AS (
    UPDATE {{table}} AS q
    SET lease_until = now() + :lease::bigint * INTERVAL '1 microsecond',
        attempts = q.attempts + 1,
        -- With attempts, names this claim for extend and snooze: now_us below.
        claimed_at = now()
    WHERE q.queue_name = {{this_queue}} AND q.item_key = ANY(ARRAY(SELECT item_key FROM due))
    RETURNING q.item_key, q.priority, q.attempts, q.available_at, q.trace_contexts
)
-- In no particular order, but every array in the same one (one aggregation sees the
-- rows in one sequence): the client puts them in claim order, cheaper there than
-- a sort per array here.
SELECT
    array_agg(l.item_key) AS keys,
    array_agg(l.priority) AS priorities,
    array_agg(l.attempts) AS attempts,
    -- What the row's lease was before: a lease after the epoch was a real one that
    -- lapsed (this is a reclaim); a claim handed back undone restores it.
    array_agg(CASE WHEN d.leases[l.n] > 'epoch' THEN {{prior_lease_lapsed}} WHEN d.leases[l.n] = {{handed_back}} THEN {{prior_lease_handed_back}}
        ELSE {{prior_lease_none}} END) AS prior_leases,
    -- How long each item waited between becoming claimable (available, or its lease
    -- lapsed, {{ready_since}}) and this claim, in microseconds: the lag. Null unless :timed
    -- (a filter is checked before the aggregate's argument is computed).
    array_agg((EXTRACT(EPOCH FROM now() - GREATEST(l.available_at, d.leases[l.n])) * 1000000)::bigint)
        FILTER (WHERE :timed::boolean) AS waited_us,
    -- The trace contexts of the enqueues each item answers, space-separated; null where
    -- none were stored (WorkQueueConfig.storeTraceContexts).
    array_agg(array_to_string(l.trace_contexts, ' ')) AS trace_contexts,
    -- For each item the completion completed, the time since its claim, in microseconds.
    {{completed_held}} AS completed_held_us,
    {{completed_count}} AS completed,
    -- Where the claim ended, for the cursors: each item's availability, and now().
    array_agg((EXTRACT(EPOCH FROM l.available_at) * 1000000)::bigint) AS available_us,
    (EXTRACT(EPOCH FROM now()) * 1000000)::bigint AS now_us,
    {{rearmed_count}} AS rearmed,
    -- A paused queue's claim read nothing, so the cursors must not take it as having
    -- read its bands to their end.
    {{queue_paused}} AS paused
-- Each leased row's lease before this claim is due's, found by position rather than by a
-- join: both sets hold the same keys (due's rows are locked, so the update takes every one),
-- so the n-th in key order of one is the n-th of the other. A join of the two CTEs is planned
-- from estimates, and on a table the planner has statistics for (many queues' completed
-- rows) it became a nested loop comparing every leased row with every due row: 2,000 items
-- took 479 ms instead of 24 (docs/benchmarks/fleet/ANALYSIS.md). An array subscript of a
-- fixed-width element is one step, so this is linear whatever the plan.
FROM (SELECT leased.*, row_number() OVER (ORDER BY leased.item_key) AS n FROM leased) AS l
CROSS JOIN (SELECT array_agg(due.lease_until ORDER BY due.item_key) AS leases FROM due) AS d

-- fragment: claim_limit
-- The most items a claim leases, read in a subquery for the reason claim's note on plans gives.

(SELECT :limit::int)

-- fragment: due_from_head
-- "due" read from the head of the due index, in exact claim order.

due AS MATERIALIZED (
    SELECT queue_name, item_key, lease_until
    FROM {{table}}
    WHERE queue_name = {{this_queue}} AND {{due}} {{skip_completing}}
        AND NOT {{queue_paused}}
    ORDER BY {{claim_order}}
    LIMIT {{claim_limit}}
    FOR UPDATE SKIP LOCKED
),

-- fragment: due_from_cursors
-- "due" read band by band, each from its cursor.

-- Each band from its cursor (:bands priorities, highest first; :band_starts and :band_keys
-- where each band's read starts: a microsecond since the epoch and a key): an index seek
-- to the cursor, so the claim does not walk the history at the head of a band, nor the
-- rows of the cursor's microsecond it already leased (see ClaimCursors). The row
-- comparison is one index condition on the due index's last two columns. The nested
-- loop keeps the bands' order and the outer LIMIT stops it, so no band locks more rows
-- than the claim hands out.
due AS MATERIALIZED (
    SELECT d.queue_name, d.item_key, d.lease_until
    FROM unnest((SELECT :bands::int[]), (SELECT :band_starts::bigint[]), (SELECT :band_keys::text[]))
        AS band(priority, from_us, from_key)
    CROSS JOIN LATERAL (
        SELECT queue_name, item_key, lease_until
        FROM {{table}}
        WHERE queue_name = {{this_queue}} AND priority = band.priority
            AND (available_at, item_key) >= ('epoch'::timestamptz + band.from_us * INTERVAL '1 microsecond', band.from_key COLLATE "C")
            AND {{due}} {{skip_completing}}
            AND NOT {{queue_paused}}
        ORDER BY available_at, item_key
        LIMIT {{claim_limit}}
        FOR UPDATE SKIP LOCKED
    ) AS d
    LIMIT {{claim_limit}}
),

-- fragment: claim_alone
-- A claim that completes nothing: no extra condition, and nothing to count.


-- fragment: zero
-- The count of a claim that completes nothing.

0::bigint

-- fragment: none_held
-- The holding times of a claim that completes nothing.

NULL::bigint[]

-- fragment: done_held
-- How long each item the completion completed had been held since its latest claim, in
-- microseconds; items never claimed (enqueued and completed unclaimed) are left out. Null
-- unless :timed.

(SELECT array_agg((EXTRACT(EPOCH FROM now() - done.claimed_at) * 1000000)::bigint) FROM done
    WHERE :timed::boolean AND done.claimed_at IS NOT NULL)

-- fragment: skip_completed_keys
-- After completing (:keys the keys, "done" the completing CTE): skip the keys being completed,
-- since one statement sees one snapshot, in which they still look due; and gate the scan on
-- "done", so it cannot start before the completion has run.

AND item_key NOT IN (SELECT unnest({{these_keys}})) AND (SELECT count(*) FROM done) >= 0

-- fragment: done_count
-- How many items the completion completed.

(SELECT count(*) FROM done)

-- fragment: rearmed_count
-- How many items the completion handed back to run once more.

(SELECT count(*) FROM rearmed)

-- fragment: complete_then_claim
-- Completing, then claiming, in one statement and one transaction.

-- Completion first, in key order (the lock-ordering CTE waits); the claim's scan
-- cannot start before "done" has run (its InitPlan gates the scan), so while this
-- statement waits for a lock it holds no claimed row: no lock cycle. The claim
-- skips the keys being completed: one statement sees one snapshot, in which they
-- still look due.
WITH {{completing}},
{{claim}}

-- statement: claimDue
-- params: queue, attempt_limit, limit, lease, timed
-- use: due_read = due_from_head
-- use: skip_completing = claim_alone
-- use: completed_count = zero
-- use: completed_held = none_held
-- use: rearmed_count = zero
-- A claim from the head of the due index, in exact claim order, for an instance that has no
-- cursors to read from yet or too many bands for them.
WITH {{claim}}

-- statement: claimFromCursors
-- params: queue, attempt_limit, limit, lease, bands, band_starts, band_keys, timed
-- use: due_read = due_from_cursors
-- use: skip_completing = claim_alone
-- use: completed_count = zero
-- use: completed_held = none_held
-- use: rearmed_count = zero
-- As claimDue, reading each band from its cursor.
WITH {{claim}}

-- statement: completeAndClaim
-- params: queue, attempt_limit, limit, lease, keys, timed
-- use: which_rows = pending_rows
-- use: done = mark_completed
-- use: due_read = due_from_head
-- use: skip_completing = skip_completed_keys
-- use: completed_count = done_count
-- use: completed_held = done_held
-- use: rearmed_count = rearmed_count
-- Completes :keys as completeKeys does, then claims as claimDue does.
{{complete_then_claim}}

-- statement: completeAndClaimFromCursors
-- params: queue, attempt_limit, limit, lease, keys, bands, band_starts, band_keys, timed
-- use: which_rows = pending_rows
-- use: done = mark_completed
-- use: due_read = due_from_cursors
-- use: skip_completing = skip_completed_keys
-- use: completed_count = done_count
-- use: completed_held = done_held
-- use: rearmed_count = rearmed_count
-- As completeAndClaim, reading bands from cursors as claimFromCursors does.
{{complete_then_claim}}

-- statement: completeAndClaimDeleting
-- params: queue, attempt_limit, limit, lease, keys, timed
-- use: which_rows = pending_rows
-- use: done = delete_completed
-- use: due_read = due_from_head
-- use: skip_completing = skip_completed_keys
-- use: completed_count = done_count
-- use: completed_held = done_held
-- use: rearmed_count = rearmed_count
-- completeAndClaim for a queue that deletes on complete.
{{complete_then_claim}}

-- statement: completeAndClaimFromCursorsDeleting
-- params: queue, attempt_limit, limit, lease, keys, bands, band_starts, band_keys, timed
-- use: which_rows = pending_rows
-- use: done = delete_completed
-- use: due_read = due_from_cursors
-- use: skip_completing = skip_completed_keys
-- use: completed_count = done_count
-- use: completed_held = done_held
-- use: rearmed_count = rearmed_count
-- completeAndClaimFromCursors for a queue that deletes on complete.
{{complete_then_claim}}

-- fragment: first_due
-- The first due row of the queue in claim order, and of the bands {{below}} names: its priority,
-- availability and key. One step of lookBehindCursors.

SELECT priority, available_at, item_key
FROM {{table}}
WHERE queue_name = {{this_queue}}{{below}} AND {{due}}
ORDER BY {{claim_order}}
LIMIT 1

-- fragment: all_bands
-- No band condition: the first due row of the whole queue.


-- fragment: bands_below_found
-- The bands below the one found last.

 AND priority < found.priority

-- statement: lookBehindCursors
-- params: queue, attempt_limit
-- The first due item of every band that has one, in claim order, locking nothing: where the
-- claim cursors must be for nothing due to lie behind them (see ClaimCursors and CursorLook).
-- One row: "priorities", "first_due_us" (microseconds since the epoch) and "first_due_keys",
-- all null when nothing is due, and "now_us".
-- Read only, and run only by a look, never by a caller's claim: it walks each band
-- from its head, through whatever history a held horizon keeps there, to the band's
-- first due item. One index descent per band that has something due: each step
-- seeks to the bands below the one found last and stops at the first due item there.
WITH RECURSIVE found AS (
    ({{first_due with below = all_bands}})
    UNION ALL
    SELECT next.priority, next.available_at, next.item_key
    FROM found
    CROSS JOIN LATERAL (
        {{first_due with below = bands_below_found}}
    ) AS next
)
SELECT
    array_agg(priority) AS priorities,
    array_agg((EXTRACT(EPOCH FROM available_at) * 1000000)::bigint) AS first_due_us,
    array_agg(item_key) AS first_due_keys,
    (EXTRACT(EPOCH FROM now()) * 1000000)::bigint AS now_us
FROM found
