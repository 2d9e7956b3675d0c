package io.workqueue.postgres;

import io.workqueue.Stats;
import io.workqueue.internal.base.TableNames;
import io.workqueue.migrations.WorkQueueMigrations;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;

/**
 * Every statement the queue issues, rendered once per queue instance: for its table, and for how it
 * completes (marking rows completed, or deleting them when the queue deletes on complete).
 *
 * <p>The table name is the only thing rendered into SQL, and it comes from a validated prefix; every
 * value is a bind parameter. Batches travel as arrays ({@code unnest}, {@code = ANY}), so each
 * statement's text is constant whatever the batch size and is prepared once per connection.
 * Durations travel as microsecond counts multiplied by {@code INTERVAL '1 microsecond'}: the
 * database's {@code now()} is the only clock, and no timestamp crosses the wire.
 *
 * <p>Parameter conventions shared by the claim and the stats read: {@code $1} is the queue name,
 * {@code $2} the attempt limit (0 = unlimited), so {@link #DUE} can be rendered once into both.
 */
final class Sql {
    /**
     * What a claim hands out, and what {@code stats().ready} counts: the same text in both.
     * Never-leased and released rows have {@code lease_until = 'epoch'} (rows a complete handed
     * back, {@link #HANDED_BACK}, earlier still), so one comparison covers "no lease" and "lease
     * lapsed".
     */
    static final String DUE = """
            completed_at IS NULL
                AND lease_until <= now()
                AND available_at <= now()
                AND ($2::int = 0 OR attempts < $2::int)""";

    /**
     * The lease of a row a complete handed back to run once more, until a claim leases it: no
     * lease, like {@code 'epoch'} (due, not a reclaim, not leased), but distinct, so that no
     * complete completes it before it has run again. That is what makes a complete retried after
     * an ambiguous failure (the connection dropped after the first attempt committed) harmless:
     * the retry finds the row handed back and leaves it.
     */
    static final String HANDED_BACK = "'-infinity'";

    /** What completing does to a row: kept until reaped, lease dropped, last error cleared. */
    static final String COMPLETE = "SET completed_at = now(), lease_until = 'epoch', last_error = NULL";

    /**
     * What completing does instead to a row enqueued again while it was leased (its
     * {@code requested_at} set): the work runs once more, so the row stays pending, unleased, with
     * fresh attempts, due at the earliest availability those enqueues asked for (or now, if that
     * has passed: the row then sorts ahead of the claim cursors, not behind them). Its lease
     * becomes {@link #HANDED_BACK}. Rendered with the table as {@code %1$s}; touches only rows
     * "target" locked.
     */
    static final String REARM = """
            UPDATE %1$s AS q
            SET lease_until = %2$s, available_at = GREATEST(target.requested_at, now()), requested_at = NULL,
                attempts = 0, last_error = NULL
            FROM target
            WHERE q.queue_name = target.queue_name AND q.item_key = target.item_key
                AND target.requested_at IS NOT NULL AND target.lease_until <> %2$s
            RETURNING q.item_key
            """;

    /**
     * What completing does to the rows {@code target} locked when the queue deletes on complete:
     * nothing is kept, so nothing is left to reap. Also the whole of what {@code remove} does.
     * Rendered with the table as {@code %1$s}.
     */
    static final String DELETE_TARGET = """
            DELETE FROM %1$s AS q
            USING target
            WHERE q.queue_name = target.queue_name AND q.item_key = target.item_key
            """;

    /** A claimed row had no lease before: never leased, released, or completed and enqueued again. */
    static final int PRIOR_LEASE_NONE = 0;
    /** A claimed row's lease had lapsed: the claim is a reclaim. */
    static final int PRIOR_LEASE_LAPSED = 1;
    /** A claimed row was {@linkplain #HANDED_BACK handed back} by a complete to run once more. */
    static final int PRIOR_LEASE_HANDED_BACK = 2;

    /** The order claims hand items out in: a total order, since keys are unique per queue. */
    static final String CLAIM_ORDER = "priority DESC, available_at, item_key";

    /** Pending and out of attempts; never true when attempts are unlimited. */
    static final String STALLED = """
            completed_at IS NULL AND $2::int > 0 AND attempts >= $2::int""";

    /**
     * Pending with a live lease: what {@code stats().leased} counts. An item on its last attempt is
     * both leased and {@link #STALLED}, as the stats count it.
     */
    static final String LEASED = "completed_at IS NULL AND lease_until > now()";

    /**
     * Pending, not leased, within its attempts, and not yet available: exactly the items that
     * become {@link #DUE} by the passing of time alone. With {@link #DUE}, {@link #LEASED} and
     * {@link #STALLED} it covers every pending item.
     */
    static final String DELAYED = """
            completed_at IS NULL
                AND lease_until <= now()
                AND available_at > now()
                AND ($2::int = 0 OR attempts < $2::int)""";

    /** Completed and not yet reaped: what {@code stats().completed} counts. */
    static final String COMPLETED = "completed_at IS NOT NULL";

    /**
     * When a {@link #DUE} row became claimable: when it was available and any lease on it had
     * lapsed, whichever was later. What {@code stats().oldestReadyAge} and the health check measure.
     */
    static final String READY_SINCE = "GREATEST(available_at, lease_until)";

