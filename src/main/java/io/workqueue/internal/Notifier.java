package io.workqueue.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * Announces one queue instance's committed writes on its notify channel, debounced: at most one
 * notifying commit per {@code minWakeInterval}, and no committed write waits longer than that
 * interval (plus a round trip) for the notification that announces it.
 *
 * <p>Two kinds of write are announced. A group-committed write is {@linkplain #committed()
 * reported} once it has committed. A transactional enqueue runs in the caller's transaction, whose
 * end this instance does not see: it is {@linkplain #awaitCommit(String) handed over} as the
 * transaction's id, and the notifier asks the database, from a connection of its own, whether that
 * transaction has ended ({@code pg_xact_status}), announcing it once it has committed and never if
 * it aborted. The asking is paced by the age of the youngest transaction awaited (an eighth of it,
 * between {@link #MIN_POLL_GAP} and {@link #MAX_POLL_GAP}): a transaction that commits soon after
 * its enqueue is found within a millisecond or two, one that stays open for long costs a statement
 * only now and then, and the wakeup arrives within about an eighth of the transaction's own
 * duration. While a notification is already due no one is asked: the notification covers whatever
 * commits before it. The notification itself reads the statuses of the transactions still awaited
 * before it commits, so those it finds committed are covered by it and not announced again.
 *
 * <p>Notifications go out from the instance's own connection, in autocommit, never in anybody's
 * business transaction: a notifying commit takes a lock every other notifying commit of the
 * database waits for, and this keeps that lock out of the caller's commit and to at most one of
 * this instance's commits per interval. Nothing in the queue's guarantees rests on them: a failed
 * notification or status read is logged and forgotten, the poll is the backstop.
 *
 * <p>At most {@link #MAX_AWAITED} transactions are awaited at once; beyond that the oldest is
 * forgotten (its wakeup is left to the poll). One statement at a time, on the timer given and the
 * driver's threads; nothing blocks. Thread-safe.
 */
public final class Notifier {
    private static final Logger log = LoggerFactory.getLogger(Notifier.class);

    /** The shortest gap between two status reads. */
    static final Duration MIN_POLL_GAP = Duration.ofMillis(1);
    /** The longest gap between two status reads while a transaction is awaited. */
    static final Duration MAX_POLL_GAP = Duration.ofMillis(500);
    /** The most transactions awaited at once. */
    static final int MAX_AWAITED = 10_000;

    /** {@code pg_xact_status} of a transaction still running. */
    public static final String IN_PROGRESS = "in progress";
    /** {@code pg_xact_status} of a transaction that committed. */
    public static final String COMMITTED = "committed";
    /** The status of a transaction the server no longer knows about ({@code pg_xact_status} null). */
    public static final String UNKNOWN = "unknown";

    /** What the notifier runs against the database. */
    public interface Channel {
        /**
         * Sends one notification in a transaction of its own, reading first the status of each of
         * {@code awaited}; emits each transaction's status ({@code pg_xact_status}'s words, or
         * {@link #UNKNOWN} where the server no longer knows), leaving out none.
         */
        Mono<Map<String, String>> notify(Collection<String> awaited);

        /** Reads the status of each of {@code awaited}, as {@link #notify} does, without notifying. */
        Mono<Map<String, String>> statuses(Collection<String> awaited);
    }

    /** Told about every notifying commit this notifier made; must not throw. */
    @FunctionalInterface
    public interface Listener {
        /** Listens to nothing. */
        Listener NONE = nanos -> {};

        /** A notifying commit succeeded, {@code nanos} after its statement was sent. */
        void notified(long nanos);
    }

    private final String name;
    private final Channel channel;
    private final long intervalNanos;
    private final Scheduler timer;
    private final Listener listener;

    // Everything below is guarded by this.
    /** Transaction ids awaited, by when they were handed over; oldest first. */
    private final LinkedHashMap<String, Long> awaited = new LinkedHashMap<>();
    /** When the youngest awaited transaction was handed over. */
    private long youngest;
    /** When the last status read started; only meaningful after one. */
    private long lastPoll;
    private boolean polled;
    /** A commit has been seen that no notification covers yet. */
    private boolean due;
    /** When the last notification was sent; only meaningful once {@link #sent}. */
    private long lastSent;
    private boolean sent;
    /** A statement is in flight. */
    private boolean busy;
    private @Nullable Disposable wakeUp;
    private boolean closed;
    private @Nullable Runnable onIdle;

    /**
     * @param name     names the queue in logs
     * @param channel  what runs the statements
     * @param interval the least time between two notifications ({@code minWakeInterval})
     * @param timer    the scheduler for the waits and the clock
     * @param listener told about each notifying commit
     */
    public Notifier(String name, Channel channel, Duration interval, Scheduler timer, Listener listener) {
        this.name = name;
        this.channel = channel;
        this.intervalNanos = interval.toNanos();
        this.timer = timer;
        this.listener = listener;
    }

    /** A write of this instance has committed: a notification goes out now or at the end of the interval. */
    public void committed() {
        synchronized (this) {
            if (closed) {
                return;
            }
            due = true;
            drive();
        }
    }

    /**
     * A transactional enqueue ran in the transaction {@code xid}: a notification goes out once that
     * transaction is found committed, none if it aborted.
     */
    public void awaitCommit(String xid) {
        synchronized (this) {
            if (closed) {
                return;
            }
            long now = now();
            awaited.remove(xid); // a second enqueue in the same transaction: it counts as the youngest
            awaited.put(xid, now);
            youngest = now;
            if (awaited.size() > MAX_AWAITED) {
                Iterator<String> eldest = awaited.keySet().iterator();
                eldest.next();
                eldest.remove();
            }
            drive();
        }
    }

    /**
     * Stops watching: a notification that is due goes out now, whatever the interval, and nothing
     * is sent after it. Completes once that notification has been sent (or has failed); idempotent.
     */
    public Mono<Void> close() {
        return Mono.<Void>create(sink -> {
            boolean idle;
            synchronized (this) {
                closed = true;
                awaited.clear();
                cancelWakeUp();
                idle = !busy && !due;
                if (!idle) {
                    Runnable previous = onIdle;
                    onIdle = () -> {
                        if (previous != null) {
                            previous.run();
                        }
                        sink.success();
                    };
                    drive();
                }
            }
            if (idle) {
                sink.success();
            }
        });
    }

    /**
     * How many transactions are awaited: handed over and not yet read as ended. For tests.
     *
     * @return at most {@link #MAX_AWAITED}
     */
    public synchronized int awaitedCount() {
        return awaited.size();
    }

    /** Decides what to do next: a statement now, a wait, or nothing. Hold the lock. */
    private void drive() {
        if (busy) {
            return; // the statement in flight drives again when it ends
        }
        long now = now();
        if (due) {
            long at = closed || !sent ? now : lastSent + intervalNanos;
            if (at - now <= 0) {
                send(now);
            } else {
                wakeUpAt(at, now);
            }
        } else if (!awaited.isEmpty()) {
            long at = pollAt(now);
            if (at - now <= 0) {
                poll(now);
            } else {
                wakeUpAt(at, now);
            }
        } else {
            cancelWakeUp();
            idle();
        }
    }

    /**
     * When to read the statuses next: an eighth of the youngest awaited transaction's age (within
     * the bounds) after the later of the last read and that transaction's hand-over.
     */
    private long pollAt(long now) {
        long from = polled && lastPoll - youngest > 0 ? lastPoll : youngest;
        long gap = Math.min(Math.max((now - youngest) / 8, MIN_POLL_GAP.toNanos()), MAX_POLL_GAP.toNanos());
        return from + gap;
    }

    private void send(long now) {
        cancelWakeUp();
        busy = true;
        due = false;
        sent = true;
        lastSent = now;
        List<String> xids = new ArrayList<>(awaited.keySet());
        long started = System.nanoTime();
        subscribe(channel.notify(xids), statuses -> {
            listener.notified(System.nanoTime() - started);
            // Read before this notification committed: whatever committed by then is covered.
            ended(statuses, false);
        }, error -> log.warn("queue {}: sending the wakeup notification failed; idle workers wake at their poll: {}",
                name, error.toString()));
    }

    private void poll(long now) {
        cancelWakeUp();
        busy = true;
        polled = true;
        lastPoll = now;
        List<String> xids = new ArrayList<>(awaited.keySet());
        subscribe(channel.statuses(xids), statuses -> ended(statuses, true), error -> {
            // Forgotten rather than asked about again and again: a failover, say, leaves ids the new
            // primary calls "in the future". Their wakeups are left to the poll.
            log.warn("queue {}: reading whether {} transactions that enqueued have committed failed; their"
                    + " wakeups are left to the poll: {}", name, xids.size(), error.toString());
            synchronized (this) {
                xids.forEach(awaited::remove);
            }
        });
    }

    /**
     * Forgets each transaction that has ended; one that committed makes a notification due if
     * {@code announce} (a status read), and is covered already otherwise (read by a notification).
     */
    private void ended(Map<String, String> statuses, boolean announce) {
        synchronized (this) {
            for (Map.Entry<String, String> status : statuses.entrySet()) {
                String state = status.getValue();
                if (IN_PROGRESS.equals(state)) {
                    continue;
                }
                awaited.remove(status.getKey());
                // Forgotten by the server: committed as far as a wakeup is concerned; a
                // wakeup too many costs a claim.
                if (announce && !closed && (UNKNOWN.equals(state) || COMMITTED.equals(state))) {
                    due = true;
                }
            }
        }
    }

    /** Runs one statement; whatever it does, the notifier is driven again when it ends. */
    private void subscribe(Mono<Map<String, String>> statement,
            Consumer<Map<String, String>> onResult, Consumer<Throwable> onError) {
        Mono.defer(() -> statement)
                .doOnNext(onResult)
                .doOnError(onError)
                .onErrorResume(e -> Mono.empty())
                .doFinally(signal -> {
                    synchronized (this) {
                        busy = false;
                        drive();
                    }
                })
                .subscribe();
    }

    private void wakeUpAt(long at, long now) {
        cancelWakeUp();
        wakeUp = timer.schedule(() -> {
            synchronized (this) {
                wakeUp = null;
                drive();
            }
        }, at - now, TimeUnit.NANOSECONDS);
    }

    private void cancelWakeUp() {
        Disposable pending = wakeUp;
        if (pending != null) {
            wakeUp = null;
            pending.dispose();
        }
    }

    /** Tells a waiting {@link #close()}, on the timer: not under this lock, where its caller's code would run. */
    private void idle() {
        Runnable run = onIdle;
        if (run != null) {
            onIdle = null;
            timer.schedule(run);
        }
    }

    private long now() {
        return timer.now(TimeUnit.NANOSECONDS);
    }
}
