package io.workqueue;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.workqueue.internal.base.CommitScope;
import io.workqueue.internal.base.Durations;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.Set;
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
 * arguments (a {@code null} collection, a non-positive lease) are signalled as {@code onError} at
 * subscription ({@code NullPointerException}, {@code IllegalArgumentException}), never thrown by
 * the call; a key that cannot be stored, or that its codec fails to encode, is an
 * {@link InvalidKeyException}, likewise at subscription. No method blocks; results are emitted on the driver's event-loop threads (or, for
 * timers, on the builder's {@linkplain WorkQueueBuilder#timer timer}), so downstream code must not
 * block there either. Cancelling a subscriber never leaves the queue inconsistent: at worst a lease
 * lapses and an item is handed out again. Each method below says what its cancellation does.
 *
 * <p><b>Errors.</b> Database errors that are not retried surface as the driver's
 * {@code R2dbcException}, or as a {@link WorkQueueException} with it as the cause. Writes that
 * PostgreSQL asks to retry (SQLSTATE 40001, 40P01) are retried up to
 * {@link WorkQueueConfig#writeAttempts()} runs.
 *
 * <p><b>Varargs.</b> {@code enqueue} has fixed-arity forms for one, two and three entries: a call
 * with more entries goes to the varargs form, which creates a generic array and so draws an
 * "unchecked generic array creation" warning at the call site (an interface method cannot be
 * {@code @SafeVarargs}); pass a {@code List.of(...)} to avoid it. The key varargs
 * ({@code enqueueKeys}, {@code complete}, {@code release}, {@code remove}) warn only when the key
 * type is itself generic.
 *
 * <p>Instances are thread-safe. One instance per logical queue and process is the intended shape:
 * the group commits and the wake floor are per instance.
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
    Duration MAX_DURATION = Durations.MAX;

    /**
     * Starts building a queue over {@code connectionFactory} (plain or pooled; a pool is strongly
     * advised) for keys of {@code keyType}. Nothing is checked or connected here: the builder's
     * {@link WorkQueueBuilder#build()} checks everything, a {@code null} argument included.
     *
     * @param connectionFactory where the queue's connections come from; a PostgreSQL factory
     * @param keyType           the class of the keys, which picks the default {@link KeyCodec}
     * @param <K>               the key type
     * @return a new builder
     */
    static <K> WorkQueueBuilder<K> builder(ConnectionFactory connectionFactory, Class<K> keyType) {
        return new WorkQueueBuilder<>(connectionFactory, keyType);
    }

    /**
     * Runs {@code transaction}, which the caller promises spans one transaction of its own from
     * before its first {@link #enqueue(Connection, Collection) transactional enqueue} to after its
     * commit, and announces those enqueues once it completes: each queue instance that enqueued
     * inside it reports a committed write, as a group commit does, and its wakeup goes out from
     * the instance's own connection at once or at the end of the current
     * {@link WorkQueueConfig#minWakeInterval()}. The enqueues inside hand over no transaction to be
     * asked about, so this costs no statement of its own: without the bracket, every instance that
     * enqueued in a caller's transaction asks the database how it ended, a statement every 5 ms
     * while transactions are awaited. Nor does the wakeup wait for a check (the first comes 5 ms
     * after the enqueue): on the fleet benchmark, with a 1 ms interval, the median from commit to a
     * waiting {@code claimStream} fell from 4.5 to 3.8 ms; throughput was the same. Use it where the
     * caller's code owns the whole transaction:
     *
     * <pre>{@code
     * ReactiveWorkQueue.announceAfterCommit(Mono.usingWhen(connections.create(),
     *         connection -> Mono.from(connection.beginTransaction())
     *                 .then(saveOrder(connection, order))
     *                 .then(queue.enqueue(connection, List.of(Entry.of(order.id()))))
     *                 .then(Mono.from(connection.commitTransaction())),
     *         Connection::close))
     * }</pre>
     *
     * <p>Or around a {@code TransactionalOperator}'s or {@code @Transactional} method's
     * {@code Mono}, which completes after its commit. What the promise is worth: nothing rests on
     * it but promptness. If {@code transaction} completes without its transaction having committed
     * (it rolled back and completed anyway, say), listeners wake and find nothing; if it fails or
     * is cancelled, nothing is announced, even where the transaction did commit (a failure after
     * the commit), and the rows wait for the poll or the next wakeup. Brackets nest: only the
     * outermost announces, once it has completed. Enqueues the bracket does not see (a subscription
     * of their own, outside its context) hand over their transaction as usual.
     * {@link #enqueueNotifyingInTransaction} is unaffected: it notifies in the caller's commit.
     *
     * <p>Cold: each subscription runs {@code transaction} once, in a bracket of its own. It emits
     * what {@code transaction} emits, on its threads; the announcements run on the thread that
     * completes it, and never block. A {@code null} argument fails the subscription with a
     * {@code NullPointerException}.
     *
     * @param transaction the caller's transaction, its commit included
     * @param <T>         what it emits
     * @return {@code transaction}, announcing its enqueues on completion
     */
    static <T> Mono<T> announceAfterCommit(Mono<T> transaction) {
        return CommitScope.around(transaction);
    }

    /**
     * The logical queue this instance serves.
     *
     * @return {@link WorkQueueConfig#name()} of the queue's configuration
     */
    String name();

    /**
     * The configuration this instance was built with: its table, limits and timeouts.
     *
     * @return the configuration given to {@link WorkQueueBuilder#config}
     */
    WorkQueueConfig config();

    /**
     * Enqueues entries through the group commit: enqueues on this instance are merged into one
     * upsert, and exactly one upsert is in flight at a time; what arrives meanwhile rides the next
     * upserts in arrival order, at most {@link WorkQueueConfig#maxWriteBatch()} entries each (one
     * call with more goes alone, unsplit). Entries naming the same key merge first (highest
     * priority, shortest delay), the same rule the upsert applies to a row already in the table: on
     * an outstanding item priority only rises and availability only moves earlier, attempts and
     * last error are kept and a live lease is not revoked; a completed item is restarted with the
     * new priority and delay, attempts reset and last error cleared. An enqueue that lands on a
     * live lease also marks the item, so that completing that lease runs it once more (see
     * {@link #complete(Collection)}): an enqueue during a lease is never lost.
     *
     * <p><b>Wakeups.</b> With a {@link WorkQueueConfig#notifyChannel() notify channel} (and
     * {@link WorkQueueConfig#notifyOnEnqueue()} on), the upsert itself does not notify: once it has
     * committed, this instance sends one payload-free notification from a transaction of its own,
     * at once if its last one was at least {@link WorkQueueConfig#minWakeInterval()} ago, otherwise
     * at the end of that interval, covering every write committed meanwhile. So listeners never
     * wake before the rows are visible, the instance makes at most one notifying commit per
     * interval however many writes it runs, and the {@code Mono} does not wait for the
     * notification. A notification that fails is logged; idle workers then find the rows at their
     * poll.
     *
     * <p>Cold: subscribing encodes and vets the keys and submits them to the group commit; each
     * subscription submits them again (which is harmless: enqueue is idempotent). The
     * {@code Mono} completes, on a driver thread, once the upsert carrying these rows has
     * committed, so enqueue-then-claim sees the keys. Cancelling it stops waiting but does not
     * cancel the shared write: the rows may still land.
     *
     * <p>Errors: {@link InvalidKeyException} for a bad key (nothing of this call is written, and
     * it never joins a shared write); {@code NullPointerException} for a {@code null} collection
     * or entry; {@link QueueClosedException} after {@link #close()}; the write's own failure,
     * which fails every caller in its batch; and {@link WriteTimeoutException} if the write
     * carrying it outlives {@link WorkQueueConfig#writeTimeout()}. That timeout bounds one write,
     * not this call: behind a backlog the call first waits for the writes ahead of it, so its worst
     * case is (writes ahead of it + 1) × {@code writeTimeout}. An empty collection completes at
     * once, touching nothing.
     *
     * @param entries the entries to enqueue; not retained after subscription
     * @return a cold {@code Mono} that completes once the entries are durable
     */
    Mono<Void> enqueue(Collection<Entry<K>> entries);

    /**
     * Enqueues one entry: {@link #enqueue(Collection)} of a list holding {@code entry}. A
     * fixed-arity form, so the call draws no generic-array warning.
     *
     * @param entry the entry to enqueue; {@code null} is signalled at subscription
     * @return a cold {@code Mono} that completes once the entry is durable; see
     *         {@link #enqueue(Collection)}
     */
    default Mono<Void> enqueue(Entry<K> entry) {
        return enqueue(Collections.singletonList(entry));
    }

    /**
     * Enqueues two entries: {@link #enqueue(Collection)} of a list holding them. A fixed-arity
     * form, so the call draws no generic-array warning.
     *
     * @param first  an entry to enqueue
     * @param second another entry to enqueue
     * @return a cold {@code Mono} that completes once the entries are durable; see
     *         {@link #enqueue(Collection)}
     */
    default Mono<Void> enqueue(Entry<K> first, Entry<K> second) {
        return enqueue(Arrays.asList(first, second));
    }

    /**
     * Enqueues three entries: {@link #enqueue(Collection)} of a list holding them. A fixed-arity
     * form, so the call draws no generic-array warning.
     *
     * @param first  an entry to enqueue
     * @param second another entry to enqueue
     * @param third  a third entry to enqueue
     * @return a cold {@code Mono} that completes once the entries are durable; see
     *         {@link #enqueue(Collection)}
     */
    default Mono<Void> enqueue(Entry<K> first, Entry<K> second, Entry<K> third) {
        return enqueue(Arrays.asList(first, second, third));
    }

    /**
     * Varargs form of {@link #enqueue(Collection)}, reached by calls with four or more entries
     * (fewer go to the fixed-arity forms). Such a call creates a generic array and so draws an
     * "unchecked generic array creation" warning at the call site; {@code enqueue(List.of(...))}
     * draws none. A {@code null} array is signalled at subscription.
     *
     * @param entries the entries to enqueue; the array is read at subscription, not copied
     * @return a cold {@code Mono} that completes once the entries are durable; see
     *         {@link #enqueue(Collection)}
     */
    @SuppressWarnings("unchecked")
    Mono<Void> enqueue(Entry<K>... entries);

    /**
     * Enqueues keys with priority 0 and no delay: {@link #enqueue(Collection)} of
     * {@link Entry#of} each key, with the same group commit, completion, cancellation and errors.
     *
     * @param keys the keys to enqueue
     * @return a cold {@code Mono} that completes once the keys are durable
     */
    Mono<Void> enqueueKeys(Collection<K> keys);

    /**
     * Varargs form of {@link #enqueueKeys(Collection)}. Warning-free at the call site unless the
     * key type is itself generic.
     *
     * @param keys the keys to enqueue; a {@code null} array is signalled at subscription
     * @return a cold {@code Mono} that completes once the keys are durable
     */
    @SuppressWarnings("unchecked")
    Mono<Void> enqueueKeys(K... keys);

    /**
     * Enqueues entries on the caller's connection, inside whatever transaction it has open,
     * bypassing the group commit: the rows commit or roll back with the caller's transaction. Same
     * merge rule, statement and lock order as {@link #enqueue(Collection)}. The connection is
     * neither closed nor committed. Allowed after {@link #close()}, since no shared state is used.
     *
     * <p>Cold: subscribing runs the one upsert on {@code connection}; the {@code Mono} completes
     * on a driver thread when the statement has run (not committed: that is the caller's). Errors:
     * {@link InvalidKeyException} (nothing is written), {@code NullPointerException} for a
     * {@code null} connection, collection or entry, and the statement's own failure, which leaves
     * the caller's transaction to roll back. Cancelling abandons the statement's result; whether
     * its rows stay is up to the caller's transaction. Not bounded by
     * {@link WorkQueueConfig#writeTimeout()}: the caller owns the connection, and its timeouts.
     *
     * <p><b>Wakeups.</b> With a {@link WorkQueueConfig#notifyChannel() notify channel} (and
     * {@link WorkQueueConfig#notifyOnEnqueue()} on), nothing is queued in the caller's transaction:
     * a transaction that notifies takes, at commit, a lock every other notifying commit of the
     * database waits for, held through its WAL flush, and that would serialise the callers'
     * business transactions. Instead the upsert returns the transaction's id, and this instance
     * asks the database from a connection of its own whether that transaction has ended: 5 ms
     * after the statement, together with every transaction handed over meanwhile, and then at a
     * pace that slows with the transaction's age (about an eighth of it, at least every half
     * second); once it has committed, the wakeup goes out as for {@link #enqueue(Collection)}
     * (debounced, at most one notifying commit per {@link WorkQueueConfig#minWakeInterval()}); if
     * it rolled back, nothing is sent. A transaction that commits within milliseconds wakes
     * listeners within a few more. The cost is one small statement per check on this instance's
     * connection factory (the same statement sends the notification when it finds a commit),
     * shared by all the transactions awaited at the time: at most one per 5 ms however many
     * callers enqueue. Transactions
     * handed over after {@link #close()} are not awaited. Callers who own the transaction can save
     * those checks: inside {@link #announceAfterCommit(Mono)} the enqueue hands nothing over, and
     * the bracket's completion announces it. Callers who want the notification in
     * their own commit ask for it with {@link #enqueueNotifyingInTransaction}.
     *
     * @param connection the caller's connection, with or without an open transaction
     * @param entries    the entries to enqueue
     * @return a cold {@code Mono} that completes once the upsert has run on {@code connection}
     */
    Mono<Void> enqueue(Connection connection, Collection<Entry<K>> entries);

    /**
     * {@link #enqueue(Connection, Collection)} with the wakeup notification queued in the caller's
     * transaction, in the same statement as the rows: it is delivered the moment the caller
     * commits, and not at all on rollback. The price is the caller's: its commit takes the
     * database-wide notify lock, and waits for every other notifying commit in the database ahead
     * of it, which at high commit rates costs throughput database-wide. Ask for it when a wakeup at
     * commit matters more than that; otherwise use {@link #enqueue(Connection, Collection)}, whose
     * wakeup follows the commit within milliseconds. Sends nothing, exactly like
     * {@link #enqueue(Connection, Collection)}, when the queue has no channel or
     * {@link WorkQueueConfig#notifyOnEnqueue()} is off. Not debounced and not counted in the
     * notify meters: each call notifies in its caller's transaction.
     *
     * <p>Cold, with the same errors, cancellation and thread as
     * {@link #enqueue(Connection, Collection)}. This default suits a queue that sends no
     * notifications: it is {@link #enqueue(Connection, Collection)}.
     *
     * @param connection the caller's connection, with or without an open transaction
     * @param entries    the entries to enqueue
     * @return a cold {@code Mono} that completes once the upsert (and its notification, pending
     *         until the caller commits) has run on {@code connection}
     */
    default Mono<Void> enqueueNotifyingInTransaction(Connection connection, Collection<Entry<K>> entries) {
        return enqueue(connection, entries);
    }

    /**
     * Leases up to {@code limit} due items in one statement, ordered by priority (highest first),
     * then availability, then key. Each priority band is read from where this instance's last
     * claim ended, so claims do not walk history a held MVCC horizon keeps. What became due behind
     * that point (a lapsed lease, a transactional enqueue committed late, a raised priority, a band
     * only other processes write, the database clock stepping back) is found by the instance's next
     * look behind its cursors, a read in the background that locks nothing and runs at least every
     * 200 ms while the instance claims, spaced twenty times its own duration; the claims after it
     * hand those items out first, in claim order, claim after claim until none is left (README,
     * "Guarantees"). {@code limit <= 0} or above {@link WorkQueueConfig#maxClaimBatch()} means
     * {@code maxClaimBatch}: the cap is per call. Rows locked by a concurrent claimer are skipped
     * and replaced, so a short batch means that nothing more was due in claim order from this
     * instance's cursors, except what its next look finds. A lease longer than {@link #MAX_DURATION} is
     * one of {@code MAX_DURATION}. A claim that PostgreSQL aborts as a deadlock (possible, rarely,
     * when a row's updater commits as the claim meets it) leased nothing and is retried like a
     * write.
     *
     * <p><b>Claims merge.</b> At most two leasing statements (this, or {@link #completeAndClaim})
     * are in flight per queue instance, the second only once the first has run 50 ms (a claim
     * normally takes a few: one at a time, they merge best, and one waiting on a lock still holds
     * up the others for no longer than that); claims for the same lease that arrive meanwhile ride
     * the next statement together, their limits added up (within
     * {@link WorkQueueConfig#maxWriteBatch()}, so one merged statement may lease more than
     * {@code maxClaimBatch}, never more than {@code maxWriteBatch}), and each gets its own items, in
     * claim order, as many as it asked for. So however many loops of a process claim, they never race each other over
     * the same rows, and they share one statement's cost.
     *
     * <p>Cold: subscribing submits the claim to the leasing group commit; the {@code Mono} emits
     * the leased items (an empty list when nothing is due, never an error) on a driver thread.
     * Errors: {@code IllegalArgumentException} for a lease under one microsecond (the database
     * clock's resolution: a shorter lease would end as it began) or {@code null};
     * {@link WriteTimeoutException} when the statement does not finish within
     * {@link WorkQueueConfig#writeTimeout()} (it is cancelled on the server: it leased nothing, or
     * its leases lapse); the statement's own failure otherwise.
     *
     * <p><b>Cancellation.</b> Cancelling before the statement carrying this claim starts drops the
     * claim; cancelling while it runs cancels it on the server if no other claim rides it, and
     * otherwise undoes this claim's share as soon as it commits (the leases go back to what they
     * were, and the attempts are not counted). Cancelling after the items were emitted leaves their
     * leases to lapse.
     *
     * @param limit the most items to lease; 0 or less, or more than {@code maxClaimBatch}, means
     *              {@code maxClaimBatch}
     * @param lease how long the items are leased, on the database clock; at least one microsecond
     * @return a cold {@code Mono} of the leased items, in claim order
     */
    Mono<List<Item<K>>> claim(int limit, Duration lease);

    /**
     * Completes {@code completed} and leases up to {@code limit} due items, in one statement and
     * one transaction: one round trip where {@link #complete} followed by {@link #claim} takes two.
     * The completion takes its locks in key order, before the claim leases anything; the claim
     * skips locked rows as {@link #claim} does and never re-claims a key it is completing. Limit
     * and lease follow {@link #claim}'s rules, and so do merging and cancellation: concurrent
     * calls on one instance (the workers of {@link #process}) share one statement, which completes
     * every key they name and then leases for all of them; this call's completion is then committed
     * together with theirs, and waits for their row locks too. Retried like the other writers on
     * 40001/40P01. A key enqueued again during its lease is handed back as
     * {@link #complete(Collection)} describes; this statement does not claim it, the next does.
     *
     * <p>Cold: subscribing submits the request to the leasing group commit; the {@code Mono} emits
     * the leased items (possibly none) on a driver thread once the transaction has committed.
     * Errors: {@code IllegalArgumentException} for a lease under one microsecond or {@code null};
     * {@code NullPointerException} for a {@code null} collection; {@link InvalidKeyException} for
     * a key that cannot be stored (nothing is completed or claimed); {@link WriteTimeoutException}
     * past {@link WorkQueueConfig#writeTimeout()} (outcome unknown: the completion may have
     * committed, and completing again is harmless). Cancellation is {@link #claim}'s; a completion
     * already sent may still commit.
     *
     * @param completed the keys to complete first; unknown and completed keys are ignored
     * @param limit     the most items to lease, as in {@link #claim}
     * @param lease     how long the items are leased; at least one microsecond
     * @return a cold {@code Mono} of the leased items, in claim order
     */
    Mono<List<Item<K>>> completeAndClaim(Collection<K> completed, int limit, Duration lease);

    /**
     * The worker: claims as handler slots free up, runs {@code handler} on each item with at most
     * {@link WorkerOptions#concurrency()} running at once, acknowledges successes through
     * {@link #completeAndClaim} (so a busy worker pays one leasing write per round for completing
     * and claiming; where the workers' merged write completes 16 keys or more, it commits the
     * completion in a statement of its own and claims right after, two round trips rather than
     * one: a claim behind a long completion in one statement steps on rows other instances leased
     * meanwhile, which in a fleet costs the database more than the round trip saves), and releases
     * failures after {@link WorkerOptions#backoff()} of their attempts, recording the error. A
     * handler succeeds when its publisher completes.
     *
     * <p>Cold: nothing is claimed until subscription, and each subscription is a worker of its
     * own. The {@code Flux} never completes by itself.
     *
     * <p><b>What a handler's failure does.</b> Whatever goes wrong in a handler fails its own item
     * only: the publisher signalling an error, {@code handler} throwing any exception or any
     * {@link Error} (an {@code AssertionError}, a {@code StackOverflowError}), or returning
     * {@code null}. The item is released with the error as its last error and the slot freed. A
     * back-off function that throws or returns {@code null} is replaced for that item by
     * {@link WorkerOptions#exponentialBackoff}; the item is still released. A handler failing with
     * {@link SnoozeException} snoozes its item instead ({@link #snooze}: no attempt counted, no
     * error recorded). A handler still running
     * when its lease ends is cancelled and its slot freed, without completing or releasing the item:
     * its lease has lapsed and the item belongs to whoever reclaims it. With
     * {@link WorkerOptions#maxRunTime()} the worker keeps a running handler's lease alive instead
     * ({@link #extend}, one statement for all the handlers due), cancels and releases a handler that
     * outruns that maximum, and cancels one whose lease it finds taken over. Only a JVM-fatal error (out
     * of memory, an internal or linkage error, thread death) ends the stream, with that error.
     *
     * <p><b>Demand.</b> Emits each item once its completion has committed, on a driver thread.
     * Nothing is claimed while downstream has no outstanding demand, and a claim is sized so that
     * the items running, waiting for acknowledgement and acknowledged stay within outstanding demand
     * plus {@code concurrency}: at most {@code concurrency} completed items are ever buffered.
     *
     * <p><b>Database errors.</b> After a short claim it waits with
     * {@link #awaitWork(Duration) awaitWork(poll)}. Transient failures — a lost connection, no
     * connection from the pool in time, a pooled connection that failed its validation (no
     * SQLSTATE: the dead connections a pool kept idle through a failover), no free connection slot
     * (SQLSTATE 53300), a server that turned read-only (SQLSTATE 25006, an old primary back as a
     * standby), SQLSTATE 40001 or 40P01, an acknowledgement that did not commit within
     * {@link WorkQueueConfig#writeTimeout()} ({@link WriteTimeoutException}) — are logged and
     * retried with bounded back-off, keeping the acknowledgements; any other error terminates the
     * stream, logged at ERROR (unacknowledged items then lapse and are handed out again). A statement (acknowledging
     * and claiming) with no answer within the options' lease is abandoned and counts as transient: a
     * connection that went half-open (a network cut) gives no other sign, and an answer that late
     * could only hand out leases that have lapsed. Abandoning it closes its connection. A stored key
     * the codec can no longer decode never reaches the handler (see {@link KeyDecodingException}). A
     * {@code null} handler or options are signalled as {@code NullPointerException} at
     * subscription.
     *
     * <p><b>Cancellation</b> stops claiming: running handlers are not cancelled, and what they
     * finish is still completed (retried like any acknowledgement). Items leased by a round that was
     * in flight at cancellation are released at once.
     *
     * <p><b>Threads.</b> Handlers never run on the database driver's threads unless asked to: by
     * default each subscription calls its handler, and subscribes to what it returns, on a pool of
     * its own of at most {@code concurrency} threads, where blocking is allowed. A handler that
     * blocks costs only its own slot; enqueues, other queues' claims and health checks go on. The
     * pool is shut down once the stream has ended and its last running handler has finished (no thread of it outlives the work, so a plain program exits when its main method returns); a handler still blocking its thread when
     * its lease ends is interrupted. {@link WorkerOptions#handlerScheduler()} chooses another
     * scheduler, among them {@code Schedulers.immediate()}: the driver's threads, no hand-off, for
     * handlers that never block; a call that holds such a thread longer than 100 ms is logged at
     * WARN naming the handler.
     *
     * @param handler does the work of one item; its publisher's completion is success, its error
     *                failure; what it emits is ignored
     * @param options the worker's concurrency, lease, poll, claim batch and back-off
     * @return a cold, endless {@code Flux} of the items whose completion has committed
     */
    Flux<Item<K>> process(Function<Item<K>, ? extends Publisher<?>> handler, WorkerOptions options);

    /**
     * {@link #process(Function, WorkerOptions) process(handler, options)} with a graceful stop, for
     * a service shutting down: on the first signal of {@code stop} (an element, completion or an
     * error; it is subscribed with the worker and cancelled when the worker ends) the worker stops
     * claiming at once, lets the handlers already running finish, completes what succeeds and
     * releases what fails as usual, hands back at once anything a claim in flight at that moment
     * leased, delivers what it completed as downstream requests it, and then completes. Every item
     * it leased is then completed or released, none left to lapse, unless a handler outlives its
     * lease (it is cancelled and its item lapses, as always) or the database fails meanwhile.
     *
     * <p>Nothing bounds how long that takes but the handlers' leases: a caller that cannot wait
     * cancels the stream, which stops as {@link #process(Function, WorkerOptions)} describes.
     * Everything else — demand, errors, threads, what a handler's failure does — is as there; a
     * {@code null} stop is signalled as {@code NullPointerException} at subscription, like a
     * {@code null} handler or options.
     *
     * @param handler does the work of one item, as in {@link #process(Function, WorkerOptions)}
     * @param options the worker's concurrency, lease, poll, claim batch and back-off
     * @param stop    its first signal of any kind starts the graceful stop
     * @return a cold {@code Flux} of the items whose completion has committed, which completes
     *         once the stop has finished
     */
    Flux<Item<K>> process(Function<Item<K>, ? extends Publisher<?>> handler, WorkerOptions options,
            Publisher<?> stop);

    /**
     * An endless stream of leased items paced by demand: it never leases more items than downstream
     * has requested and not yet received, capped per claim by
     * {@link WorkQueueConfig#maxClaimBatch()} (claims of several streams of one instance may ride
     * one statement, as {@link #claim} describes). When a claim comes back short it waits with
     * {@link #awaitWork(Duration) awaitWork(poll)} before claiming again. A stored key the codec
     * can no longer decode is set aside, never emitted (see {@link KeyDecodingException}).
     * {@code lease} and {@code poll} follow the rules of {@link #claim} and {@link #awaitWork}.
     *
     * <p>Cold: nothing is claimed until subscription, and each subscription claims for itself. It
     * never completes by itself. Emits on driver threads. Errors: a transient failure (a lost
     * connection, no connection from the pool in time, a pooled connection that failed its
     * validation, no free connection slot, a server that turned read-only, SQLSTATE 53300, 25006,
     * 40001, 40P01; only the driver's, the pool's and the network's own failures count) is logged
     * and retried with bounded exponential back-off, and the stream continues; any other error
     * terminates it, logged at ERROR, and so does a lease under one microsecond or a poll that is not positive
     * ({@code IllegalArgumentException}). A claim with no answer within {@code lease} is abandoned
     * (its connection closed) and counts as transient: a connection that went half-open (a network
     * cut) gives no other sign, and its answer could only hand out leases that have lapsed.
     * Cancellation stops claiming, and a claim in flight is cancelled on the server or, if it shares
     * its statement with other claims, undone (see {@link #claim}); items already emitted keep their
     * leases until they lapse or are completed.
     *
     * <p><b>Demand is the batch size.</b> Operators that request unbounded demand — {@code next()},
     * {@code blockFirst()}, {@code subscribe()} without a subscriber of your own, {@code take(n, false)}
     * — make it lease {@code maxClaimBatch} items per statement, and whatever the operator then
     * drops lapses unprocessed. For one item use {@code claim(1, lease)}; for a few, {@code take(n)}
     * (which requests only {@code n}) or {@code limitRate(n)}.
     *
     * @param lease how long each item is leased; at least one microsecond
     * @param poll  the longest wait between claims while the queue is empty; positive
     * @return a cold, endless {@code Flux} of leased items
     */
    Flux<Item<K>> claimStream(Duration lease, Duration poll);

    /**
     * Marks items completed (kept until reaped), drops their leases and clears their last errors;
     * with {@link WorkQueueConfig#deleteOnComplete()} it deletes their rows instead. Unknown and
     * already-completed keys are ignored; idempotent.
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
     * completed. Writes carry at most {@link WorkQueueConfig#maxWriteBatch()} keys, taken in arrival
     * order. Unlike enqueue, complete keeps working after {@link #close()}.
     *
     * <p>Cold: subscribing vets the keys and submits them; the {@code Mono} emits, on a driver
     * thread, how many items this call completed once the write has committed. Cancelling stops
     * waiting but does not cancel the shared write (the items may still be completed). Errors:
     * {@link InvalidKeyException} and {@code NullPointerException} for bad keys (nothing of this
     * call is written); the write's own failure, which fails every caller in its batch, after
     * retryable conflicts (40001, 40P01) were retried up to
     * {@link WorkQueueConfig#writeAttempts()}; {@link WriteTimeoutException} when the write outlives
     * {@link WorkQueueConfig#writeTimeout()} (the timeout bounds one write: a call behind others
     * waits for them first, so its worst case is (writes ahead of it + 1) × {@code writeTimeout}).
     * An empty collection emits 0 at once.
     *
     * @param keys the keys of the items to complete
     * @return a cold {@code Mono} of how many items this call completed
     */
    Mono<Long> complete(Collection<K> keys);

    /**
     * Varargs form of {@link #complete(Collection)}. Warning-free at the call site unless the key
     * type is itself generic.
     *
     * @param keys the keys of the items to complete; a {@code null} array is signalled at
     *             subscription
     * @return a cold {@code Mono} of how many items this call completed
     */
    @SuppressWarnings("unchecked")
    Mono<Long> complete(K... keys);

    /**
     * Hands items back: drops their leases and makes them available after {@code delay} (negative
     * means now, longer than {@link #MAX_DURATION} means {@code MAX_DURATION}), recording
     * {@code cause}'s message (bounded to 1024 characters; {@code null} stores none) as the last
     * error. Attempts are kept; completed items are not touched. An enqueue during the lease is
     * absorbed: the release runs the item again anyway, after its delay.
     *
     * <p>Cold: subscribing runs one lock-ordered statement (not group-committed); the {@code Mono}
     * emits on a driver thread how many items were released. Errors: {@link InvalidKeyException}
     * and {@code NullPointerException} for bad keys or a {@code null} delay (nothing is written);
     * the statement's own failure, after retryable conflicts were retried. Cancelling mid-statement
     * cancels the statement on the server, but it may already have committed: the items may still
     * be released.
     *
     * @param delay how long until the items are due again
     * @param cause why they are handed back, stored as their last error; may be {@code null}
     * @param keys  the keys of the items to release
     * @return a cold {@code Mono} of how many items were released
     */
    Mono<Long> release(Duration delay, @Nullable Throwable cause, Collection<K> keys);

    /**
     * Varargs form of {@link #release(Duration, Throwable, Collection)}. Warning-free at the call
     * site unless the key type is itself generic.
     *
     * @param delay how long until the items are due again
     * @param cause why they are handed back; may be {@code null}
     * @param keys  the keys of the items to release; a {@code null} array is signalled at
     *              subscription
     * @return a cold {@code Mono} of how many items were released
     */
    @SuppressWarnings("unchecked")
    Mono<Long> release(Duration delay, @Nullable Throwable cause, K... keys);

    /**
     * Extends leases the caller still holds: each item's lease becomes {@code lease} from now, on
     * the database clock (longer or shorter than what is left of it). Only where the caller still
     * holds the item: its latest claim is the one that handed out {@code items}' item (its
     * {@link Item#attempts()} and {@link Item#claimedAt()} name that claim) and that lease has not
     * lapsed. A straggler whose lease lapsed extends nothing, whether or not the item was claimed
     * again since, so the new holder's lease is never touched; the straggler learns it from the
     * keys missing from the result, and its work is no longer the item's. Failure recovery stays
     * expiry: a holder that stops extending (because it died) leaves its items to lapse one lease
     * after its last extension.
     *
     * <p>This is how a live handler says "still working" on long work without a long lease:
     * {@link WorkerOptions.Builder#maxRunTime} makes {@link #process} do it for its handlers.
     *
     * <p>Group-committed like {@link #complete(Collection)}: concurrent extensions on this instance
     * (the running handlers of every worker) share one lock-ordered statement, one in flight at a
     * time. An item named twice with the same claim, here or by concurrent calls, is extended by
     * the longer lease.
     *
     * <p>Cold: subscribing vets the items and submits them; the {@code Mono} emits, on a driver
     * thread, the keys whose leases were extended, in the order given. Errors, each failing this
     * call only with nothing written: {@code IllegalArgumentException} for a lease that is
     * {@code null}, under one microsecond or over {@link #MAX_DURATION} (as {@link #claim}), an item that carries no claim (made by
     * {@link Item#of} without {@link Item#withClaimedAt}), or a key named by two different claims;
     * {@code NullPointerException} for a {@code null} collection or item;
     * {@link InvalidKeyException} for a key the codec cannot store. The write's own failure fails
     * every caller in its batch, after retryable conflicts were retried; {@link WriteTimeoutException}
     * past {@link WorkQueueConfig#writeTimeout()} (the extension may have committed). Cancelling
     * stops waiting, not the shared write: a lease is extended whole or not at all.
     *
     * <p>The default, for implementations that cannot extend, signals
     * {@code UnsupportedOperationException}.
     *
     * @param lease the new lease, from now; at least one microsecond, at most {@link #MAX_DURATION}
     * @param items items this caller claimed
     * @return a cold {@code Mono} of the keys whose leases were extended
     */
    default Mono<Set<K>> extend(Duration lease, Collection<Item<K>> items) {
        return Mono.error(new UnsupportedOperationException(getClass().getName() + " cannot extend leases"));
    }

    /**
     * Hands items back without counting the attempt: for work that is not ready rather than failed
     * (a rate-limited upstream, a dependency not there yet). Each item's lease is dropped and it is
     * due again after {@code delay}; its attempts go back to what they were before the claim, its
     * last error is kept, and an enqueue during the lease is absorbed (the item runs again anyway).
     * Only where the caller still holds the item, as {@link #extend} decides it; a snoozed item is
     * never reported as {@link Item#reclaimed()}. Within {@link #process}, a handler snoozes its
     * item by failing with {@link SnoozeException}.
     *
     * <p>Cold: subscribing runs one lock-ordered statement (not group-committed); the {@code Mono}
     * emits on a driver thread the keys snoozed, in the order given. Errors, failing this call
     * only: {@code IllegalArgumentException} for a negative delay or one over {@link #MAX_DURATION}
     * and for items as {@link #extend} refuses them; {@code NullPointerException} for {@code null}
     * arguments; {@link InvalidKeyException}; the statement's own failure after retryable conflicts
     * were retried. Cancelling mid-statement cancels it on the server, but it may have committed.
     *
     * <p>The default, for implementations that cannot snooze, signals
     * {@code UnsupportedOperationException}.
     *
     * @param delay how long until the items are due again; zero or more
     * @param items items this caller claimed
     * @return a cold {@code Mono} of the keys snoozed
     */
    default Mono<Set<K>> snooze(Duration delay, Collection<Item<K>> items) {
        return Mono.error(new UnsupportedOperationException(getClass().getName() + " cannot snooze items"));
    }

    /**
     * Deletes items whether leased, pending or completed.
     *
     * <p>Cold: subscribing runs one lock-ordered delete; the {@code Mono} emits on a driver thread
     * how many rows were deleted. Errors: {@link InvalidKeyException} and
     * {@code NullPointerException} for bad keys (nothing is deleted); the statement's own failure,
     * after retryable conflicts were retried. Cancelling mid-statement cancels the statement on
     * the server, but it may already have committed: the rows may still be deleted.
     *
     * @param keys the keys of the items to delete
     * @return a cold {@code Mono} of how many rows were deleted
     */
    Mono<Long> remove(Collection<K> keys);

    /**
     * Varargs form of {@link #remove(Collection)}. Warning-free at the call site unless the key
     * type is itself generic.
     *
     * @param keys the keys of the items to delete; a {@code null} array is signalled at
     *             subscription
     * @return a cold {@code Mono} of how many rows were deleted
     */
    @SuppressWarnings("unchecked")
    Mono<Long> remove(K... keys);

    /**
     * Deletes completed items older than {@link WorkQueueConfig#retention()}, at most
     * {@link WorkQueueConfig#reapBatchSize()} per call, skipping rows another transaction holds;
     * call again while it returns the batch size. Safe to run from every instance at once.
     *
     * <p>Cold: subscribing runs one delete; the {@code Mono} emits on a driver thread how many
     * rows were deleted. Errors: the statement's own failure, after retryable conflicts were
     * retried. Cancelling mid-statement cancels the statement on the server (it may already have
     * committed).
     *
     * @return a cold {@code Mono} of how many rows were deleted
     */
    Mono<Long> reap();

    /**
     * The most {@link #reap()} statements one {@link #reapAll()} runs, so one call cannot run for
     * ever behind a history that grows as fast as it is deleted.
     */
    int MAX_REAPS_PER_CALL = 100;

    /**
     * Reaps until a {@link #reap()} deletes less than {@link WorkQueueConfig#reapBatchSize()} (the
     * history past retention is gone) or {@link #MAX_REAPS_PER_CALL} have run: what housekeeping
     * does each interval. One statement at a time, each its own short transaction.
     *
     * <p>Cold: subscribing runs the reaps in turn; the {@code Mono} emits the total deleted on a
     * driver thread. Errors: the first reap's failure (what it deleted before stays deleted).
     * Cancelling stops after the statement in flight, which is cancelled on the server.
     *
     * @return a cold {@code Mono} of how many rows were deleted in all
     */
    default Mono<Long> reapAll() {
        return Mono.defer(() -> {
            int fullBatch = config().reapBatchSize();
            return reap().expand(deleted -> deleted >= fullBatch ? reap() : Mono.empty())
                    .take(MAX_REAPS_PER_CALL)
                    .reduce(0L, Long::sum);
        });
    }

    /**
     * One round of housekeeping for this queue, done by one instance of the fleet: this instance
     * takes (or renews) the role of the queue's housekeeper for {@code lease} if no other holds it,
     * and then {@linkplain #reapAll() reaps}, reads {@link #stats()} and {@link #horizon()}, and
     * publishes the reading; if another instance holds the role, it does none of that and reports
     * the keeper's last published reading instead. Either way the queue's gauges are set from the
     * reading, so {@code workqueue.depth} and the others mean the same on every instance (on a
     * non-keeper, as of the keeper's last round: at most about one interval old). Only the keeper
     * logs the held-horizon WARN.
     *
     * <p>The PostgreSQL queue chooses the keeper on the database: one row per logical queue in
     * {@code work_queue_queues} (schema version 3), taken with an upsert on the database clock,
     * so it holds behind a transaction-mode pooler and needs no session. An instance that finds
     * another's lease live only reads the row: a follower's round is one read, writes nothing and
     * waits for no lock. A keeper that dies, hangs
     * or is cut off stops renewing and loses the role when its lease ends. Call it every interval
     * with a lease somewhat longer than the interval (as {@link #housekeeping(Duration)} does), so
     * a live keeper keeps the role and a dead one is replaced soon after its missed round. This default does the round unconditionally, electing nothing.
     *
     * <p>Cold: each subscription is one round; the {@code Mono} emits what it did on a driver
     * thread. Errors: a lease under a microsecond (the database clock's resolution) or {@code null} is an
     * {@link IllegalArgumentException} (a {@code NullPointerException}) at subscription, failing
     * only this call; a table older than schema version 3 fails with a {@link WorkQueueException}
     * saying to upgrade it; else the first statement's failure. Cancelling stops the round after
     * its statement in flight (which is cancelled on the server); the role, if taken, lapses with
     * its lease.
     *
     * @param lease how long this instance holds the role without renewing it; longer than a century
     *              is taken as a century
     * @return a cold {@code Mono} of the round's outcome
     */
    default Mono<Housekeeping> housekeep(Duration lease) {
        return Mono.defer(() -> {
            Objects.requireNonNull(lease, "lease");
            Durations.requireLease(lease);
            return reapAll().flatMap(reaped -> stats().flatMap(stats -> horizon().map(horizon ->
                    Housekeeping.of(true, name(), reaped, stats, horizon, Duration.ZERO, lease))));
        });
    }

    /**
     * Keeps this queue's house for as long as it is subscribed: a {@link #housekeep(Duration)}
     * round at once and then every {@code interval} (measured from each round's start; a round
     * that outlasts the interval delays the next, never piles up), with a lease of 1.25 intervals.
     * While another instance keeps the house, the next round comes as soon as that keeper's lease
     * could have ended (at most an interval later), so the role passes within moments of its
     * lease ending. The library's own loop for users without Spring; the starter runs it for every
     * queue.
     *
     * <p>A failed round is logged at WARN with its cause and the loop goes on; nothing is
     * signalled but each round's outcome, on a driver thread or Reactor's parallel scheduler.
     * Never completes; cancel (dispose) it to stop, which cancels the round in flight.
     *
     * @param interval how often to keep house; positive, at least a millisecond (longer than a
     *                 century is taken as a century)
     * @return a cold, infinite {@code Flux} of each round's outcome
     */
    default Flux<Housekeeping> housekeeping(Duration interval) {
        return HousekeepingRounds.every(this, interval);
    }

    /**
     * A health snapshot of this queue, read in one statement on the database clock; see
     * {@link Stats}. Also sets the {@code workqueue.depth}, {@code .ready}, {@code .stalled} and
     * {@code .oldest.ready.age} gauges when metrics are recorded. Costs what the pending items
     * cost, never what the history costs: it reads the pending rows, and counts completed ones
     * only up to {@link Stats#COMPLETED_COUNT_LIMIT} (see {@link Stats#completedCapped()}). A
     * deep backlog still makes it a read of every pending row, so for a health check, which needs
     * one age against one threshold, use {@link #readyLongerThan(Duration)}.
     *
     * <p>Cold: subscribing runs the statement; the {@code Mono} emits the snapshot on a driver
     * thread. Errors: the statement's own failure. Cancelling mid-statement cancels the read on
     * the server.
     *
     * @return a cold {@code Mono} of the snapshot
     */
    Mono<Stats> stats();

    /**
     * Whether an item has been ready (claimable) for longer than {@code threshold}: the health
     * check's question, "is the queue keeping up?", answered without counting anything. Agrees with
     * {@code stats().oldestReadyAge().compareTo(threshold) > 0} read at the same instant, on the
     * database clock.
     *
     * <p>Cost: the PostgreSQL queue reads one index entry per priority band with pending items,
     * plus, in each band, the entries of items available before the threshold that are leased or
     * out of attempts, stopping at the first late one; never the history, and not the rest of
     * the backlog. This default reads {@link #stats()}; implementations should do better.
     *
     * <p>Cold: subscribing runs one statement; the {@code Mono} emits on a driver thread.
     * Errors: a {@code null} or negative threshold is an {@link IllegalArgumentException} (a
     * {@code NullPointerException} for {@code null}) at subscription, failing only this call; else
     * the statement's own failure. Cancelling mid-statement cancels the read on the server.
     *
     * @param threshold how long an item may have been ready before it counts as late; zero or
     *                  more (longer than a century is taken as a century)
     * @return a cold {@code Mono} of {@code true} if some item has been ready longer
     */
    default Mono<Boolean> readyLongerThan(Duration threshold) {
        return Mono.defer(() -> {
            Durations.requireNotNegative("threshold", threshold);
            return stats().map(stats -> stats.oldestReadyAge().compareTo(threshold) > 0);
        });
    }

    /**
     * What is holding back the database's MVCC horizon, read in one statement on the database
     * clock; see {@link Horizon}. A transaction kept open for long (a session left idle in
     * transaction, a long report, {@code pg_dump}) keeps every row version the queue's churn leaves
     * behind: the table and its indexes grow, and looks behind the claim cursors and reaps, which
     * read from the head of an index, slow down while it lasts (claims read from cursors and do not;
     * looks are spaced by their own cost, so what lies behind the cursors waits longer): call this beside
     * {@link #stats()} and alert on {@link Horizon#oldestTransactionAge()}. Logs a WARN, at most
     * once a minute per instance, while it is older than {@link WorkQueueConfig#horizonWarning()},
     * and feeds the {@code workqueue.horizon.age} gauge. Seeing other roles' sessions needs
     * {@code pg_read_all_stats} (or superuser); without it only this role's count.
     *
     * <p>Cold: subscribing runs the statement; the {@code Mono} emits the reading on a driver
     * thread. Errors: the statement's own failure. Cancelling mid-statement cancels the read on
     * the server.
     *
     * @return a cold {@code Mono} of the reading
     */
    Mono<Horizon> horizon();

    /**
     * Waits for work: completes when a wakeup arrives from the builder's wakeup source, or when this
     * instance finds work no wakeup announced (items that became due behind its claim cursors,
     * such as leases that lapsed), or when {@code poll} elapses, whichever comes first. Wakeups
     * complete waits at most once per {@link WorkQueueConfig#minWakeInterval()} on this instance: a
     * wake inside the floor is held for the rest of the interval, not dropped, and a wake that
     * arrives while nobody waits is kept for the next wait. Without a wakeup source only the
     * instance's own wakes end a wait early. A poll longer than
     * {@link #MAX_DURATION} is one of {@code MAX_DURATION}.
     *
     * <p>Cold: each subscription starts its own wait (the first one also subscribes to the wakeup
     * source). Completes empty, on the thread that delivered the wakeup or on the builder's
     * timer. Errors: {@code IllegalArgumentException} for a poll that is not positive or
     * {@code null}; nothing else (a failing wakeup source only stops wakeups). Cancelling withdraws
     * the wait.
     *
     * @param poll the longest wait; positive
     * @return a cold {@code Mono} that completes when there may be work
     */
    Mono<Void> awaitWork(Duration poll);

    /**
     * Closes the queue to enqueues: flushes whatever enqueues are pending, then refuses every later
     * enqueue with {@link QueueClosedException}. Idempotent: every call completes once the flush
     * has (the flush also covers merged {@link #complete} calls already submitted). Other methods
     * keep working, so a worker may still complete what it holds. A wakeup notification still due
     * for writes already committed goes out with the flush, without waiting for the rest of
     * {@link WorkQueueConfig#minWakeInterval()}; none is sent after it.
     *
     * <p>Unlike the rest of this interface, closing starts when the method is called, subscribed or
     * not; the {@code Mono} only reports the flush, completing on a driver thread (or at once when
     * nothing was pending). Errors: none of its own; a pending write that fails fails its own
     * callers, not this. Cancelling stops waiting; the queue stays closed and the flush goes on.
     *
     * @return a {@code Mono} that completes once pending enqueues are flushed
     */
    Mono<Void> close();
}