    final String table;
    /**
     * Every statement of this rendering as written (comments included, parameters named in its
     * header), by name: what {@link #reference()} prints. The fields hold the same text as sent.
     */
    private final Map<String, String> readable = new LinkedHashMap<>();
    /**
     * The merged upsert of enqueued entries: what the group commit writes, and what a transactional
     * enqueue runs when the queue sends no notifications. It never notifies: the group commit
     * announces its writes after they commit (see {@link #NOTIFIER_TICK}).
     */
    final String enqueue;
    /**
     * {@link #enqueue} in the caller's transaction on a queue that notifies: the same upsert, which
     * also returns the transaction's id ({@code xid}, as text) so that this instance can notify
     * once that transaction has committed (see {@link #NOTIFIER_TICK}). It queues no
     * notification in the caller's transaction.
     */
    final String enqueueInTransaction;
    /**
     * {@link #enqueue} with the notification in the same statement ({@code $5} names the channel),
     * for a transactional enqueue whose caller asks for it: delivered when, and only if, the
     * caller's transaction commits, at the price of the notify lock in that commit.
     */
    final String enqueueNotifying;
    /**
     * A claim from the head of the due index, in exact claim order, for an instance that has no
     * cursors to read from yet or too many bands for them. One row of parallel arrays; see
     * {@link #claim}.
     */
    final String claimDue;
    /**
     * As {@link #claimDue}, reading each band from its cursor. Both claims also return each item's
     * {@code available_at} and the statement's {@code now()}, in microseconds, and "rearmed"
     * (always 0 for a claim alone).
     */
    final String claimFromCursors;
    /**
     * Marks the items completed or, when the queue deletes on complete, deletes them. One row:
     * "completed", the count, and "completed_keys", null when every key named was completed, else
     * the keys that were (empty when none was); and "rearmed", how many it handed back instead
     * because they were enqueued during their lease (see {@link #REARM}).
     */
    final String completeKeys;
    /** Completes as {@link #completeKeys} does, then claims as {@link #claimDue} does. */
    final String completeAndClaim;
    /** As {@link #completeAndClaim}, reading bands from cursors as {@link #claimFromCursors} does. */
    final String completeAndClaimFromCursors;
    /**
     * The first due item of every band that has one, in claim order, locking nothing: where the
     * claim cursors must be for nothing due to lie behind them (see {@link ClaimCursors} and
     * {@link CursorLook}). One row: "priorities" and "first_due_us" (microseconds since the epoch),
     * both null when nothing is due, and "now_us".
     */
    final String lookBehindCursors;
    /** Drops the leases, sets the availability and records the last error. */
    final String releaseKeys;
    /** Undoes a claim of the keys (see {@link PostgresWorkQueue}'s hand-back). */
    final String handBackKeys;
    /** Deletes the items, whatever their state. */
    final String removeKeys;
    /** Deletes completed items past retention, a bounded batch. */
    final String reapCompleted;
    /** The one-round-trip stats read. */
    final String stats;
    /** $1 queue, $2 attempt limit, $3 threshold: one row, "late", whether an item has been ready longer. */
    final String readyLongerThan;
    /** The per-queue table: who keeps each queue's house, and its last reading. */
    final String queuesTable;
    /**
     * Takes or renews the role of the queue's housekeeper for a lease, if it is free, lapsed or
     * already this instance's. One row: "kept" (whether this instance now holds it), "keeper",
     * "keeper_left_us" (how long the holder's lease runs on), and the holder's last reading
     * ("read_ago_us", the stats' columns, "horizon_us", "horizon_pid", "slot_xmin_age"; null before
     * the first).
     */
    final String keepHouse;
    /** Records the keeper's reading, if it still holds the role; returns the row it updated. */
    final String publishReading;

    // Parameters, named once: each statement's header lists the ones it takes.
    private static final String P_QUEUE = "$1 queue text: the logical queue's name";
    private static final String P_ATTEMPT_LIMIT = "$2 attempt limit int: 0 means unlimited";
    private static final String P_CLAIM = P_QUEUE + "\n" + P_ATTEMPT_LIMIT
            + "\n$3 limit int: the most items to lease\n$4 lease bigint: its length in microseconds";
    private static final String P_KEYS = P_QUEUE + "\n$2 keys text[]: the stored keys, distinct";

    /**
     * No parameters; one row: the age in microseconds and the pid of the oldest transaction that
     * holds back this database's xmin horizon, and the oldest replication slot xmin age. Names no
     * table: the horizon belongs to the database, not to a queue.
     */
    private static final String HORIZON_WRITTEN = """
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
            """;
    /**
     * Run in a look's transaction, before {@link #lookBehindCursors}. A look that waits for a table
     * lock (a migration's, say) fails fast and is tried again soon, rather than counting the wait as
     * its cost, which would space the next looks out. And a look runs to its end whatever statement
     * timeout the role sets: it is paced by its own cost already, and cut short it would find
     * nothing, time after time, for as long as a held horizon makes it long.
     */
    static final String LOOK_SETTINGS = "SET LOCAL lock_timeout = '100ms'; SET LOCAL statement_timeout = 0";

    /**
     * Run in the stats read's transaction, before {@link #stats}. Over a large table the planner
     * prices the read of every pending row high enough to JIT-compile it, and compiling cost more
     * than it saved: measured at 100,000 pending over 20,000,000 completed rows, 132-199 ms
     * executing with JIT (46-63 ms of it compiling), 49-68 ms without (docs/benchmarks/stats-history).
     */
    static final String STATS_SETTINGS = "SET LOCAL jit = off";

    /** {@link #HORIZON_WRITTEN} as sent. */
    static final String HORIZON = compact(HORIZON_WRITTEN);

    private static final String P_NOTIFIER_TICK = "$1 channel text: to notify"
            + "\n$2 xids text[]: transactions the queue awaits"
            + "\n$3 notify boolean: whether a write of the queue's own committed since its last notification";

    /**
     * One tick of the {@link io.workqueue.internal.Notifier}: a row per awaited transaction
     * ({@code $2}) with its {@code xid} and {@code status} as {@code pg_xact_status} gives it ("in
     * progress", "committed", "aborted", or null once the server has forgotten it), or one row of
     * nulls when none is awaited; and in each row, whether it notified. Names no table.
     */
    private static final String NOTIFIER_TICK_WRITTEN = """
            -- How each transaction that enqueued on a caller's connection has ended, read first; then
            -- a notification if one of the queue's own writes committed ($3) or any of those
            -- transactions did: what it found committed is visible to whoever the notification
            -- wakes, which goes out at this statement's commit. A tick that finds nothing queues
            -- no notification, so its commit takes no notify lock and writes no commit record.
            -- One that notifies holds that lock only for its own commit, which writes no rows;
            -- synchronous_commit off for this transaction alone keeps the lock out of a WAL flush.
            -- A crash can lose the notification, which a crash would lose anyway; the poll is the
            -- backstop.
            WITH awaited AS MATERIALIZED (
                SELECT a.xid, pg_xact_status(a.xid::xid8) AS status
                FROM unnest($2::text[]) AS a(xid)
            ),
            sent AS MATERIALIZED (
                SELECT set_config('synchronous_commit', 'off', true), pg_notify($1::text, '')
                -- A transaction the server has forgotten (null) counts as committed: a wakeup too
                -- many costs a claim.
                WHERE $3::boolean OR EXISTS (SELECT 1 FROM awaited
                    WHERE awaited.status IS DISTINCT FROM 'in progress' AND awaited.status IS DISTINCT FROM 'aborted')
            )
            SELECT awaited.xid, awaited.status, EXISTS (SELECT 1 FROM sent) AS notified
            FROM (SELECT 1) AS tick
            LEFT JOIN awaited ON true
            """;
    /** {@link #NOTIFIER_TICK_WRITTEN} as sent. */
    static final String NOTIFIER_TICK = compact(NOTIFIER_TICK_WRITTEN);

