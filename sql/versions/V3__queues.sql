-- reactive-workqueue schema version 3: a row per logical queue, beside the items, naming the
-- instance that keeps the queue's house (reap, stats, horizon) for the whole fleet and holding
-- what it last read, so every other instance can report it without reading it again. A new
-- table: nothing of the items table is rewritten or locked beyond the comment.
CREATE TABLE IF NOT EXISTS {{prefix}}work_queue_queues (
    queue_name        TEXT COLLATE "C" PRIMARY KEY,
    -- The instance keeping house, until keeper_until on the database clock; anyone may take
    -- the role over once that has passed.
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
    slot_xmin_age     BIGINT
);

COMMENT ON TABLE {{prefix}}work_queue_items IS 'reactive-workqueue schema 3';
