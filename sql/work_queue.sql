-- reactive-workqueue: one table serves every logical queue (queue_name partitions it).
-- {{prefix}} is replaced by the validated table prefix plus "_" (or nothing for the default).
-- Every statement is idempotent, so this file can be re-run, or handed to a migration tool; run on
-- a table an earlier release created, it upgrades it in place (see "Schema versions" below).

CREATE TABLE IF NOT EXISTS {{prefix}}work_queue_items (
    -- Bytewise collation, so the server's ORDER BY and the client's code-point sort agree:
    -- every writer then takes row locks in one total order and cannot deadlock.
    queue_name   TEXT COLLATE "C" NOT NULL,
    item_key     TEXT COLLATE "C" NOT NULL,
    priority     INT              NOT NULL DEFAULT 0,
    attempts     INT              NOT NULL DEFAULT 0,
    enqueued_at  TIMESTAMPTZ      NOT NULL DEFAULT now(),
    available_at TIMESTAMPTZ      NOT NULL DEFAULT now(),
    -- 'epoch' means "no lease": never leased, released and lapsed are then one comparison,
    -- and a claim can tell a lapsed lease (after the epoch) from a dropped one. '-infinity' is no
    -- lease too: handed back by a complete to run once more, not claimed since, so no complete
    -- (a retried one, say) completes it before it runs.
    lease_until  TIMESTAMPTZ      NOT NULL DEFAULT 'epoch',
    -- NULL while pending.
    completed_at TIMESTAMPTZ,
    last_error   TEXT,
    -- Set by an enqueue that lands while the item is leased: the earliest availability those
    -- enqueues asked for. Completing the lease then runs the item once more instead; NULL when not
    -- asked (schema version 2).
    requested_at TIMESTAMPTZ,
    -- When the item's latest claim leased it (NULL before its first; schema version 4). With
    -- attempts it names that claim, which attempts alone cannot: attempts start over when a
    -- completed item is enqueued again. A lease extension or a snooze acts only while the claim
    -- its caller holds is still the latest, so a straggler never touches its successor's lease.
    claimed_at   TIMESTAMPTZ,
    -- The W3C trace contexts (traceparent) of the enqueues the item's next run answers, oldest
    -- first, at most a handful; written only by a queue that stores them (schema version 5).
    trace_contexts TEXT[],
    PRIMARY KEY (queue_name, item_key)
)
-- Room on each page for a row's next version: a claim rewrites the row but no indexed column, so
-- with space on the page the new version is a HOT update that adds no index entries. Measured
-- (docs/benchmarks/ANALYSIS.md): drains 5-25 % faster than at the default 100. Applies to tables
-- this creates; for an existing one: ALTER TABLE ... SET (fillfactor = 70), then VACUUM FULL or
-- let pages turn over.
WITH (fillfactor = 70);

-- Serves the claim in its own order; partial, so it is sized by the backlog, not the history.
CREATE INDEX IF NOT EXISTS {{prefix}}work_queue_items_due_idx
    ON {{prefix}}work_queue_items (queue_name, priority DESC, available_at, item_key)
    WHERE completed_at IS NULL;

-- Serves the reaper: completed rows oldest first.
CREATE INDEX IF NOT EXISTS {{prefix}}work_queue_items_reap_idx
    ON {{prefix}}work_queue_items (queue_name, completed_at)
    WHERE completed_at IS NOT NULL;

-- Schema versions. 1: the first release. 2: requested_at (an enqueue during a lease is not lost).
-- Upgrading a version-1 table adds a nullable column without a default: a catalog change that
-- rewrites nothing, though it takes the table's lock for a moment. The table's comment records
-- the version, so WorkQueueMigrations.version() can tell what a table is at.
ALTER TABLE {{prefix}}work_queue_items ADD COLUMN IF NOT EXISTS requested_at TIMESTAMPTZ;

-- 3: work_queue_queues, a row per logical queue naming the instance that keeps its house for
-- the fleet, with that instance's last reading. A new table beside the items; nothing rewritten.
CREATE TABLE IF NOT EXISTS {{prefix}}work_queue_queues (
    queue_name        TEXT COLLATE "C" PRIMARY KEY,
    -- The instance keeping house (reap, stats, horizon) until keeper_until on the database
    -- clock; anyone may take the role over once that has passed.
    keeper            TEXT        NOT NULL,
    keeper_until      TIMESTAMPTZ NOT NULL,
    -- The keeper's last reading (NULL before its first): the stats and the horizon.
    read_at           TIMESTAMPTZ,
    pending           BIGINT,
    ready             BIGINT,
    leased            BIGINT,
    stalled           BIGINT,
    completed         BIGINT,
    completed_capped  BOOLEAN,
    oldest_ready_us   BIGINT,
    horizon_us        BIGINT,
    horizon_pid       INT,
    slot_xmin_age     BIGINT,
    -- When an operator paused the queue, fleet-wide (NULL while it runs; schema version 4):
    -- claims hand out nothing until it is resumed. A row made by a pause names no keeper yet
    -- ('' until '-infinity'): the next housekeeping round takes the role.
    paused_at         TIMESTAMPTZ,
    -- The keeper's last reading of the longest-running live lease, in microseconds since its
    -- claim (schema version 5).
    longest_lease_us  BIGINT
);

-- 4: claimed_at on the items and paused_at on the queues (above, for a table this creates). Upgrading
-- a version-3 table adds both as nullable columns without a default: catalog changes that rewrite
-- nothing, though the items table's takes its lock for a moment.
ALTER TABLE {{prefix}}work_queue_items ADD COLUMN IF NOT EXISTS claimed_at TIMESTAMPTZ;
ALTER TABLE {{prefix}}work_queue_queues ADD COLUMN IF NOT EXISTS paused_at TIMESTAMPTZ;

-- 5: trace_contexts on the items and longest_lease_us on the queues (above, for a table this
-- creates). Upgrading a version-4 table adds both as nullable columns without a default.
ALTER TABLE {{prefix}}work_queue_items ADD COLUMN IF NOT EXISTS trace_contexts TEXT[];
ALTER TABLE {{prefix}}work_queue_queues ADD COLUMN IF NOT EXISTS longest_lease_us BIGINT;

COMMENT ON TABLE {{prefix}}work_queue_items IS 'reactive-workqueue schema 5';