    /**
     * @param tablePrefix      the validated prefix of the one table every statement names
     * @param deleteOnComplete whether completing deletes rows rather than marking them completed
     */
    Sql(String tablePrefix, boolean deleteOnComplete) {
        this.table = WorkQueueMigrations.tableName(tablePrefix);
        // The one rendering of completing, for both completing statements: "target" locks the named
        // pending rows in key order, "done" marks them completed (or deletes them), a row per item,
        // and "rearmed" hands those enqueued again during their lease back to the queue instead.
        String completeTarget = (deleteOnComplete ? DELETE_TARGET.formatted(table) : """
                UPDATE %1$s AS q
                %2$s
                FROM target
                WHERE q.queue_name = target.queue_name AND q.item_key = target.item_key
                """.formatted(table, COMPLETE)) + """
                    AND target.requested_at IS NULL AND target.lease_until <> %s
                RETURNING q.item_key
                """.formatted(HANDED_BACK);
        IntFunction<String> completing = keysParameter -> lockedKeys(keysParameter, true)
                + ",\ndone AS (\n" + completeTarget.indent(4) + "),\nrearmed AS (\n" + REARM.formatted(table, HANDED_BACK).indent(4) + ")";
        String upsert = """
                -- Rows go in key order (the ORDER BY puts a Sort under the Insert), so concurrent
                -- upserts lock in the one total order every writer uses. The caller has merged
                -- duplicate keys already: ON CONFLICT cannot touch a row twice (21000).
                INSERT INTO %1$s AS q (queue_name, item_key, priority, available_at)
                SELECT $1::text, e.item_key, e.priority, now() + e.delay_us * INTERVAL '1 microsecond'
                FROM unnest($2::text[], $3::int[], $4::bigint[]) AS e(item_key, priority, delay_us)
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
                """.formatted(table);
        String enqueueParameters = P_KEYS + "\n$3 priorities int[]: one per key"
                + "\n$4 delays bigint[]: one per key, in microseconds";
        this.enqueue = statement("enqueue", enqueueParameters, upsert);
        this.enqueueInTransaction = statement("enqueueInTransaction", enqueueParameters, """
                -- A transaction that notifies takes, at commit, a lock that every other notifying
                -- commit in the database waits for, held through its WAL flush: in the caller's
                -- business transaction that would serialise the database's notifying commits. So
                -- nothing is queued here; the transaction's id goes back to the queue, which
                -- notifies from a connection of its own once the transaction has committed.
                -- The id is assigned by the upsert anyway (pg_current_xact_id assigns one if it
                -- runs first, and the upsert then uses it); xids are cluster-wide, so any
                -- session, through any pooler, can ask about it.
                WITH written AS (
                %s)
                SELECT pg_current_xact_id()::text AS xid
                """.formatted(upsert.indent(4)));
        this.enqueueNotifying = statement("enqueueNotifying", enqueueParameters + "\n$5 channel text: to notify", """
                -- Asked for by the caller: the notification goes out with the caller's commit, and
                -- not at all on rollback, so no listener wakes before the rows are visible. The
                -- caller's commit then takes the database-wide notify lock (see enqueueInTransaction).
                WITH written AS (
                %s)
                SELECT pg_notify($5::text, '')
                """.formatted(upsert.indent(4)));
        String cursors = "\n$%d band priorities int[]: the bands to read, highest first"
                + "\n$%d band starts bigint[]: where each band's read starts, microseconds since the epoch";
        this.claimDue = statement("claimDue", P_CLAIM, "WITH " + claim(false, 0));
        this.claimFromCursors = statement("claimFromCursors", P_CLAIM + cursors.formatted(5, 6),
                "WITH " + claim(false, 5));
        String deleting = deleteOnComplete ? " (deleteOnComplete)" : "";
        String completeAndClaimParameters = P_CLAIM + "\n$5 keys text[]: the stored keys to complete first, distinct";
        IntFunction<String> completeAndClaim = cursorParameter -> ("""
                -- Completion first, in key order (the lock-ordering CTE waits); the claim's scan
                -- cannot start before "done" has run (its InitPlan gates the scan), so while this
                -- statement waits for a lock it holds no claimed row: no lock cycle. The claim
                -- skips the keys being completed: one statement sees one snapshot, in which they
                -- still look due.
                WITH %1$s,
                %2$s
                """.formatted(
                        completing.apply(5),
                        claim(true, cursorParameter)));
        this.completeAndClaim = statement("completeAndClaim" + deleting, completeAndClaimParameters,
                completeAndClaim.apply(0));
        this.completeAndClaimFromCursors = statement("completeAndClaimFromCursors" + deleting,
                completeAndClaimParameters + cursors.formatted(6, 7), completeAndClaim.apply(6));
        this.completeKeys = statement("completeKeys" + deleting, P_KEYS, """
                WITH %1$s
                -- One row: how many items were completed and, only when that is fewer than the keys
                -- named, which ones, so a merged write can credit each caller. Usually every key
                -- completes and the count is all that crosses the wire. array_agg over no rows is
                -- NULL, which would read as "all": none completed is the empty array.
                SELECT count(*) AS completed,
                    CASE WHEN count(*) < cardinality($2::text[])
                        THEN COALESCE(array_agg(item_key), '{}'::text[]) END AS completed_keys,
                    (SELECT count(*) FROM rearmed) AS rearmed
                FROM done
                """.formatted(completing.apply(2)));
        this.lookBehindCursors = statement("lookBehindCursors", P_QUEUE + "\n" + P_ATTEMPT_LIMIT, """
                -- Read only, and run only by a look, never by a caller's claim: it walks each band
                -- from its head, through whatever history a held horizon keeps there, to the band's
                -- first due item. One index descent per band that has something due: each step
                -- seeks to the bands below the one found last and stops at the first due item there.
                WITH RECURSIVE found AS (
                    (%1$s)
                    UNION ALL
                    SELECT next.priority, next.available_at
                    FROM found
                    CROSS JOIN LATERAL (
                %2$s    ) AS next
                )
                SELECT
                    array_agg(priority) AS priorities,
                    array_agg((EXTRACT(EPOCH FROM available_at) * 1000000)::bigint) AS first_due_us,
                    (EXTRACT(EPOCH FROM now()) * 1000000)::bigint AS now_us
                FROM found
                """.formatted(firstDue("").indent(5).strip(), firstDue(" AND priority < found.priority").indent(8)));
        this.releaseKeys = statement("releaseKeys", P_KEYS
                + "\n$3 delay bigint: microseconds until available (negative means now)"
                + "\n$4 last error text: null for none", "WITH " + lockedKeys(2, true) + """
                UPDATE %1$s AS q
                SET lease_until = 'epoch',
                    available_at = now() + GREATEST($3::bigint, 0) * INTERVAL '1 microsecond',
                    last_error = $4::text,
                    -- A release runs the item again anyway, after its own delay.
                    requested_at = NULL
                FROM target
                WHERE q.queue_name = target.queue_name AND q.item_key = target.item_key
                """.formatted(table));
        this.handBackKeys = statement("handBackKeys", P_KEYS
                + "\n$3 attempts int[]: the attempts the claim gave each key"
                + "\n$4 prior leases int[]: each key's lease before the claim: 0 none, 1 lapsed, 2 handed back",
                "WITH " + lockedKeys(2, true) + """
                -- Undoes a claim nobody took (its caller left while the statement ran): the lease
                -- goes back to what it was, so a lapsed one still reads as a reclaim and a row
                -- handed back to run again is still protected, and the attempt is not counted.
                -- Only where the claim is still the row's latest: leased, at the attempt it gave.
                -- Last error and availability are the row's own and stay; a re-request made
                -- during the brief lease is void, since the row is due again at once.
                UPDATE %1$s AS q
                SET lease_until = CASE mine.prior_lease WHEN %2$d THEN 'epoch'::timestamptz + INTERVAL '1 microsecond'
                        WHEN %3$d THEN %4$s ELSE 'epoch' END,
                    attempts = q.attempts - 1,
                    requested_at = NULL
                FROM target
                JOIN unnest($2::text[], $3::int[], $4::int[]) AS mine(item_key, attempts, prior_lease)
                    ON mine.item_key = target.item_key
                WHERE q.queue_name = target.queue_name AND q.item_key = target.item_key
                    AND q.attempts = mine.attempts AND q.lease_until > now()
                """.formatted(table, PRIOR_LEASE_LAPSED, PRIOR_LEASE_HANDED_BACK, HANDED_BACK));
        this.removeKeys = statement("removeKeys", P_KEYS, "WITH " + lockedKeys(2, false) + DELETE_TARGET.formatted(table));
        this.reapCompleted = statement("reapCompleted", P_QUEUE
                + "\n$2 retention bigint: microseconds a completed item is kept\n$3 batch int: the most rows to delete", """
                -- Bounded, and SKIP LOCKED: the reaper never waits on, or deadlocks with, a writer.
                WITH expired AS MATERIALIZED (
                    SELECT queue_name, item_key
                    FROM %1$s
                    WHERE queue_name = $1::text
                        AND completed_at IS NOT NULL
                        AND completed_at < now() - $2::bigint * INTERVAL '1 microsecond'
                    ORDER BY completed_at
                    LIMIT $3::int
                    FOR UPDATE SKIP LOCKED
                )
                DELETE FROM %1$s AS q
                USING expired
                WHERE q.queue_name = expired.queue_name AND q.item_key = expired.item_key
                    -- As in the claim: primary-key lookups even under a generic plan.
                    AND q.queue_name = $1::text AND q.item_key = ANY(ARRAY(SELECT item_key FROM expired))
                """.formatted(table));
        this.stats = statement("stats", P_QUEUE + "\n" + P_ATTEMPT_LIMIT, """
                -- Sized by the backlog, never by the history: the pending counts read the rows the
                -- partial due index holds (its predicate is the WHERE below), and the completed
                -- count stops at %6$d, newest first through the reap index, where reaped and not
                -- yet vacuumed entries are rarest.
                SELECT
                    count(*) AS pending,
                    count(*) FILTER (WHERE %2$s) AS ready,
                    count(*) FILTER (WHERE %4$s) AS leased,
                    count(*) FILTER (WHERE %3$s) AS stalled,
                    (SELECT count(*) FROM (
                        SELECT 1 FROM %1$s
                        WHERE queue_name = $1::text AND %5$s
                        ORDER BY completed_at DESC
                        LIMIT %6$d) AS newest) AS completed,
                    -- How long the longest-waiting ready item has been claimable, on the database
                    -- clock, in microseconds (0 when nothing is ready).
                    COALESCE(
                        (EXTRACT(EPOCH FROM now() - min(%7$s) FILTER (WHERE %2$s)) * 1000000)::bigint,
                        0) AS oldest_ready_us
                FROM %1$s
                WHERE queue_name = $1::text AND completed_at IS NULL
                """.formatted(table, DUE, STALLED, LEASED, COMPLETED, Stats.COMPLETED_COUNT_LIMIT + 1, READY_SINCE));
        this.readyLongerThan = statement("readyLongerThan", P_QUEUE + "\n" + P_ATTEMPT_LIMIT
                + "\n$3 threshold bigint: microseconds", """
                -- The health check: one answer, not five counts. One index descent per priority
                -- band that has pending items (a loose scan of the partial due index), then, in
                -- each band, only the entries available before the threshold, in order, stopping
                -- at the first that has been ready longer than it. What it reads past is items
                -- that are leased or out of attempts: in flight, not history.
                WITH RECURSIVE bands AS (
                    (SELECT priority FROM %1$s
                     WHERE queue_name = $1::text AND completed_at IS NULL
                     ORDER BY priority DESC LIMIT 1)
                    UNION ALL
                    SELECT (SELECT q.priority FROM %1$s AS q
                            WHERE q.queue_name = $1::text AND q.completed_at IS NULL AND q.priority < bands.priority
                            ORDER BY q.priority DESC LIMIT 1)
                    FROM bands
                    WHERE bands.priority IS NOT NULL
                )
                SELECT EXISTS (
                    SELECT 1
                    FROM bands
                    CROSS JOIN LATERAL (
                        SELECT 1 FROM %1$s
                        WHERE queue_name = $1::text AND priority = bands.priority
                            AND available_at <= now() - $3::bigint * INTERVAL '1 microsecond'
                            AND %2$s
                            AND %3$s <= now() - $3::bigint * INTERVAL '1 microsecond'
                        LIMIT 1) AS late
                ) AS late
                """.formatted(table, DUE, READY_SINCE));
        this.queuesTable = TableNames.queues(tablePrefix);
        this.keepHouse = statement("keepHouse", P_QUEUE + "\n$2 keeper text: this instance's name"
                + "\n$3 lease bigint: microseconds the role is held for from now", """
                -- The housekeeper is chosen on the database, by its clock and one row's lock, so
                -- it holds through a transaction-mode pooler (no session state) and a holder that
                -- stops renewing loses the role when its lease ends, whatever became of it. Every
                -- caller writes the row, the role changing hands only when it is free, lapsed or
                -- its own: RETURNING then reads the row as it now is, where a read beside the
                -- upsert would see this statement's snapshot and miss a row another caller
                -- inserted a moment before. Racing callers queue on this one row for a moment.
                INSERT INTO %1$s AS k (queue_name, keeper, keeper_until)
                VALUES ($1::text, $2::text, now() + $3::bigint * INTERVAL '1 microsecond')
                ON CONFLICT (queue_name) DO UPDATE
                    SET keeper = CASE WHEN k.keeper = EXCLUDED.keeper OR k.keeper_until <= now()
                            THEN EXCLUDED.keeper ELSE k.keeper END,
                        keeper_until = CASE WHEN k.keeper = EXCLUDED.keeper OR k.keeper_until <= now()
                            THEN EXCLUDED.keeper_until ELSE k.keeper_until END
                RETURNING
                    k.keeper = $2::text AS kept,
                    k.keeper,
                    (EXTRACT(EPOCH FROM k.keeper_until - now()) * 1000000)::bigint AS keeper_left_us,
                    (EXTRACT(EPOCH FROM now() - k.read_at) * 1000000)::bigint AS read_ago_us,
                    k.pending, k.ready, k.leased, k.stalled, k.completed, k.completed_capped, k.oldest_ready_us,
                    k.horizon_us, k.horizon_pid, k.slot_xmin_age
                """.formatted(queuesTable));
        this.publishReading = statement("publishReading", P_QUEUE + "\n$2 keeper text: this instance's name"
                + "\n$3 pending bigint\n$4 ready bigint\n$5 leased bigint\n$6 stalled bigint\n$7 completed bigint"
                + "\n$8 completed capped boolean\n$9 oldest ready bigint: microseconds"
                + "\n$10 horizon bigint: microseconds\n$11 horizon pid int\n$12 slot xmin age bigint", """
                -- Only while this instance holds the role: a keeper that lost it while reading
                -- leaves its successor's reading alone.
                UPDATE %1$s
                SET read_at = now(), pending = $3::bigint, ready = $4::bigint, leased = $5::bigint,
                    stalled = $6::bigint, completed = $7::bigint, completed_capped = $8::boolean,
                    oldest_ready_us = $9::bigint, horizon_us = $10::bigint, horizon_pid = $11::int,
                    slot_xmin_age = $12::bigint
                WHERE queue_name = $1::text AND keeper = $2::text
                """.formatted(queuesTable));
    }

