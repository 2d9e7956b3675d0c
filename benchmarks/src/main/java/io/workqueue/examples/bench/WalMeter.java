package io.workqueue.examples.bench;

/**
 * What a run wrote to the server's write-ahead log, from {@code pg_stat_wal} and
 * {@code pg_stat_bgwriter}: records, full-page images and bytes, and the checkpoints that began
 * meanwhile. Cluster-wide, so it describes a run only while nothing else writes.
 *
 * <p>A cost that, unlike CPU time, does not move with the machine's load: every row a statement
 * locks, updates or indexes is a record here. A row locked and then let go (a claim's
 * {@code FOR UPDATE SKIP LOCKED} that finds, on recheck, that another member leased it since the
 * claim's snapshot) is a lock record too, though the claim hands out nothing for it.
 */
final class WalMeter {
    private WalMeter() {}

    /** Cumulative counters at one instant. */
    record Snapshot(long records, long fullPageImages, long bytes, long checkpoints, String lsn) {
        Use since(Snapshot before) {
            return new Use(records - before.records, fullPageImages - before.fullPageImages, bytes - before.bytes,
                    checkpoints - before.checkpoints, before.lsn, lsn);
        }
    }

    /**
     * What a run wrote: records, full-page images, bytes, how many checkpoints began meanwhile, and
     * where in the log it began and ended (for {@code pg_waldump --stats=record -s FROM -e TO}, while
     * the segments are still there).
     */
    record Use(long records, long fullPageImages, long bytes, long checkpoints, String fromLsn, String toLsn) {
        double recordsPerItem(long items) {
            return items > 0 ? (double) records / items : Double.NaN;
        }

        double bytesPerItem(long items) {
            return items > 0 ? (double) bytes / items : Double.NaN;
        }
    }

    static Snapshot take(Db db) {
        return db.query("SELECT wal_records, wal_fpi, wal_bytes::int8,"
                        + " (SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter), pg_current_wal_lsn()::text FROM pg_stat_wal",
                row -> new Snapshot(row.get(0, Long.class), row.get(1, Long.class), row.get(2, Long.class), row.get(3, Long.class),
                        row.get(4, String.class)))
                .get(0);
    }
}
