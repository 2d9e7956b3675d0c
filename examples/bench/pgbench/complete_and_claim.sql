-- The library's completeAndClaim as pgbench runs it: one statement, one transaction per script
-- run, completing the keys this client leased in its previous run and leasing the next :batch, as
-- the process() worker issues it. Start each client with -D keys={} (nothing to complete yet).
--
-- Copied from src/main/java/io/workqueue/postgres/Sql.java (completeAndClaim) rendered for the
-- table prefix "bench_drain"; the harness checks on every run that it still matches the library's
-- text. Parameters become pgbench variables: $1 queue -> :queue, $2 attempt limit ->
-- :max_attempts, $3 limit -> :batch, $4 lease -> :lease_us, $5 keys to complete -> :keys. The one
-- change: the one-row result is wrapped in a SELECT that keeps just the leased keys (an empty array,
-- not NULL, when nothing was leased), which \gset carries to this client's next run.
--
--   pgbench -n -M prepared -c W -j W -T secs -D queue=drain -D batch=B -D keys={} -f complete_and_claim.sql bench
-- The claim is the library's sweep (claimDue), not the cursor claim most of its claims are
-- (claimFromCursors): that one needs the client's cursors, and on a clean backlog, as here, the
-- two read the same index entries.
\set max_attempts 0
\set lease_us 300000000
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
),
due AS MATERIALIZED (
    SELECT queue_name, item_key, lease_until
    FROM bench_drain_work_queue_items
    WHERE queue_name = :queue::text AND completed_at IS NULL
    AND lease_until <= now()
    AND available_at <= now()
    AND (:max_attempts::int = 0 OR attempts < :max_attempts::int) AND item_key NOT IN (SELECT unnest(:keys::text[])) AND (SELECT count(*) FROM done) >= 0
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
    (SELECT count(*) FROM done) AS completed,
    array_agg((EXTRACT(EPOCH FROM l.available_at) * 1000000)::bigint) AS available_us,
    (EXTRACT(EPOCH FROM now()) * 1000000)::bigint AS now_us,
    (SELECT count(*) FROM rearmed) AS rearmed
FROM leased AS l
JOIN due AS d ON d.item_key = l.item_key
) AS claimed
\gset