    /**
     * Records {@code text} under {@code name} with a header naming its parameters (one per line),
     * and returns it as sent.
     */
    private String statement(String name, String parameters, String text) {
        return statement(readable, name, parameters, text);
    }

    /** {@link #statement(String, String, String)}, recording into {@code readable}. */
    private static String statement(Map<String, String> readable, String name, String parameters, String text) {
        StringBuilder header = new StringBuilder("-- ").append(name).append('\n');
        for (String parameter : parameters.split("\n")) {
            if (!parameter.isEmpty()) {
                header.append("--   ").append(parameter).append('\n');
            }
        }
        readable.put(name, header + text.stripTrailing() + ";\n");
        return compact(text);
    }

    /**
     * Every statement the queue and the admin run, for the default table, as written: the readable
     * form of each rendering (keeping rows, deleting on complete), each statement once,
     * with its parameters named in its header. Committed as {@code docs/sql/statements.sql}
     * (StatementsReferenceTest keeps it current), so the final text of every statement can be read
     * in one place; the fields are the same text without the comments.
     */
    static String reference() {
        Map<String, String> all = new LinkedHashMap<>();
        for (Sql rendering : List.of(new Sql("", false), new Sql("", true))) {
            all.putAll(rendering.readable);
        }
        statement(all, "horizon", "(no parameters)", HORIZON_WRITTEN);
        statement(all, "notifierTick", P_NOTIFIER_TICK, NOTIFIER_TICK_WRITTEN);
        all.putAll(new Inspection("").readable);
        StringBuilder out = new StringBuilder("""
                -- Every statement reactive-workqueue runs, rendered for the default table
                -- (work_queue_items), as written in src/main/java/io/workqueue/postgres/Sql.java:
                -- the comments say why; the driver receives the text without them. Generated by
                -- Sql.reference(); StatementsReferenceTest fails when this file is out of date
                -- (regenerate: mvn test -Dtest=StatementsReferenceTest -Dstatements.write=true).

                """);
        all.forEach((name, text) -> out.append(text).append('\n'));
        return out.toString();
    }

