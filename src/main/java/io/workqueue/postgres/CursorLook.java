package io.workqueue.postgres;

import io.workqueue.internal.QueueMetrics;
import io.workqueue.internal.SqlStates;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;

/**
 * The look behind one queue instance's claim cursors: now and then, in the background, a read of the
 * first due item of every band ({@link Sql#lookBehindCursors}), handed to
 * {@link ClaimCursors#looked}, which moves each cursor there. What became due behind a cursor is then
 * handed out by the claims that follow, in claim order, ahead of anything newer in its band; if the
 * look found any, it wakes the instance's waiting claimers.
 *
 * <p>Why a look and not a claim from the head: a claim hands out at most its limit, so what it leaves
 * behind the cursor would wait for the next one, a claim's worth at a time; a claim takes row locks
 * and may wait on one (a completion riding it), which says nothing about what walking the head costs;
 * and a claim is bound by the write timeout, which a walk through a long-held horizon's history can
 * outlast every time.
 *
 * <p>Pacing: claims ask for a look ({@link #lookIfDue}) and get one when the last has ended at least
 * {@link #MIN_INTERVAL_NANOS} ago, and {@link #COST_FACTOR} times as long as it took: looks cost at
 * most a twentieth of one connection's time however much history a held horizon leaves at the heads
 * of the bands. Only the statement's own run counts (from sending it to its answer): never the wait
 * for a connection, and a look that would wait for a table lock fails fast instead
 * ({@link Sql#LOOK_SETTINGS}) and is tried again after the minimum interval. Other failures back off,
 * doubling from the minimum up to {@link #MAX_BACKOFF_NANOS}; a look never runs on a caller's
 * subscription, so no caller's cancellation or timeout ends it. One look at a time per instance.
 *
 * <p>Thread-safe.
 */
final class CursorLook {
    private static final Logger log = LoggerFactory.getLogger(CursorLook.class);

    /** The least time between the end of one look and the start of the next. */
    static final long MIN_INTERVAL_NANOS = TimeUnit.MILLISECONDS.toNanos(200);
    /** The next look waits at least this many times the last one's duration. */
    static final int COST_FACTOR = 20;
    /** The longest back-off after failed looks. */
    static final long MAX_BACKOFF_NANOS = TimeUnit.SECONDS.toNanos(30);
    /** Failed looks in a row after which the failures are logged at WARN rather than DEBUG. */
    private static final int FAILURES_WORTH_A_WARNING = 3;

    /**
     * What a look read: the bands with something due, highest first, each with its first due item's
     * {@code available_at} and key, and the statement's {@code now()}, in microseconds on the
     * database clock; and how long the statement ran, in nanoseconds.
     */
    record Found(Integer[] priorities, Long[] firstDueMicros, String[] firstDueKeys, long nowMicros, long tookNanos) {}

    /**
     * One look that ended, for tests: when it started and ended (on the look's clock), whether it
     * succeeded, how many bands it opened, and how long its statement ran.
     */
    record Ended(long startNanos, long endNanos, boolean succeeded, int opened, long tookNanos) {}

    private final String queueName;
    private final ClaimCursors cursors;
    private final Supplier<Mono<Found>> statement;
    private final Runnable wake;
    private final QueueMetrics metrics;
    private final LongSupplier nanoTime;
    private final AtomicBoolean running = new AtomicBoolean();
    /** When the next look may start; written before {@link #running} is released. */
    private volatile long nextNanos;
    /** Failed looks in a row; only touched by the look that holds {@link #running}. */
    private int failures;
    private volatile @Nullable Consumer<Ended> observer;
    private volatile boolean disabled;

    /**
     * @param statement runs one look; it must measure {@link Found#tookNanos} from sending the statement
     * @param wake      releases the instance's waiting claimers
     */
    CursorLook(String queueName, ClaimCursors cursors, Supplier<Mono<Found>> statement, Runnable wake,
            QueueMetrics metrics, LongSupplier nanoTime) {
        this.queueName = queueName;
        this.cursors = cursors;
        this.statement = statement;
        this.wake = wake;
        this.metrics = metrics;
        this.nanoTime = nanoTime;
        this.nextNanos = nanoTime.getAsLong();
    }

    /** Starts a look in the background if one is due and none runs; returns at once. */
    void lookIfDue() {
        long now = nanoTime.getAsLong();
        if (disabled || now - nextNanos < 0 || !running.compareAndSet(false, true)) {
            return;
        }
        if (now - nextNanos < 0) { // another look ended between the check and the flag
            running.set(false);
            return;
        }
        Mono<Found> look;
        try {
            look = statement.get().single();
        } catch (RuntimeException e) {
            look = Mono.error(e);
        }
        look.subscribe(found -> succeeded(now, found), error -> failed(now, error));
    }

    private void succeeded(long startNanos, Found found) {
        int opened = 0;
        try {
            opened = cursors.looked(found.priorities(), found.firstDueMicros(), found.firstDueKeys(), found.nowMicros(),
                    nanoTime.getAsLong());
            metrics.looked(found.tookNanos(), opened);
            if (failures >= FAILURES_WORTH_A_WARNING) {
                log.info("queue {}: looks behind the claim cursors work again", queueName);
            }
            failures = 0;
        } finally {
            long end = nanoTime.getAsLong();
            nextNanos = end + Math.max(MIN_INTERVAL_NANOS, COST_FACTOR * Math.max(found.tookNanos(), 0));
            running.set(false);
            if (opened > 0) {
                wake.run();
            }
            ended(new Ended(startNanos, end, true, opened, found.tookNanos()));
        }
    }

    private void failed(long startNanos, Throwable error) {
        long end = nanoTime.getAsLong();
        long delay;
        if (SqlStates.LOCK_NOT_AVAILABLE.equals(SqlStates.sqlState(error))) {
            delay = MIN_INTERVAL_NANOS; // a table lock held elsewhere: cheap to ask again
            log.debug("queue {}: a look behind the claim cursors waited for a table lock; trying again", queueName);
        } else {
            failures++;
            delay = Math.min(MAX_BACKOFF_NANOS, MIN_INTERVAL_NANOS << Math.min(failures - 1, 20));
            if (failures == FAILURES_WORTH_A_WARNING) {
                log.warn("queue {}: {} looks behind the claim cursors failed in a row; items that became due behind"
                        + " them (lapsed leases, late commits) wait until one succeeds. Last error: {}",
                        queueName, failures, error.toString());
            } else {
                log.debug("queue {}: a look behind the claim cursors failed ({} in a row)", queueName, failures, error);
            }
        }
        nextNanos = end + delay;
        running.set(false);
        ended(new Ended(startNanos, end, false, 0, 0));
    }

    private void ended(Ended look) {
        Consumer<Ended> listener = observer;
        if (listener != null) {
            listener.accept(look);
        }
    }

    /**
     * Starts no more looks, for tests that count the statements or connections of claims (claims
     * then read from the head until a look ends, in exact order).
     */
    void disableForTests() {
        disabled = true;
    }

    /** Calls {@code listener} after every look, on the thread that ended it; for tests. */
    void observeForTests(@Nullable Consumer<Ended> listener) {
        this.observer = listener;
    }
}
