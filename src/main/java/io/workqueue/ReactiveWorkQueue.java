package io.workqueue;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A leased work queue over one PostgreSQL table: producers enqueue keys, workers claim leases on
 * due keys, do the work, and complete them. A worker that dies lets its lease lapse on the database
 * clock, and the key goes to another worker flagged {@link Item#reclaimed()}. Delivery is
 * at-least-once: work must be idempotent.
 *
 * <p><b>Reactive contract.</b> Every {@code Mono} and {@code Flux} returned is cold: nothing
 * touches the database until subscription, and each subscription performs the operation once. Bad
 * arguments are signalled as {@code onError} at subscription, never thrown by the call. No method
 * blocks; results are emitted on the driver's event-loop threads, so downstream code must not block
 * there either. Cancelling a subscriber never leaves the queue inconsistent: at worst a lease lapses
 * and an item is handed out again.
 *
 * <p><b>Errors.</b> Database errors that are not retried surface as the driver's
 * {@code R2dbcException}. Writes that PostgreSQL asks to retry (SQLSTATE 40001, 40P01) are retried
 * up to {@link WorkQueueConfig#writeAttempts()} runs.
 *
 * <p>Instances are thread-safe. One instance per logical queue and process is the intended shape:
 * the group commit and the wake floor are per instance.
 *
 * @param <K> the key type
 */
public interface ReactiveWorkQueue<K> {

    /** The longest accepted key encoding, in UTF-8 bytes. */
    int MAX_KEY_LENGTH = 512;

    /**
     * The longest duration the library acts on: 100 years (36,525 days), which it treats as
     * "forever". Every duration it accepts (leases, delays, polls, back-offs, retention, timeouts)
     * that is longer is taken as exactly this, never wrapped or refused: a lease of
     * {@code Duration.ofMillis(Long.MAX_VALUE)} is a lease of 100 years. The cap keeps
     * {@code now() + duration} far inside PostgreSQL's timestamp range and every timer inside
     * Reactor's nanosecond range.
     */
    Duration MAX_DURATION = Duration.ofDays(36_525);

    /**
     * Starts building a queue over {@code connectionFactory} (plain or pooled; a pool is strongly
     * advised) for keys of {@code keyType}.
     */
    static <K> WorkQueueBuilder<K> builder(ConnectionFactory connectionFactory, Class<K> keyType) {
        return new WorkQueueBuilder<>(connectionFactory, keyType);
    }

    /** The logical queue this instance serves: {@link WorkQueueConfig#name()}. */
    String name();

    /**
     * Enqueues entries through the group commit: enqueues on this instance are merged into one
     * upsert, and exactly one upsert is in flight at a time; what arrives meanwhile rides the next
     * upserts in arrival order, at most {@link WorkQueueConfig#maxWriteBatch()} entries each (one
     * call with more goes alone, unsplit). Entries naming the same
     * key merge first (highest priority, shortest delay), the same rule the upsert applies to a row
     * already in the table: on an outstanding item priority only rises and availability only moves
     * earlier, attempts and last error are kept and a live lease is not revoked; a completed item is
     * restarted with the new priority and delay, attempts reset and last error cleared. An enqueue
     * that lands on a live lease also marks the item, so that completing that lease runs it once
     * more (see {@link #complete(Collection)}): an enqueue during a lease is never lost.
     *
     * <p>The returned {@code Mono} completes once the upsert carrying these rows has committed, so
     * enqueue-then-claim sees the keys. Cancelling it stops waiting but does not cancel the shared
     * write. A failed write fails every caller in its batch. Signals {@link InvalidKeyException} for
     * a bad key (nothing of this call is written), {@link QueueClosedException} after
     * {@link #close()}, and a {@link WriteTimeoutException} if the write carrying it outlives
     * {@link WorkQueueConfig#enqueueTimeout()}. That timeout bounds one write, not this call: behind
     * a backlog the call first waits for the writes ahead of it, so its worst case is (writes ahead
     * of it + 1) × {@code enqueueTimeout}. An empty collection completes at once.
     */
    Mono<Void> enqueue(Collection<Entry<K>> entries);

    /** Varargs form of {@link #enqueue(Collection)}. */
    @SuppressWarnings("unchecked")
    Mono<Void> enqueue(Entry<K>... entries);

    /** Enqueues keys with priority 0 and no delay; see {@link #enqueue(Collection)}. */
    Mono<Void> enqueueKeys(Collection<K> keys);

    /** Varargs form of {@link #enqueueKeys(Collection)}. */
    @SuppressWarnings("unchecked")
    Mono<Void> enqueueKeys(K... keys);

    /**
     * Enqueues entries on the caller's connection, inside whatever transaction it has open,
     * bypassing the group commit: the rows commit or roll back with the caller's transaction. Same
     * merge rule, statement and lock order as {@link #enqueue(Collection)}. The connection is
     * neither closed nor committed. Allowed after {@link #close()}, since no shared state is used.
     */
    Mono<Void> enqueue(Connection connection, Collection<Entry<K>> entries);

    /**
     * Leases up to {@code limit} due items in one statement, ordered by priority (highest first),
     * then availability, then key. Each priority band is read from where this instance's last
     * claim ended, so claims do not walk history a held MVCC horizon keeps; what became due behind
     * that point (a lapsed lease, a transactional enqueue committed late, a raised priority, a band
     * only other processes write) is handed out by the instance's next sweep, a claim from the head
     * in exact order, run at least every 200 ms but at most 1/50 of the claim time (README,
     * "Guarantees"). {@code limit <= 0} or above
     * {@link WorkQueueConfig#maxClaimBatch()} means {@code maxClaimBatch}. Rows locked by a
     * concurrent claimer are skipped and replaced, so a short batch means the queue is nearly
     * drained. An empty queue gives an empty list. {@code lease} must be positive, else
     * {@code IllegalArgumentException}; a lease longer than {@link #MAX_DURATION} is one of
     * {@code MAX_DURATION}. A claim that PostgreSQL aborts as a deadlock (possible,
     * rarely, when a row's updater commits as the claim meets it) leased nothing and is retried
     * like a write. Cancelling while the statement runs cancels it on the server; cancelling after
     * it ran leaves its leases to lapse.
     */
    Mono<List<Item<K>>> claim(int limit, Duration lease);

    /**
     * Completes {@code completed} and leases up to {@code limit} due items, in one statement and
     * one transaction: one round trip where {@link #complete} followed by {@link #claim} takes two.
     * The completion takes its locks in key order, before the claim leases anything; the claim
     * skips locked rows as {@link #claim} does and never re-claims a key it is completing. Limit
     * and lease follow {@link #claim}'s rules. Retried like the other writers on 40001/40P01.
     * Emits the leased items (possibly none). A key enqueued again during its lease is handed back
     * as {@link #complete(Collection)} describes; this statement does not claim it, the next does.
     */
    Mono<List<Item<K>>> completeAndClaim(Collection<K> completed, int limit, Duration lease);

    /**
     * The worker: claims as handler slots free up, runs {@code handler} on each item with at most
     * {@link WorkerOptions#concurrency()} running at once, acknowledges successes through
     * {@link #completeAndClaim} (so a busy worker pays one statement per round for completing and
     * claiming), and releases failures after {@link WorkerOptions#backoff()} of their attempts,
     * recording the error. A handler succeeds when its publisher completes.
     *
     * <p><b>What a handler's failure does.</b> Whatever goes wrong in a handler fails its own item
     * only: the publisher signalling an error, {@code handler} throwing any exception or any
     * {@link Error} (an {@code AssertionError}, a {@code StackOverflowError}), or returning
     * {@code null}. The item is released with the error as its last error and the slot freed. A
     * back-off function that throws or returns {@code null} is replaced for that item by
     * {@link WorkerOptions#exponentialBackoff}; the item is still released. A handler still running
     * when its lease ends is cancelled and its slot freed, without completing or releasing the item:
     * its lease has lapsed and the item belongs to whoever reclaims it. Only a JVM-fatal error (out
     * of memory, an internal or linkage error, thread death) ends the stream, with that error.
     *
     * <p><b>Demand.</b> Emits each item once its completion has committed, on a driver thread.
     * Nothing is claimed while downstream has no outstanding demand, and a claim is sized so that
     * the items running, waiting for acknowledgement and acknowledged stay within outstanding demand
     * plus {@code concurrency}: at most {@code concurrency} completed items are ever buffered.
     *
     * <p><b>Database errors.</b> After a short claim it waits with
     * {@link #awaitWork(Duration) awaitWork(poll)}. Transient failures — a lost connection, no
     * connection from the pool in time, SQLSTATE 40001 or 40P01, an acknowledgement that did not
     * commit within {@link WorkQueueConfig#enqueueTimeout()} ({@link WriteTimeoutException}) — are
     * logged and retried with bounded back-off, keeping the acknowledgements; any other error
     * terminates the stream (unacknowledged items then lapse and are handed out again). A statement
     * (acknowledging and claiming) with no answer within the options' lease is abandoned and counts
     * as transient: a connection that went half-open (a network cut) gives no other sign, and an
     * answer that late could only hand out leases that have lapsed. Abandoning it closes its
     * connection. A stored key the codec can no longer decode never reaches the handler (see
     * {@link KeyDecodingException}).
     *
     * <p><b>Cancellation</b> stops claiming: running handlers are not cancelled, and what they
     * finish is still completed (retried like any acknowledgement). Items leased by a round that was
     * in flight at cancellation are released at once.
     *
     * <p>Handlers are called on the driver's event-loop threads: a handler that blocks must move its
     * work elsewhere itself (e.g. {@code subscribeOn(Schedulers.boundedElastic())}).
     */
    Flux<Item<K>> process(Function<Item<K>, ? extends Publisher<?>> handler, WorkerOptions options);

    /**
     * An endless stream of leased items paced by demand: it never leases more items than downstream
     * has requested and not yet received, capped per statement by
     * {@link WorkQueueConfig#maxClaimBatch()}. When a claim comes back short it waits with
     * {@link #awaitWork(Duration) awaitWork(poll)} before claiming again. A transient failure (a
     * lost connection, no connection from the pool in time, SQLSTATE 40001, 40P01; only the
     * driver's, the pool's and the network's own failures count) is logged and retried with bounded
     * exponential back-off, and the stream continues; any other error terminates it. A claim with no
     * answer within {@code lease} is abandoned (its connection closed) and counts as transient: a
     * connection that went half-open (a network cut) gives no other sign, and its answer could only
     * hand out leases that have lapsed. A stored key the codec can no longer decode is set aside,
     * never emitted (see {@link KeyDecodingException}). Cancellation stops claiming and cancels a claim in
     * flight on the server. Emits on driver threads. {@code lease} and {@code poll} follow the rules
     * of {@link #claim} and {@link #awaitWork}.
     *
     * <p><b>Demand is the batch size.</b> Operators that request unbounded demand — {@code next()},
     * {@code blockFirst()}, {@code subscribe()} without a subscriber of your own, {@code take(n, false)}
     * — make it lease {@code maxClaimBatch} items per statement, and whatever the operator then
     * drops lapses unprocessed. For one item use {@code claim(1, lease)}; for a few, {@code take(n)}
     * (which requests only {@code n}) or {@code limitRate(n)}.
     */
    Flux<Item<K>> claimStream(Duration lease, Duration poll);

    /**
     * Marks items completed (kept until reaped), drops their leases and clears their last errors;
     * with {@link WorkQueueConfig#deleteOnComplete()} it deletes their rows instead. Unknown and
     * already-completed keys are ignored; idempotent. Emits how many items this call completed.
     *
     * <p>An item enqueued again while it was leased is not completed: the work its lease did may
     * predate that enqueue, so it is handed back to run once more (however many enqueues arrived),
     * unleased, with fresh attempts, due at the earliest availability those enqueues asked for, or
     * at once. It is kept even with {@code deleteOnComplete}, is not in the count this emits, and is
     * counted by the {@code workqueue.requeued.during.lease} meter instead of
     * {@code workqueue.completed}. Until a claim leases it again no complete completes it, so
     * retrying a complete whose answer was lost cannot cancel that run.
     *
     * <p>Group-committed like {@link #enqueue(Collection)}: concurrent completes on this instance are
     * merged into one lock-ordered statement, with one in flight at a time, so many workers
     * acknowledging small batches cost one transaction per round instead of one each. A key named by
     * two concurrent calls is counted for one of them only, so the counts add up to the items
     * completed. Cancelling stops waiting but does not cancel the shared write (the items may still
     * be completed); a failed write fails every caller in its batch, and a write that outlives
     * {@link WorkQueueConfig#enqueueTimeout()} fails with {@link WriteTimeoutException}. Writes
     * carry at most {@link WorkQueueConfig#maxWriteBatch()} keys, taken in arrival order, and the
     * timeout bounds one write: a call behind others waits for them first, so its worst case is
     * (writes ahead of it + 1) × {@code enqueueTimeout}. Retryable
     * conflicts (40001, 40P01) are retried up to {@link WorkQueueConfig#writeAttempts()}. An empty
     * collection emits 0 at once. Unlike enqueue, complete keeps working after {@link #close()}.
     */
    Mono<Long> complete(Collection<K> keys);

    /** Varargs form of {@link #complete(Collection)}. */
    @SuppressWarnings("unchecked")
    Mono<Long> complete(K... keys);

    /**
     * Hands items back: drops their leases and makes them available after {@code delay} (negative
     * means now, longer than {@link #MAX_DURATION} means {@code MAX_DURATION}), recording {@code cause}'s message (bounded to 1024 characters; {@code null} stores
     * none) as the last error. Attempts are kept; completed items are not touched. An enqueue
     * during the lease is absorbed: the release runs the item again anyway, after its delay. Emits
     * how many items were released.
     */
    Mono<Long> release(Duration delay, @Nullable Throwable cause, Collection<K> keys);

    /** Varargs form of {@link #release(Duration, Throwable, Collection)}. */
    @SuppressWarnings("unchecked")
    Mono<Long> release(Duration delay, @Nullable Throwable cause, K... keys);

    /** Deletes items whether leased, pending or completed. Emits how many rows were deleted. */
    Mono<Long> remove(Collection<K> keys);

    /** Varargs form of {@link #remove(Collection)}. */
    @SuppressWarnings("unchecked")
    Mono<Long> remove(K... keys);

    /**
     * Deletes completed items older than {@link WorkQueueConfig#retention()}, at most
     * {@link WorkQueueConfig#reapBatchSize()} per call, skipping rows another transaction holds.
     * Emits how many were deleted; call again while it returns the batch size.
     */
    Mono<Long> reap();

    /** A health snapshot, read in one statement; see {@link Stats}. */
    Mono<Stats> stats();

    /**
     * What is holding back the database's MVCC horizon, read in one statement on the database
     * clock; see {@link Horizon}. A transaction kept open for long (a session left idle in
     * transaction, a long report, {@code pg_dump}) keeps every row version the queue's churn leaves
     * behind: the table and its indexes grow, and sweeps and reaps, which read from the head of an
     * index, slow down while it lasts (claims read from cursors and do not): call this beside
     * {@link #stats()} and alert on
     * {@link Horizon#oldestTransactionAge()}. Logs a WARN, at most once a minute per instance,
     * while it is older than {@link WorkQueueConfig#horizonWarning()}, and feeds the
     * {@code workqueue.horizon.age} gauge. Seeing other roles' sessions needs
     * {@code pg_read_all_stats} (or superuser); without it only this role's count.
     */
    Mono<Horizon> horizon();

    /**
     * Completes when a wakeup arrives from the builder's wakeup source, or when {@code poll}
     * elapses, whichever comes first. Wakeups complete waits at most once per
     * {@link WorkQueueConfig#minWakeInterval()} on this instance: a wake inside the floor is held
     * for the rest of the interval, not dropped, and a wake that arrives while nobody waits is kept
     * for the next wait. Without a wakeup source it is a plain delay. {@code poll} must be positive,
     * else {@code IllegalArgumentException}; a poll longer than {@link #MAX_DURATION} is one of
     * {@code MAX_DURATION}.
     */
    Mono<Void> awaitWork(Duration poll);

    /**
     * Flushes whatever enqueues are pending, then refuses every later enqueue with
     * {@link QueueClosedException}. Idempotent: every call completes once the flush has (the flush
     * also covers merged {@link #complete} calls already submitted). Other methods keep working, so
     * a worker may still complete what it holds. Unlike the rest of this
     * interface, closing starts when the method is called; the {@code Mono} only reports the flush.
     */
    Mono<Void> close();
}