    /**
     * The statement as sent: comments and blank lines dropped. The comments are for readers of this
     * file; the driver tokenizes every statement's text each time it is created, so they would cost
     * on every claim and complete.
     */
    static String compact(String statement) {
        StringBuilder compact = new StringBuilder(statement.length());
        for (String line : statement.split("\n")) {
            int comment = line.indexOf("--");
            String code = (comment < 0 ? line : line.substring(0, comment)).stripTrailing();
            if (!code.isBlank()) {
                compact.append(code).append('\n');
            }
        }
        return compact.toString();
    }

    /**
     * The claim, as the CTEs {@code due} and {@code leased} and the select that returns the leased
     * items as one row of parallel arrays, aligned but not sorted (keys, priorities, attempts, the kind of
     * lease each row had before, {@link #PRIOR_LEASE_NONE} and its siblings; all null when nothing
     * was leased) plus, {@code afterCompleting}, how many items the completing
     * CTEs completed and re-armed (else 0). The LIMIT sits
     * above the lock: SKIP LOCKED passes over rows other claimers hold and the scan carries on, so
     * a claim gets a full batch while work remains.
     *
     * <p>One row rather than a row per item: the driver's per-row path (a data row message through
     * its reactive pipeline, a codec lookup per column) cost more client CPU than the claim's SQL
     * saved; each array decodes in one step. The aggregates of one select see its rows in one
     * sequence, so the arrays line up; the client sorts them into claim order.
     */
    private String claim(boolean afterCompleting, int cursorParameter) {
        // After completing ($5 the keys, "done" and "rearmed" the completing CTEs): skip the keys
        // being completed, gate the scan on "done", and report both counts.
        String extraDueCondition = afterCompleting
                ? "AND item_key NOT IN (SELECT unnest($5::text[])) AND (SELECT count(*) FROM done) >= 0" : "";
        String completedCount = afterCompleting ? "(SELECT count(*) FROM done)" : "0::bigint";
        String rearmedCount = afterCompleting ? "(SELECT count(*) FROM rearmed)" : "0::bigint";
        String due = cursorParameter == 0
                ? "due AS MATERIALIZED (\n" + lockDue("", CLAIM_ORDER).indent(4) + "),\n"
                : """
                -- Each band from its cursor ($%1$d priorities, highest first; $%2$d where each band's
                -- read starts, in microseconds since the epoch): an index seek to the cursor, so the
                -- claim does not walk the history at the head of a band (see ClaimCursors). The
                -- nested loop keeps the bands' order and the outer LIMIT stops it, so no band locks
                -- more rows than the claim hands out.
                due AS MATERIALIZED (
                    SELECT d.queue_name, d.item_key, d.lease_until
                    FROM unnest($%1$d::int[], $%2$d::bigint[]) AS band(priority, from_us)
                    CROSS JOIN LATERAL (
                %3$s    ) AS d
                    LIMIT $3::int
                ),
                """.formatted(cursorParameter, cursorParameter + 1, lockDue(" AND priority = band.priority"
                        + " AND available_at >= 'epoch'::timestamptz + band.from_us * INTERVAL '1 microsecond'",
                        "available_at, item_key").indent(8));
        return (due + """
                -- One index scan of the primary key for the whole batch (the array is sorted and
                -- walked once), whatever a generic plan estimates: joining "due" row by row would
                -- also re-check each row against the array, quadratic in the batch.
                leased AS (
                    UPDATE %1$s AS q
                    SET lease_until = now() + $4::bigint * INTERVAL '1 microsecond',
                        attempts = q.attempts + 1
                    WHERE q.queue_name = $1::text AND q.item_key = ANY(ARRAY(SELECT item_key FROM due))
                    RETURNING q.item_key, q.priority, q.attempts, q.available_at
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
                    array_agg(CASE WHEN d.lease_until > 'epoch' THEN %6$d WHEN d.lease_until = %7$s THEN %8$d
                        ELSE %9$d END) AS prior_leases,
                    %4$s AS completed,
                    -- Where the claim ended, for the cursors: each item's availability, and now().
                    array_agg((EXTRACT(EPOCH FROM l.available_at) * 1000000)::bigint) AS available_us,
                    (EXTRACT(EPOCH FROM now()) * 1000000)::bigint AS now_us,
                    %5$s AS rearmed
                FROM leased AS l
                JOIN due AS d ON d.item_key = l.item_key
                """).formatted(table, DUE, extraDueCondition, completedCount, rearmedCount,
                PRIOR_LEASE_LAPSED, HANDED_BACK, PRIOR_LEASE_HANDED_BACK, PRIOR_LEASE_NONE);
    }

