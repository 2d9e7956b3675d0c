package io.workqueue.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.Exceptions;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * Announces one queue instance's committed writes on its notify channel, debounced: at most one
 * notifying commit per {@code minWakeInterval}, and no committed write waits much longer than that
 * interval for the notification that announces it.
 *
 * <p>Two kinds of write are announced. A group-committed write is {@linkplain #committed()
 * reported} once it has committed. A transactional enqueue runs in the caller's transaction, whose
 * end this instance does not see: it is {@linkplain #awaitCommit(String) handed over} as the
 * transaction's id, and the notifier asks the database, from a connection of its own, whether that
 * transaction has ended ({@code pg_xact_status}), announcing it once it has committed and never if
 * it aborted; unless the caller brackets its transaction ({@code ReactiveWorkQueue.announceAfterCommit}),
 * whose completion reports it as {@linkplain #committed() committed}, as a group commit is.
 *
 * <p>Everything happens in <em>ticks</em>: one statement that reads how the awaited transactions
 * ended and, in the same transaction, notifies if a write of this instance committed or any of
 * those transactions did. So a tick that finds nothing to announce queues no notification, and a
 * tick costs one round trip whatever it finds. Ticks are paced so that a steady stream of
 * transactional enqueues costs a bounded number of statements: a transaction is first asked about
 * {@link #MIN_POLL_GAP} after it was handed over (most commit within that), and however many arrive
 * meanwhile, they are asked about together, at that time; one still open after that is asked about
 * again after an eighth of its age (between {@link #MIN_POLL_GAP} and {@link #MAX_POLL_GAP}), so
 * one left open for long costs a statement only now and then. No tick runs before the interval
 * since the last notification has passed: any tick may notify.
 *
 * <p>Notifications go out from the instance's own connection, in autocommit, never in anybody's
 * business transaction: a notifying commit takes a lock every other notifying commit of the
 * database waits for, and this keeps that lock out of the caller's commit and to at most one of
 * this instance's commits per interval. Nothing in the queue's guarantees rests on them: a failed
 * tick is logged and forgotten, with the transactions it asked about; the poll is the backstop.
 *
 * <p>At most {@link #MAX_AWAITED} transactions are awaited at once; beyond that the oldest is
 * forgotten (its wakeup is left to the poll). One statement at a time, on the timer given and the
 * driver's threads; nothing blocks.
 *
 * <p>Thread-safe without a lock: every change of state is an event, and events run one at a time,
 * in the order they were queued, on whichever calling thread finds none running; a thread that
 * finds one running queues its event and returns. Writes are handed over from the driver's event
 * loops, and starting a tick (taking a connection, writing its statement) is work on the thread
 * that drives it: behind a lock, an event loop would wait for that work on another thread, and for
 * that thread to be scheduled again (on a busy machine, milliseconds).
 */
public final class Notifier {
    private static final Logger log = LoggerFactory.getLogger(Notifier.class);

    /**
     * How long after its hand-over a transaction is first asked about, and the shortest gap between
     * two ticks that only ask: the price of a transactional enqueue's wakeup is at most one
     * statement per this gap, however many transactions enqueue.
     */
    static final Duration MIN_POLL_GAP = Duration.ofMillis(5);
    /** The longest gap between two ticks while a transaction is awaited. */
    static final Duration MAX_POLL_GAP = Duration.ofMillis(500);
    /** The most transactions awaited at once. */
    static final int MAX_AWAITED = 10_000;

    /** {@code pg_xact_status} of a transaction still running. */
    public static final String IN_PROGRESS = "in progress";
    /** {@code pg_xact_status} of a transaction that committed. */
    public static final String COMMITTED = "committed";
    /** {@code pg_xact_status} of a transaction that rolled back. */
    public static final String ABORTED = "aborted";
    /** The status of a transaction the server no longer knows about ({@code pg_xact_status} null). */
    public static final String UNKNOWN = "unknown";

    /** What the notifier runs against the database. */
    @FunctionalInterface
    public interface Channel {
        /**
         * One tick, in a transaction of its own: reads the status of each of {@code awaited}, then
         * notifies if {@code notify}, or if any of them committed (or is {@link #UNKNOWN}), and
         * nothing otherwise. Emits whether it notified and each transaction's status
         * ({@code pg_xact_status}'s words, or {@link #UNKNOWN}), leaving out none.
         */
        Mono<Tick> tick(boolean notify, Collection<String> awaited);
    }

    /**
     * What one tick found and did.
     *
     * @param notified whether it sent a notification
     * @param statuses the status of each transaction asked about, by id
     */
    public record Tick(boolean notified, Map<String, String> statuses) {
        /** Copies the map. */
        public Tick {
            statuses = Map.copyOf(statuses);
        }
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

    /** Every change of state, one at a time (see {@link #serially}). */
    private final SerialEvents events = new SerialEvents(this::countAwaited, this::eventFailed);
    /** {@link #read} and {@link #unread} together, as the last event left them, for other threads. */
    private volatile int awaitedAfterLastEvent;

    // Everything below is confined to the events.
    /** Transactions asked about at least once and still open, by when they were handed over; oldest first. */
    private final LinkedHashMap<String, Long> read = new LinkedHashMap<>();
    /** Transactions handed over since the last tick began, by when; oldest first. */
    private final LinkedHashMap<String, Long> unread = new LinkedHashMap<>();
    /** When the youngest transaction of {@link #read} was handed over (or one younger that has since ended). */
    private long youngestRead;
    /** When the last tick began; only meaningful after one. */
    private long lastTick;
    /** A write of this instance has committed that no notification covers yet. */
    private boolean due;
    /** When the last notifying tick began; only meaningful once {@link #sent}. */
    private long lastSent;
    private boolean sent;
    /** A tick is in flight. */
    private boolean busy;
    private @Nullable Disposable wakeUp;
    /** When {@link #wakeUp} fires; only meaningful while it is set. */
    private long wakeUpTime;
    /** How many waits were set, so that a wait that fires knows whether it is still {@link #wakeUp}. */
    private long wakeUps;
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
        serially(() -> {
            if (closed) {
                return;
            }
            due = true;
            drive();
        });
    }

    /**
     * A transactional enqueue ran in the transaction {@code xid}: a notification goes out once that
     * transaction is found committed, none if it aborted.
     */
    public void awaitCommit(String xid) {
        serially(() -> {
            if (closed) {
                return;
            }
            long now = now();
            // A second enqueue in the same transaction: asked about with the first.
            if (!read.containsKey(xid)) {
                unread.putIfAbsent(xid, now);
            }
            if (read.size() + unread.size() > MAX_AWAITED) {
                Iterator<String> eldest = (read.isEmpty() ? unread : read).keySet().iterator();
                eldest.next();
                eldest.remove();
            }
            drive();
        });
    }

    /**
     * Stops watching: a notification that is due goes out now, whatever the interval, and nothing
     * is sent after it. Completes once that notification has been sent (or has failed); idempotent.
     */
    public Mono<Void> close() {
        return Mono.<Void>create(sink -> serially(() -> {
            closed = true;
            read.clear();
            unread.clear();
            cancelWakeUp();
            if (!busy && !due) {
                sink.success();
                return;
            }
            Runnable previous = onIdle;
            onIdle = () -> {
                if (previous != null) {
                    previous.run();
                }
                sink.success();
            };
            drive();
        }));
    }

    /**
     * How many transactions are awaited: handed over and not yet read as ended, as the last event
     * that ran left it (a hand-over another thread is still running is not counted yet). For tests.
     *
     * @return at most {@link #MAX_AWAITED}
     */
    public int awaitedCount() {
        return awaitedAfterLastEvent;
    }

    /**
     * Runs {@code event} after the events queued before it, one at a time: on this thread if no
     * other is running them, else on that one, and this returns at once. An event must not wait;
     * one that throws is logged and the others still run (a JVM-fatal error is rethrown).
     */
    private void serially(Runnable event) {
        events.run(event);
    }

    /** After each run of events: the count {@link #awaitedCount()} reads. */
    private void countAwaited() {
        awaitedAfterLastEvent = read.size() + unread.size();
    }

    private void eventFailed(Throwable error) {
        Exceptions.throwIfJvmFatal(error);
        log.error("queue {}: the notifier failed to handle an event; idle workers wake at their poll", name, error);
    }

    /** Decides what to do next: a tick now, a wait, or nothing. In an event. */
    private void drive() {
        if (busy) {
            return; // the tick in flight drives again when it ends
        }
        long now = now();
        if (!due && read.isEmpty() && unread.isEmpty()) {
            cancelWakeUp();
            idle();
            return;
        }
        long at;
        if (due && closed) {
            at = now;
        } else {
            at = due ? now : askAt(now);
            if (sent && at - (lastSent + intervalNanos) < 0) {
                at = lastSent + intervalNanos; // any tick may notify
            }
        }
        if (at - now <= 0) {
            tick(now);
        } else {
            wakeUpAt(at, now);
        }
    }

    /**
     * When to ask about the awaited transactions: {@link #MIN_POLL_GAP} after the first handed over
     * since the last tick, if any was; and, for those asked about already and still open, an eighth
     * of the youngest one's age (within the bounds) after the last tick.
     */
    private long askAt(long now) {
        long minGap = MIN_POLL_GAP.toNanos();
        long at = unread.isEmpty() ? Long.MAX_VALUE : unread.values().iterator().next() + minGap;
        if (!read.isEmpty()) {
            long again = lastTick + Math.min(Math.max((now - youngestRead) / 8, minGap), MAX_POLL_GAP.toNanos());
            at = at == Long.MAX_VALUE || again - at < 0 ? again : at;
        }
        return at;
    }

    private void tick(long now) {
        cancelWakeUp();
        busy = true;
        boolean notify = due;
        due = false;
        lastTick = now;
        for (Map.Entry<String, Long> handedOver : unread.entrySet()) {
            read.put(handedOver.getKey(), handedOver.getValue());
            youngestRead = handedOver.getValue();
        }
        unread.clear();
        List<String> xids = new ArrayList<>(read.keySet());
        long started = System.nanoTime();
        Mono.defer(() -> channel.tick(notify, xids))
                .doOnNext(tick -> ticked(tick, now, System.nanoTime() - started))
                .doOnError(error -> failed(notify, xids, error))
                .onErrorResume(e -> Mono.empty())
                .doFinally(signal -> serially(() -> {
                    busy = false;
                    drive();
                }))
                .subscribe();
    }

    /**
     * Forgets each transaction that has ended: one that committed is covered by the notification
     * the tick sent (it notifies whenever it finds one), one that aborted needs none.
     */
    private void ticked(Tick tick, long startedAt, long nanos) {
        if (tick.notified()) {
            listener.notified(nanos);
        }
        serially(() -> {
            if (tick.notified()) {
                sent = true;
                lastSent = startedAt;
            }
            for (Map.Entry<String, String> status : tick.statuses().entrySet()) {
                if (IN_PROGRESS.equals(status.getValue())) {
                    continue;
                }
                read.remove(status.getKey());
                if (!tick.notified() && !ABORTED.equals(status.getValue()) && !closed) {
                    due = true; // a channel that found a commit and did not notify: announce it
                }
            }
        });
    }

    private void failed(boolean notify, List<String> xids, Throwable error) {
        // The transactions asked about are forgotten rather than asked about again and again: a
        // failover, say, leaves ids the new primary calls "in the future". Their wakeups, and this
        // tick's notification, are left to the poll.
        log.warn("queue {}: the wakeup tick ({}{} awaited transactions) failed; idle workers wake at their poll: {}",
                name, notify ? "a notification and " : "", xids.size(), error.toString());
        serially(() -> xids.forEach(read::remove));
    }

    private void wakeUpAt(long at, long now) {
        if (wakeUp != null && wakeUpTime == at) {
            return; // a hand-over in a burst leaves the tick where it was: no timer churn per enqueue
        }
        cancelWakeUp();
        wakeUpTime = at;
        long wakeUpNumber = ++wakeUps;
        try {
            wakeUp = timer.schedule(() -> serially(() -> {
                // A wait cancelled after it fired still drives, which is harmless; it must not
                // forget the wait that replaced it.
                if (wakeUps == wakeUpNumber) {
                    wakeUp = null;
                }
                drive();
            }), at - now, TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException e) {
            // The timer is shut down, so the instance is closing: the poll covers what is left.
            log.debug("queue {}: the notifier's timer refused a wait: {}", name, e.toString());
        }
    }

    private void cancelWakeUp() {
        Disposable pending = wakeUp;
        if (pending != null) {
            wakeUp = null;
            pending.dispose();
        }
    }

    /**
     * Tells a waiting {@link #close()}, on the timer: the tick that ended the wait may have ended on
     * a driver's thread, where the caller's code should not run.
     */
    private void idle() {
        Runnable run = onIdle;
        if (run != null) {
            onIdle = null;
            try {
                timer.schedule(run);
            } catch (RejectedExecutionException e) {
                run.run(); // a timer shut down first must not leave close() waiting
            }
        }
    }

    private long now() {
        return timer.now(TimeUnit.NANOSECONDS);
    }
}
