-- The library's claim/complete loop as pgbench runs it: the claim statement leases :batch items,
-- then the complete statement completes exactly those keys. Two statements, two transactions per
-- script run (no BEGIN/COMMIT), as ReactiveWorkQueue.claim then complete issue them.
--
-- Both statements are copied from src/main/java/io/workqueue/postgres/Sql.java (claimDue and
-- completeKeys) rendered for the table prefix "bench_drain"; the harness checks on every run that
-- they still match the library's text. Parameters become pgbench variables: $1 queue -> :queue,
-- $2 attempt limit -> :max_attempts, $3 limit -> :batch, $4 lease -> :lease_us, the keys array ->
-- :keys. The one change: the claim's one-row result is wrapped in a SELECT that keeps just the
-- leased keys (an empty array, not NULL, when nothing was leased), which \gset carries to the
-- complete statement.
--
--   pgbench -n -M prepared -c W -j W -T secs -D queue=drain -D batch=B -f claim_then_complete.sql bench
-- The claim is the library's sweep (claimDue), not the cursor claim most of its claims are
-- (claimFromCursors): that one needs the client's cursors, and on a clean backlog, as here, the
-- two read the same index entries.
\set max_attempts 0
\set lease_us 300000000
WITH due AS MATERIALIZED (
    SELECT queue_name, item_key, lease_until
    FROM bench_drain_work_queue_items
    WHERE queue_name = :queue::text AND completed_at IS NULL
    AND lease_until <= now()
    AND available_at <= now()
    AND (:max_attempts::int = 0 OR attempts < :max_attempts::int)
    ORDER BY priority DESC, available_at, item_key
    LIMIT :batch::int
    FOR UPDATE SKIP LOCKED
),
leased AS (
    UPDATE bench_drain_work_queue_items AS q
    SET lease_until = now() + :lease_us::bigint * INTERVAL '1 microsecond',
        attempts = q.attempts + 1
    WHERE q.queue_name = :queue::text AND q.item_key = ANY(ARRAY(SELECT item_key FROM due))
    RETURNING q.item_key, q.priority, q.attempts, q.available_at
)
SELECT coalesce(keys, '{}') AS keys FROM (
SELECT
    array_agg(l.item_key) AS keys,
    array_agg(l.priority) AS priorities,
    array_agg(l.attempts) AS attempts,
    array_agg(CASE WHEN d.lease_until > 'epoch' THEN 1 WHEN d.lease_until = '-infinity' THEN 2
        ELSE 0 END) AS prior_leases,
    0::bigint AS completed,
    array_agg((EXTRACT(EPOCH FROM l.available_at) * 1000000)::bigint) AS available_us,
    (EXTRACT(EPOCH FROM now()) * 1000000)::bigint AS now_us,
    0::bigint AS rearmed
FROM leased AS l
JOIN due AS d ON d.item_key = l.item_key
) AS claimed
\gset
WITH target AS MATERIALIZED (
    SELECT queue_name, item_key, requested_at, lease_until
    FROM bench_drain_work_queue_items
    WHERE queue_name = :queue::text AND item_key = ANY(:keys::text[]) AND completed_at IS NOT DISTINCT FROM NULL::timestamptz
    ORDER BY item_key
    FOR UPDATE
)
,
done AS (
    UPDATE bench_drain_work_queue_items AS q
    SET completed_at = now(), lease_until = 'epoch', last_error = NULL
    FROM target
    WHERE q.queue_name = target.queue_name AND q.item_key = target.item_key
        AND target.requested_at IS NULL AND target.lease_until <> '-infinity'
    RETURNING q.item_key
),
rearmed AS (
    UPDATE bench_drain_work_queue_items AS q
    SET lease_until = '-infinity', available_at = GREATEST(target.requested_at, now()), requested_at = NULL,
        attempts = 0, last_error = NULL
    FROM target
    WHERE q.queue_name = target.queue_name AND q.item_key = target.item_key
        AND target.requested_at IS NOT NULL AND target.lease_until <> '-infinity'
    RETURNING q.item_key
)
SELECT count(*) AS completed,
    CASE WHEN count(*) < cardinality(:keys::text[])
        THEN COALESCE(array_agg(item_key), '{}'::text[]) END AS completed_keys,
    (SELECT count(*) FROM rearmed) AS rearmed
FROM done;