    /**
     * The first due row of the queue in claim order, and of the bands {@code bandCondition} (empty,
     * or starting {@code " AND"}) names: its priority and availability. One step of
     * {@link #lookBehindCursors}.
     */
    private String firstDue(String bandCondition) {
        return """
                SELECT priority, available_at
                FROM %1$s
                WHERE queue_name = $1::text%2$s AND %3$s
                ORDER BY %4$s
                LIMIT 1
                """.formatted(table, bandCondition, DUE, CLAIM_ORDER);
    }

    /**
     * The locking read of a claim: due rows of the queue (and of a band, when {@code bandCondition}
     * names one, starting {@code " AND"}), in
     * {@code order}, at most $3, skipping rows others hold. Its placeholders ({@code %1$s} the
     * table, {@code %2$s} {@link #DUE}, {@code %3$s} the extra due condition) are rendered with the
     * rest of the claim.
     */
    private static String lockDue(String bandCondition, String order) {
        return """
                SELECT queue_name, item_key, lease_until
                FROM %%1$s
                WHERE queue_name = $1::text%s AND %%2$s %%3$s
                ORDER BY %s
                LIMIT $3::int
                FOR UPDATE SKIP LOCKED
                """.formatted(bandCondition, order);
    }

    /**
     * The lock-ordering CTE {@code target} of every writer that waits for row locks: it reaches
     * the rows named by the {@code text[]} parameter {@code $keysParameter} in primary-key order
     * and locks them in that order ({@code item_key} is {@code COLLATE "C"}), so two overlapping
     * batches queue behind each other instead of deadlocking.
     *
     * <p>{@code pendingOnly} keeps completed rows out (they are neither locked nor touched),
     * spelled {@code IS NOT DISTINCT FROM NULL::timestamptz} on purpose: written as
     * {@code completed_at IS NULL}, the condition matches the partial due index's predicate, and
     * once statistics say few rows are pending the planner reads the named rows through that
     * index, filtering on the key, instead of looking them up in the primary key. While a
     * transaction holds the horizon that index is mostly dead entries, and the walk cost seconds
     * per statement (1.2M buffers for a completion of 100 keys, docs/benchmarks/pressure/ANALYSIS.md).
     * This spelling means the same and matches no index predicate, so the primary key is the only
     * index the lookup can use. (Locking completed rows too would also avoid the index, but every
     * extra lock a writer holds is one more a claim can meet, and a run of LockOrderIT with that
     * shape saw a claim-versus-complete deadlock.)
     */
    private String lockedKeys(int keysParameter, boolean pendingOnly) {
        return """
                target AS MATERIALIZED (
                    SELECT queue_name, item_key, requested_at, lease_until
                    FROM %1$s
                    WHERE queue_name = $1::text AND item_key = ANY($%2$d::text[])%3$s
                    ORDER BY item_key
                    FOR UPDATE
                )
                """.formatted(table, keysParameter,
                        pendingOnly ? " AND completed_at IS NOT DISTINCT FROM NULL::timestamptz" : "");
    }

