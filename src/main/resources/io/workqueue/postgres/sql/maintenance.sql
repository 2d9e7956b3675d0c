-- Maintenance and health: the reaper, the stats read, the health check, the fleet's housekeeper,
-- the MVCC horizon, and the notifier's tick.

-- param retention bigint: microseconds a completed item is kept
-- param batch int: the most rows to delete
-- param threshold bigint: microseconds
-- param keeper text: this instance's name
-- param keeper_lease bigint: microseconds the role is held for from now
-- param pending bigint
-- param ready bigint
-- param leased bigint
-- param stalled bigint
-- param completed bigint
-- param completed_capped boolean
-- param oldest_ready bigint: microseconds
-- param horizon bigint: microseconds
-- param horizon_pid int
-- param slot_xmin_age bigint
-- param longest_lease bigint: microseconds
-- param xids text[]: transactions the queue awaits
-- param notify boolean: whether a write of the queue's own committed since its last notification

-- statement: reapCompleted
-- params: queue, retention, batch
-- Deletes completed items past retention, a bounded batch.
-- Bounded, and SKIP LOCKED: the reaper never waits on, or deadlocks with, a writer.
WITH expired AS MATERIALIZED (
    SELECT queue_name, item_key
    FROM {{table}}
    WHERE queue_name = {{this_queue}}
        AND completed_at IS NOT NULL
        AND completed_at < now() - :retention::bigint * INTERVAL '1 microsecond'
    ORDER BY completed_at
    LIMIT :batch::int
    FOR UPDATE SKIP LOCKED
)
DELETE FROM {{table}} AS q
USING expired
WHERE q.queue_name = expired.queue_name AND q.item_key = expired.item_key
    -- As in the claim: primary-key lookups even under a generic plan.
    AND q.queue_name = {{this_queue}} AND q.item_key = ANY(ARRAY(SELECT item_key FROM expired))

