package io.workqueue;

/**
 * The names of every meter a queue records when given a Micrometer {@code MeterRegistry} (see
 * {@link WorkQueueBuilder#meterRegistry}). Every meter carries the tag {@value #QUEUE_TAG} with the
 * queue's name. Times are recorded as Micrometer timers (base unit seconds), sizes as distribution
 * summaries.
 */
public final class WorkQueueMeters {
    /** The tag naming the logical queue on every meter. */
    public static final String QUEUE_TAG = "queue";
    /**
     * The tag saying how a group-committed write ended, on {@link #ENQUEUE_FLUSH_LATENCY}: one of
     * {@value #OUTCOME_SUCCESS}, {@value #OUTCOME_FAILURE}, {@value #OUTCOME_TIMEOUT}.
     */
    public static final String OUTCOME_TAG = "outcome";
    /** {@link #OUTCOME_TAG} of a write that committed. */
    public static final String OUTCOME_SUCCESS = "success";
    /** {@link #OUTCOME_TAG} of a write that failed (its callers received the error). */
    public static final String OUTCOME_FAILURE = "failure";
    /** {@link #OUTCOME_TAG} of a write abandoned at {@code writeTimeout} (its outcome unknown). */
    public static final String OUTCOME_TIMEOUT = "timeout";

    /** Counter: keys written by enqueues (after merging duplicates within a write). */
    public static final String ENQUEUED = "workqueue.enqueued";
    /** Counter: items leased by claims. */
    public static final String CLAIMED = "workqueue.claimed";
    /** Counter: claims that took over a lapsed lease; compare its rate with {@link #CLAIMED}'s. */
    public static final String RECLAIMED = "workqueue.reclaimed";
    /** Counter: items completed. */
    public static final String COMPLETED = "workqueue.completed";
    /**
     * Counter: completions that did not complete because the item was enqueued again while it was
     * leased; each runs once more. Not counted in {@link #COMPLETED}.
     */
    public static final String REQUEUED_DURING_LEASE = "workqueue.requeued.during.lease";
    /** Counter: items released. */
    public static final String RELEASED = "workqueue.released";
    /**
     * Counter: leases extended ({@code extend}, and {@code process} keeping long handlers alive
     * under {@link WorkerOptions#maxRunTime()}).
     */
    public static final String EXTENSIONS = "workqueue.extensions";
    /**
     * Counter: leases an extension named that were no longer the caller's (lapsed, and perhaps
     * claimed by another worker); under {@code process} each cancelled a handler whose result
     * would have been waste.
     */
    public static final String EXTENSIONS_REFUSED = "workqueue.extensions.refused";
    /** Counter: items snoozed, handed back without counting the attempt. */
    public static final String SNOOZED = "workqueue.snoozed";
    /**
     * Gauge, updated by {@code stats()} and every housekeeping round: 1 while the queue is paused
     * ({@link WorkQueueAdmin#pause}), else 0.
     */
    public static final String PAUSED = "workqueue.paused";
    /**
     * Gauge, in seconds: how long the queue has been paused, from the pause's instant (database
     * clock, as of the last reading) to this JVM's clock now; 0 while it runs.
     */
    public static final String PAUSED_DURATION = "workqueue.paused.duration";
    /** Counter: items removed. */
    public static final String REMOVED = "workqueue.removed";
    /** Counter: completed items deleted by reap. */
    public static final String REAPED = "workqueue.reaped";
    /**
     * Counter: notifying commits this instance made, each a payload-free notification on the
     * queue's channel in a transaction of its own: at most one per {@code minWakeInterval}, however
     * many writes it announces. A transactional enqueue whose caller asks to notify in its own
     * transaction ({@code enqueueNotifyingInTransaction}) is not counted: that commit is the
     * caller's.
     */
    public static final String NOTIFY_COMMITS = "workqueue.notify.commits";
    /**
     * Timer: one of those notifying commits, from sending its statement to its commit. Every
     * notifying commit in the database waits for the one before it to commit, so a growing time
     * here means notifications, anybody's, are queueing.
     */
    public static final String NOTIFY_COMMIT_LATENCY = "workqueue.notify.commit.latency";
    /** Counter: writes run again because PostgreSQL asked (SQLSTATE 40001, 40P01). */
    public static final String WRITE_RETRIES = "workqueue.write.retries";