    /**
     * The statements of {@link PostgresWorkQueueAdmin}, rendered once per table: they read every
     * logical queue of it, so the queue name is always {@code $1} and the attempt limit of that
     * queue always {@code $2}, as in the claim, and each state is the predicate above that the
     * queue itself uses ({@link #DUE} for ready, {@link #DELAYED}, {@link #LEASED}, {@link #STALLED},
     * {@link #COMPLETED}), never a second spelling of it.
     */
    static final class Inspection {
        /**
         * The raw columns a listing reads from the table, named as the predicates name them, so the
         * predicates apply unchanged to the derived table {@code b} they are read into.
         */
        private static final String RAW_COLUMNS =
                "item_key, priority, attempts, last_error, enqueued_at, available_at, lease_until, completed_at, requested_at";

        /** What a listing or a detail returns of each item; ages in microseconds on the database clock. */
        private static final String ITEM_COLUMNS = """
                b.item_key, b.priority, b.attempts, b.last_error,
                (EXTRACT(EPOCH FROM now() - b.enqueued_at) * 1000000)::bigint AS age_us,
                (EXTRACT(EPOCH FROM b.available_at - now()) * 1000000)::bigint AS available_in_us,
                CASE WHEN b.lease_until > now() THEN (EXTRACT(EPOCH FROM b.lease_until - now()) * 1000000)::bigint END AS lease_left_us,
                CASE WHEN b.completed_at IS NOT NULL THEN (EXTRACT(EPOCH FROM now() - b.completed_at) * 1000000)::bigint END AS completed_ago_us,
                b.requested_at IS NOT NULL AS requeue_requested,
                -- A real lease (after the epoch) that ran out: the next claim is a reclaim.
                (b.lease_until > 'epoch' AND b.lease_until <= now()) AS lease_lapsed,
                (%1$s) AS is_ready, (%2$s) AS is_delayed, (%3$s) AS is_leased, (%4$s) AS is_stalled, (%5$s) AS is_completed,
                -- The item's place in its listing order, for the next page's cursor.
                (EXTRACT(EPOCH FROM b.available_at) * 1000000)::bigint AS available_us,
                (EXTRACT(EPOCH FROM b.completed_at) * 1000000)::bigint AS completed_us
                """.formatted(DUE, DELAYED, LEASED, STALLED, COMPLETED);

        final String table;
        /** The stats read of {@link #stats}, for a queue the admin has no queue instance of: $1 queue, $2 attempt limit. */
        final String stats;
        /**
         * No parameters: the distinct queue names of the table, in order. A loose index scan of the
         * primary key: one probe per name, however many rows each queue has.
         */
        final String queueNames;
        /** $1 queue, $2 attempt limit, $3 stored key: that item's row, or none. */
        final String item;
        /** A page of the pending items of each state but completed, in claim order; see {@link #pendingPage}. */
        final String readyPage;
        /** See {@link #readyPage}. */
        final String delayedPage;
        /** See {@link #readyPage}. */
        final String leasedPage;
        /** See {@link #readyPage}. */
        final String stalledPage;
        /** A page of completed items, newest first; see {@link #completedPage}. */
        final String completedPage;
        /**
         * $1 queue, $2 attempt limit, $3 stored keys text[]: makes the stalled and delayed ones among
         * them due now with fresh attempts; returns the keys it changed.
         */
        final String retryKeys;
        /** $1 queue, $2 stored keys text[]: deletes them, whatever their state; returns the keys deleted. */
        final String removeKeys;
        /** $1 queue, $2 most items: deletes the oldest completed items. */
        final String purgeCompleted;

        /** As {@link Sql#readable}. */
        private final Map<String, String> readable = new LinkedHashMap<>();