-- statement: statsCompleted
-- params: queue
-- The first of the stats read's two statements, in one transaction (StatsRead). One row:
-- "completed", the queue's completed items counted up to {{completed_count_cap}}, newest first
-- through the reap index, where reaped and not yet vacuumed entries are rarest.
-- It also sets, for the rest of its transaction only (set_config's third argument), how the
-- second statement, stats, is planned; its own plan was made before it ran, so this count
-- still reads the reap index in order. The pending rows lie on the heap in no order the due
-- index knows, and the planner, judging the heap's order by the queue's name (one value in a
-- table of one queue), read them in index order, a buffer per row: 100,000 rows on 3,095
-- pages cost 101,938 buffers (docs/benchmarks/stats-history). With plain index scans and
-- sequential scans off it reads them through a bitmap of the partial due index, each page
-- once; in one backend, since parallel workers cost more to start than they save here; and
-- without JIT, whose compiling cost more than it saved (132-199 ms with it, 49-68 without, at
-- 100,000 pending over 20,000,000 completed).
SELECT
    (SELECT count(*) FROM (
        SELECT 1 FROM {{table}}
        WHERE queue_name = {{this_queue}} AND {{completed}}
        ORDER BY completed_at DESC
        LIMIT {{completed_count_cap}}) AS newest) AS completed,
    ARRAY[set_config('jit', 'off', true),
        set_config('enable_indexscan', 'off', true),
        set_config('enable_seqscan', 'off', true),
        set_config('max_parallel_workers_per_gather', '0', true)] AS settings

-- statement: stats
-- params: queue, attempt_limit
-- The second of the stats read's statements, after statsCompleted in its transaction: the
-- counts of the pending items. Sized by the backlog, never by the history: it reads the rows
-- the partial due index holds (its predicate is the WHERE below), each heap page once.
SELECT
    count(*) AS pending,
    count(*) FILTER (WHERE {{due}}) AS ready,
    count(*) FILTER (WHERE {{leased}}) AS leased,
    count(*) FILTER (WHERE {{stalled}}) AS stalled,
    -- How long the longest-waiting ready item has been claimable, on the database
    -- clock, in microseconds (0 when nothing is ready).
    COALESCE(
        (EXTRACT(EPOCH FROM now() - min({{ready_since}}) FILTER (WHERE {{due}})) * 1000000)::bigint,
        0) AS oldest_ready_us,
    -- How long the longest-running live lease has run since its claim, on the database
    -- clock, in microseconds (0 when nothing is leased, or no lease names its claim).
    COALESCE(
        (EXTRACT(EPOCH FROM now() - min(claimed_at) FILTER (WHERE {{leased}})) * 1000000)::bigint,
        0) AS longest_lease_us,
    {{paused_us}} AS paused_us
FROM {{table}}
WHERE queue_name = {{this_queue}} AND completed_at IS NULL

-- statement: readyLongerThan
-- params: queue, attempt_limit, threshold
-- One row, "late": whether an item has been ready longer than :threshold.
-- The health check: one answer, not five counts. One index descent per priority
-- band that has pending items (a loose scan of the partial due index), then, in
-- each band, only the entries available before the threshold, in order, stopping
-- at the first that has been ready longer than it. What it reads past is items
-- that are leased or out of attempts: in flight, not history.
-- The loose scan finds each band at its tail, lowest band first (the index holds
-- priorities descending, so this reads it backwards): a band's head is where
-- claims take and completions leave dead entries until VACUUM cleans the index,
-- which it skips while they sit on under 2 % of the table's pages, as they do
-- beside a long history; its tail is where enqueues add live ones.
WITH RECURSIVE bands AS (
    (SELECT priority FROM {{table}}
     WHERE queue_name = {{this_queue}} AND completed_at IS NULL
     ORDER BY priority LIMIT 1)
    UNION ALL
    SELECT (SELECT q.priority FROM {{table}} AS q
            WHERE q.queue_name = {{this_queue}} AND q.completed_at IS NULL AND q.priority > bands.priority
            ORDER BY q.priority LIMIT 1)
    FROM bands
    WHERE bands.priority IS NOT NULL
)
SELECT EXISTS (
    SELECT 1
    FROM bands
    CROSS JOIN LATERAL (
        SELECT 1 FROM {{table}}
        WHERE queue_name = {{this_queue}} AND priority = bands.priority
            AND available_at <= now() - :threshold::bigint * INTERVAL '1 microsecond'
            AND {{due}}
            AND {{ready_since}} <= now() - :threshold::bigint * INTERVAL '1 microsecond'
        LIMIT 1) AS late
) AS late

-- statement: keepHouse
-- params: queue, keeper, keeper_lease
-- Takes or renews the role of the queue's housekeeper for a lease, if it is free, lapsed or
-- already this instance's. One row: "kept" (whether this instance now holds it), "keeper",
-- "keeper_left_us" (how long the holder's lease runs on), and the holder's last reading
-- ("read_ago_us", the stats' columns, "horizon_us", "horizon_pid", "slot_xmin_age",
-- "longest_lease_us"; null before the first).
-- The housekeeper is chosen on the database, by its clock and one row's lock, so
-- it holds through a transaction-mode pooler (no session state) and a holder that
-- stops renewing loses the role when its lease ends, whatever became of it.
-- A member that finds another's lease live in its snapshot only reads: a lease never
-- ends early, so nothing it could write would change hands, and a fleet's followers
-- then add no write, lock, WAL flush or row version per round, and never queue behind
-- a session holding the row. Any other member writes the row, the role changing
-- hands only when it is free, lapsed or its own: RETURNING then reads the row as it
-- now is, where the snapshot may have missed a row another member inserted a moment
-- before (the insert then meets it and decides by the same rule).
WITH snapshot AS MATERIALIZED (
    SELECT * FROM {{queues_table}} WHERE queue_name = :queue::text
),
written AS (
    INSERT INTO {{queues_table}} AS k (queue_name, keeper, keeper_until)
    SELECT :queue::text, :keeper::text, now() + :keeper_lease::bigint * INTERVAL '1 microsecond'
    WHERE NOT EXISTS (SELECT 1 FROM snapshot AS s WHERE s.keeper <> :keeper::text AND s.keeper_until > now())
    ON CONFLICT (queue_name) DO UPDATE
        SET keeper = CASE WHEN k.keeper = EXCLUDED.keeper OR k.keeper_until <= now()
                THEN EXCLUDED.keeper ELSE k.keeper END,
            keeper_until = CASE WHEN k.keeper = EXCLUDED.keeper OR k.keeper_until <= now()
                THEN EXCLUDED.keeper_until ELSE k.keeper_until END
    RETURNING k.*
)
SELECT
    k.keeper = :keeper::text AS kept,
    k.keeper,
    (EXTRACT(EPOCH FROM k.keeper_until - now()) * 1000000)::bigint AS keeper_left_us,
    (EXTRACT(EPOCH FROM now() - k.read_at) * 1000000)::bigint AS read_ago_us,
    k.pending, k.ready, k.leased, k.stalled, k.completed, k.completed_capped, k.oldest_ready_us,
    k.horizon_us, k.horizon_pid, k.slot_xmin_age,
    k.longest_lease_us,
    -- Whether the queue is paused now, not at the reading: every instance's gauges follow
    -- a pause within one round.
    (EXTRACT(EPOCH FROM k.paused_at) * 1000000)::bigint AS paused_us
FROM (
    SELECT * FROM written
    UNION ALL
    SELECT * FROM snapshot WHERE NOT EXISTS (SELECT 1 FROM written)
) AS k

-- statement: publishReading
-- params: queue, keeper, pending, ready, leased, stalled, completed, completed_capped, oldest_ready, horizon, horizon_pid, slot_xmin_age, longest_lease
-- Records the keeper's reading, if it still holds the role.
-- Only while this instance holds the role: a keeper that lost it while reading
-- leaves its successor's reading alone.
UPDATE {{queues_table}}
SET read_at = now(), pending = :pending::bigint, ready = :ready::bigint, leased = :leased::bigint,
    stalled = :stalled::bigint, completed = :completed::bigint, completed_capped = :completed_capped::boolean,
    oldest_ready_us = :oldest_ready::bigint, horizon_us = :horizon::bigint, horizon_pid = :horizon_pid::int,
    slot_xmin_age = :slot_xmin_age::bigint, longest_lease_us = :longest_lease::bigint
WHERE queue_name = :queue::text AND keeper = :keeper::text

-- statement: horizon
-- params:
-- One row: the age in microseconds and the pid of the oldest transaction that holds back this
-- database's xmin horizon, and the oldest replication slot xmin age. Names no table: the horizon
-- belongs to the database, not to a queue.
-- What VACUUM must keep for: open transactions with a snapshot (backend_xmin) or an xid,
-- in this database (walsenders carrying standby feedback have none), and prepared
-- transactions. This statement's own session is left out, and so is a running plain
-- VACUUM: it shows a snapshot, but the server leaves vacuums out of the horizon, and an
-- autovacuum of a bloated table runs for minutes.
SELECT
    COALESCE(GREATEST((EXTRACT(EPOCH FROM now() - oldest.started) * 1000000)::bigint, 0), 0) AS oldest_us,
    COALESCE(oldest.pid, 0) AS holder_pid,
    COALESCE((SELECT max(GREATEST(age(xmin), age(catalog_xmin)))::bigint
              FROM pg_replication_slots
              WHERE xmin IS NOT NULL OR catalog_xmin IS NOT NULL), 0) AS slot_xmin_age
FROM (SELECT 1) AS one
LEFT JOIN LATERAL (
    SELECT started, pid
    FROM (
        SELECT xact_start AS started, pid
        FROM pg_stat_activity
        WHERE pid <> pg_backend_pid()
            AND pid NOT IN (SELECT pid FROM pg_stat_progress_vacuum)
            AND xact_start IS NOT NULL
            AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL)
            AND (datname = current_database() OR datname IS NULL)
        UNION ALL
        SELECT prepared, 0
        FROM pg_prepared_xacts
        WHERE database = current_database()
    ) AS holders
    ORDER BY started
    LIMIT 1
) AS oldest ON true

-- statement: notifierTick
-- params: channel, xids, notify
-- One tick of the notifier (io.workqueue.internal.Notifier): a row per awaited transaction
-- (:xids) with its "xid" and "status" as pg_xact_status gives it ("in progress",
-- "committed", "aborted", or null once the server has forgotten it), or one row of nulls when
-- none is awaited; and in each row, whether it "notified". Names no table.
-- How each transaction that enqueued on a caller's connection has ended, read first; then
-- a notification if one of the queue's own writes committed (:notify) or any of those
-- transactions did: what it found committed is visible to whoever the notification
-- wakes, which goes out at this statement's commit. A tick that finds nothing queues
-- no notification, so its commit takes no notify lock and writes no commit record.
-- One that notifies holds that lock only for its own commit, which writes no rows;
-- synchronous_commit off for this transaction alone keeps the lock out of a WAL flush.
-- A crash can lose the notification, which a crash would lose anyway; the poll is the
-- backstop.
WITH awaited AS MATERIALIZED (
    SELECT a.xid, pg_xact_status(a.xid::xid8) AS status
    FROM unnest(:xids::text[]) AS a(xid)
),
sent AS MATERIALIZED (
    SELECT set_config('synchronous_commit', 'off', true), pg_notify(:channel::text, '')
    -- A transaction the server has forgotten (null) counts as committed: a wakeup too
    -- many costs a claim.
    WHERE :notify::boolean OR EXISTS (SELECT 1 FROM awaited
        WHERE awaited.status IS DISTINCT FROM 'in progress' AND awaited.status IS DISTINCT FROM 'aborted')
)
SELECT awaited.xid, awaited.status, EXISTS (SELECT 1 FROM sent) AS notified
FROM (SELECT 1) AS tick
LEFT JOIN awaited ON true

-- statement: lookSettings
-- params:
-- Run in a look's transaction, before lookBehindCursors. A look that waits for a table
-- lock (a migration's, say) fails fast and is tried again soon, rather than counting the wait as
-- its cost, which would space the next looks out. And a look runs to its end whatever statement
-- timeout the role sets: it is paced by its own cost already, and cut short it would find
-- nothing, time after time, for as long as a held horizon makes it long.
SET LOCAL lock_timeout = '100ms'; SET LOCAL statement_timeout = 0

-- param table text: a queue table's name, as a value (to_regclass resolves it)
-- param lock text: the name of an advisory lock

-- statement: schemaVersion
-- params: table
-- One row: whether the table (:table, as to_regclass resolves it on the search path) exists,
-- and its comment, where WorkQueueMigrations records the schema version ("reactive-workqueue
-- schema <n>"; the first release wrote none). Run by WorkQueueMigrations.version and, under
-- schemaLock, by WorkQueueMigrations.apply.
SELECT to_regclass(:table::text) IS NOT NULL AS present,
    obj_description(to_regclass(:table::text), 'pg_class') AS comment

-- statement: schemaLock
-- params: lock
-- Run first in WorkQueueMigrations.apply's transaction: serialises applies of one table's
-- schema until that transaction ends, so services starting together may all apply it.
-- Concurrent CREATE ... IF NOT EXISTS of one name otherwise races in the catalog and fails
-- with a unique violation (23505).
SELECT pg_advisory_xact_lock(hashtext(:lock::text))