    /** Gauge, updated by {@code stats()}: items not completed. */
    public static final String DEPTH = "workqueue.depth";
    /** Gauge, updated by {@code stats()}: items a claim would hand out now. */
    public static final String READY = "workqueue.ready";
    /** Gauge, updated by {@code stats()}: items out of attempts. */
    public static final String STALLED = "workqueue.stalled";
    /** Gauge, updated by {@code stats()}, in seconds: how long the oldest ready item has waited. */
    public static final String OLDEST_READY_AGE = "workqueue.oldest.ready.age";
    /**
     * Gauge, updated by {@code horizon()}, in seconds: how long the oldest transaction holding back
     * the database's MVCC horizon has been open. Database-wide, but tagged with the queue like the
     * rest, so each queue's dashboard shows what slows it.
     */
    public static final String HORIZON_AGE = "workqueue.horizon.age";

    /** Distribution summary: items leased per claim statement. */
    public static final String CLAIM_BATCH_SIZE = "workqueue.claim.batch.size";
    /** Timer: one claim statement, connection acquisition included. */
    public static final String CLAIM_LATENCY = "workqueue.claim.latency";
    /**
     * Timer: one look behind the instance's claim cursors (the background read that finds what became
     * due behind them: lapsed leases, late commits, bands other instances write), the statement's
     * own run. Looks are spaced twenty times their duration, so a growing look time (a held
     * horizon's history at the heads of the bands) means a growing wait for what lies behind the
     * cursors.
     */
    public static final String CLAIM_LOOK = "workqueue.claim.look";
    /**
     * Counter: bands in which a look found something due behind the instance's claim cursors (or
     * that the instance did not know); the claims that follow hand those items out first.
     */
    public static final String CLAIM_LOOK_FOUND = "workqueue.claim.look.found";
    /** Distribution summary: distinct keys per group-committed enqueue write. */
    public static final String ENQUEUE_FLUSH_SIZE = "workqueue.enqueue.flush.size";
    /**
     * Timer: one group-committed enqueue write, retries included, tagged with its
     * {@link #OUTCOME_TAG}. Failed and timed-out writes are recorded too, so a stall shows while it
     * lasts (as {@value #OUTCOME_TIMEOUT} writes near {@code writeTimeout}), not only once the
     * database recovers.
     */
    public static final String ENQUEUE_FLUSH_LATENCY = "workqueue.enqueue.flush.latency";

    /**
     * Gauge, updated by {@code stats()} (and by every instance's housekeeping round, from the
     * keeper's reading), in seconds: how long the longest-running live lease of the queue has run
     * since its claim, across the fleet; 0 when nothing is leased. What Kubernetes' workqueue calls
     * the longest-running processor: a handler stuck on one item shows here long before the item's
     * lease lapses. Leases taken before schema version 4 carry no claim instant and are left out.
     */
    public static final String LEASE_LONGEST = "workqueue.lease.longest";
    /**
     * Timer, one record per item claimed: how long the item waited between becoming claimable (its
     * availability, or the lapse of a lease it had) and the claim that leased it, on the database
     * clock. The lag operators alert on: it grows when the fleet falls behind, whatever the depth.
     */
    public static final String CLAIM_LAG = "workqueue.claim.lag";
    /**
     * Timer, one record per item completed: how long from the claim that leased it to its
     * completion, on the database clock; the time the work took, retries of the acknowledgement
     * included. Items completed without having been claimed are not recorded.
     */
    public static final String CLAIM_TO_COMPLETION = "workqueue.claim.to.completion";

    private WorkQueueMeters() {}
}