        Inspection(String tablePrefix) {
            Sql sql = new Sql(tablePrefix, false);
            this.table = sql.table;
            this.stats = sql.stats;
            this.queueNames = statement(readable, "admin: queueNames", "(no parameters)", """
                    WITH RECURSIVE names AS (
                        (SELECT queue_name FROM %1$s ORDER BY queue_name LIMIT 1)
                        UNION ALL
                        SELECT (SELECT t.queue_name FROM %1$s AS t WHERE t.queue_name > names.queue_name
                                ORDER BY t.queue_name LIMIT 1)
                        FROM names
                        WHERE names.queue_name IS NOT NULL
                    )
                    SELECT queue_name FROM names WHERE queue_name IS NOT NULL
                    """.formatted(table));
            this.item = statement(readable, "admin: item", P_QUEUE + "\n" + P_ATTEMPT_LIMIT
                    + "\n$3 key text: the stored key", """
                    SELECT %2$s
                    FROM (SELECT %3$s FROM %1$s WHERE queue_name = $1::text AND item_key = $3::text) AS b
                    """.formatted(table, ITEM_COLUMNS, RAW_COLUMNS));
            String page = P_QUEUE + "\n" + P_ATTEMPT_LIMIT
                    + "\n$3 band int: the priority band the last page ended in; null for the first page"
                    + "\n$4 available bigint: where in that band it ended, microseconds since the epoch"
                    + "\n$5 key text: and the key it ended at"
                    + "\n$6 next bands bigint: the highest priority of the bands after it (the int maximum for the first page)"
                    + "\n$7 page size int\n$8 scan budget int: the most index entries each part reads";
            this.readyPage = statement(readable, "admin: readyPage", page, pendingPage(DUE));
            this.delayedPage = statement(readable, "admin: delayedPage", page, pendingPage(DELAYED));
            this.leasedPage = statement(readable, "admin: leasedPage", page, pendingPage(LEASED));
            this.stalledPage = statement(readable, "admin: stalledPage", page, pendingPage(STALLED));
            this.completedPage = statement(readable, "admin: completedPage", P_QUEUE + "\n" + P_ATTEMPT_LIMIT
                    + "\n$3 completed bigint: the completion instant the last page ended at, microseconds since the"
                    + " epoch; null for the first page\n$4 key text: and the key it ended at"
                    + "\n$5 page size int\n$6 scan budget int: the most index entries each part reads", completedPage());
            this.retryKeys = statement(readable, "admin: retryKeys", P_QUEUE + "\n" + P_ATTEMPT_LIMIT
                    + "\n$3 keys text[]: the stored keys, distinct", "WITH " + sql.lockedKeys(3, true) + """
                    -- No FROM: the predicates name the row's own columns, unqualified. The row is
                    -- locked already, in key order; they are checked on its latest version.
                    UPDATE %1$s AS q
                    SET available_at = now(), attempts = 0
                    WHERE q.queue_name = $1::text AND q.item_key = ANY(ARRAY(SELECT item_key FROM target))
                        AND NOT (%2$s) AND ((%3$s) OR (%4$s))
                    RETURNING q.item_key
                    """.formatted(table, LEASED, STALLED, DELAYED));
            this.removeKeys = statement(readable, "admin: removeKeys", P_KEYS,
                    "WITH " + sql.lockedKeys(2, false) + DELETE_TARGET.formatted(table) + "RETURNING q.item_key\n");
            this.purgeCompleted = statement(readable, "admin: purgeCompleted", P_QUEUE
                    + "\n$2 limit int: the most completed items to delete", """
                    -- The oldest completions through the reap index, then locked in key order like
                    -- every writer; a row enqueued again meanwhile is pending and stays (the
                    -- condition is checked on its latest version, and spelled so that it matches
                    -- no partial index: the primary key finds the rows, as in Sql.lockedKeys).
                    WITH oldest AS MATERIALIZED (
                        SELECT item_key
                        FROM %1$s
                        WHERE queue_name = $1::text AND %2$s
                        ORDER BY completed_at
                        LIMIT $2::int
                    ),
                    target AS MATERIALIZED (
                        SELECT queue_name, item_key
                        FROM %1$s
                        WHERE queue_name = $1::text AND item_key = ANY(ARRAY(SELECT item_key FROM oldest))
                        ORDER BY item_key
                        FOR UPDATE
                    )
                    DELETE FROM %1$s AS q
                    WHERE q.queue_name = $1::text AND q.item_key = ANY(ARRAY(SELECT item_key FROM target))
                        AND q.completed_at IS DISTINCT FROM NULL::timestamptz
                    """.formatted(table, COMPLETED));
        }

        /**
         * A page of the pending items matching {@code state}, in claim order, continuing from a
         * position: $1 queue, $2 attempt limit, $3 the priority band the last page ended in (null
         * for the first page), $4 and $5 where in that band it ended (availability in microseconds
         * since the epoch, and key), $6 the highest priority of the bands after it (bigint, so that
         * "none" is expressible below the lowest int; {@code Integer.MAX_VALUE} for the first page),
         * $7 the page size, $8 the scan budget.
         *
         * <p>Claim order is priority descending but availability and key ascending, which no
         * single row comparison can seek to in the claim's index. So the page is two index range
         * scans, each in index order: the rest of the band ($3, after ($4, $5)), then the bands
         * below. Each reads at most $8 entries (its LIMIT under the state's filter) and returns the
         * matching ones, numbered, plus its $8-th entry whatever its state: where that part
         * stopped, if the budget ended it. The client takes them in order, up to the page size or
         * that stop, whichever comes first, and continues from the last row it took. A state that
         * matches most rows (ready, usually) stops each part after about a page of entries.
         */
        private String pendingPage(String state) {
            return """
                    -- The rest of the band the last page ended in, then the bands after it.
                    SELECT * FROM (
                    %1$s) AS rest_of_band
                    UNION ALL
                    SELECT * FROM (
                    %2$s) AS next_bands
                    ORDER BY part, n
                    """.formatted(
                            part(1, "available_at, item_key", state, "completed_at IS NULL AND priority = $3::int"
                                    + " AND (available_at, item_key)"
                                    + " > ('epoch'::timestamptz + $4::bigint * INTERVAL '1 microsecond', $5::text)", 7, 8),
                            part(2, CLAIM_ORDER, state, "completed_at IS NULL AND priority <= $6::bigint", 7, 8));
        }

        /**
         * A page of completed items, newest completion first, then key descending, through the
         * reap index: $1 queue, $2 attempt limit, $3 and $4 where the last page ended (completion
         * in microseconds since the epoch, and key; both null for the first page), $5 the page
         * size, $6 the scan budget. As {@link #pendingPage}: the rest of the completion instant the
         * last page ended in (items completed by one statement share it), then the older ones.
         */
        private String completedPage() {
            String at = "'epoch'::timestamptz + $3::bigint * INTERVAL '1 microsecond'";
            return """
                    SELECT * FROM (
                    %1$s) AS rest_of_instant
                    UNION ALL
                    SELECT * FROM (
                    %2$s) AS older
                    ORDER BY part, n
                    """.formatted(
                            part(1, "item_key DESC", COMPLETED,
                                    COMPLETED + " AND completed_at = " + at + " AND item_key < $4::text", 5, 6),
                            part(2, "completed_at DESC, item_key DESC", COMPLETED,
                                    COMPLETED + " AND completed_at < COALESCE(" + at + ", 'infinity')", 5, 6));
        }

        /**
         * One part of a page: the rows of the queue matching {@code range}, read in {@code order}
         * up to the scan budget (parameter number {@code budget}) and numbered; of those, the ones
         * in {@code state}, plus the last one read whatever its state (where the part stopped, if
         * the budget ended it); at most the page size (parameter number {@code size}) rows.
         */
        private String part(int number, String order, String state, String range, int size, int budget) {
            return """
                    SELECT %1$d AS part, s.*
                    FROM (
                        SELECT row_number() OVER (ORDER BY %2$s) AS n, %3$s, (%4$s) AS wanted
                        FROM (
                            SELECT %5$s
                            FROM %6$s
                            WHERE queue_name = $1::text AND %7$s
                            ORDER BY %2$s
                            LIMIT $%9$d::int
                        ) AS b
                    ) AS s
                    WHERE s.wanted OR s.n = $%9$d::int
                    LIMIT $%8$d::int
                    """.formatted(number, order, ITEM_COLUMNS, state, RAW_COLUMNS, table, range, size, budget);
        }
    }
}
