package io.workqueue;

import io.r2dbc.spi.ConnectionFactory;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A window onto the logical queues of one table, for the people who operate them: which queues
 * there are and their {@link Stats}, the items of a queue in each {@link ItemState}, one item in
 * detail, and the repairs a stuck item needs (retry, remove, purge the completed).
 *
 * <p><b>One home per concept.</b> Every state is decided by the condition the queue itself uses,
 * rendered from the same text: an item listed as {@link ItemState#READY} is one a claim would hand
 * out, and {@link #stats(String)} is the very read {@link ReactiveWorkQueue#stats()} makes (it
 * <em>is</em> that call, feeding the queue's gauges, for a queue registered with
 * {@link Builder#queue(ReactiveWorkQueue)}). Whether an item is stalled depends on the queue's
 * {@link WorkQueueConfig#maxAttempts()}, which the table does not record: register each queue
 * with its configuration, or its items count as having unlimited attempts (never stalled).
 *
 * <p><b>Keys.</b> Items are named by their key as stored ({@link QueueItem#storedKey()}), which is
 * what the actions take, so an item whose key no longer decodes can still be retried or removed.
 * Given the queue's {@link KeyCodec}, the admin also decodes each key ({@link QueueItem#key()}); a
 * key the codec refuses is listed under its stored text with the reason, never hidden.
 *
 * <p><b>Cost.</b> Listing is keyset-paginated in the state's own order (claim order for pending
 * states: never {@code OFFSET}, never a count per page): a page costs an index seek and at most
 * {@link #SCAN_BUDGET} index entries per priority band it touches, however long the queue. A page
 * of a sparse state may hence come back short but with a cursor to go on from. {@link #stats} and
 * {@link #queues()} are the stats read: they cost what each queue's pending items cost (its
 * history only up to {@link Stats#COMPLETED_COUNT_LIMIT} completed rows), so call them at a
 * human's pace, or cache them.
 *
 * <p><b>Writes.</b> Every action takes its row locks in primary-key order, like every writer of
 * the queue, so it cannot deadlock with them; each returns what it changed and is safe to repeat
 * (a repeat changes nothing more). Writes PostgreSQL asks to retry (40001, 40P01) are retried up
 * to {@link Builder#writeAttempts(int)} runs.
 *
 * <p><b>Reactive contract</b>, as for {@link ReactiveWorkQueue}: every publisher is cold; bad
 * arguments are signalled at subscription, never thrown; nothing blocks; results are emitted on
 * the driver's threads; cancelling stops waiting (a statement already sent may still commit).
 * Database errors surface as the driver's {@code R2dbcException}. Thread-safe.
 */
public interface WorkQueueAdmin {

    /** The most items one page holds. */
    int MAX_PAGE_SIZE = 500;

    /**
     * The most index entries one page reads per part of the listing it continues (the rest of the
     * priority band the last page ended in, and the bands after it), whether or not they are in the
     * state listed; what bounds a page's cost in a long queue.
     */
    int SCAN_BUDGET = 10_000;

    /** The most keys one {@link #retry} or {@link #remove} names. */
    int MAX_KEYS_PER_ACTION = 1_000;

    /** The most items one {@link #purgeCompleted} deletes. */
    int MAX_PURGE_BATCH = 10_000;

    /**
     * Starts building an admin over {@code connectionFactory} (plain or pooled; PostgreSQL only).
     * Nothing is connected here; {@link Builder#build()} checks the dialect and the settings.
     *
     * @param connectionFactory where the admin borrows its connections, one per statement; a
     *                          PostgreSQL factory
     * @return a new builder
     * @throws NullPointerException if {@code connectionFactory} is {@code null}
     */
    static Builder builder(ConnectionFactory connectionFactory) {
        return new Builder(connectionFactory);
    }

    /**
     * The table prefix of the one table this admin reads ({@code ""}: {@code work_queue_items}).
     *
     * @return the prefix given to {@link Builder#tablePrefix(String)}, or {@code ""}
     */
    String tablePrefix();

    /**
     * Every logical queue that has items in the table or was registered with the builder, in name
     * order (code points), each with its {@link #stats(String) stats}. Finding the names costs one
     * index probe per distinct name (a loose scan of the primary key), not a scan of the table; the
     * stats then cost one read per queue, at most two at a time. Emits on driver threads; an error
     * of any read ends the stream with it.
     *
     * <p>Cold: each subscription reads the names and then the stats afresh, and completes after the
     * last queue. Errors: the failure of the names read or of any stats read (the driver's
     * {@code R2dbcException}), ending the stream. Cancelling stops the reads in flight and gives
     * their connections back; nothing is written.
     *
     * @return a cold, finite {@code Flux} of one summary per queue, in name order
     */
    Flux<QueueSummary> queues();

    /**
     * The stats of {@code queue}, read in one statement: for a queue registered as a
     * {@link ReactiveWorkQueue}, exactly its {@link ReactiveWorkQueue#stats()} (which also feeds its
     * gauges); otherwise the same statement with the registered attempt limit, or with unlimited
     * attempts for a queue found only in the table. A queue without items has zero everywhere.
     *
     * <p>Cold: each subscription runs the read once; the {@code Mono} emits the snapshot on a
     * driver thread. Errors: {@code NullPointerException} for a {@code null} queue, at
     * subscription; the statement's own failure. Cancelling mid-statement abandons the read (for a
     * registered queue, as {@link ReactiveWorkQueue#stats()} describes).
     *
     * @param queue the logical queue name, as stored; need not be registered nor have items
     * @return a cold {@code Mono} of the queue's snapshot
     */
    Mono<Stats> stats(String queue);

    /**
     * A page of the items of {@code queue} in {@code state}: {@link ItemState#COMPLETED} newest
     * first (then by key, descending); every other state in claim order (priority descending, then
     * availability, then key), so the ready items come in the order claims take them.
     *
     * <p>{@code after} is {@code null} for the first page, else the {@link ItemPage#next()} of the
     * page before (a cursor of a pending state may continue any pending state). An item that stays
     * in the state while the pages are read appears exactly once; one that changes meanwhile may
     * appear or not (and may appear again under another state). {@code limit} must be 1 to
     * {@link #MAX_PAGE_SIZE}; an unknown queue gives an empty page. Signals
     * {@code IllegalArgumentException} for a bad limit or a cursor that is not one of this API's
     * (or of another state kind).
     *
     * <p>Cold: each subscription reads the page in one statement; the {@code Mono} emits it on a
     * driver thread, its items' keys decoded with the queue's codec if one was registered.
     * Errors, at subscription: {@code NullPointerException} for a {@code null} queue or state and
     * the {@code IllegalArgumentException}s above; then the statement's own failure.
     * Cancelling stops waiting and gives the connection back; the read has no effect to undo.
     *
     * @param queue the logical queue name, as stored
     * @param state the state whose items to list
     * @param after {@code null} for the first page, else the {@link ItemPage#next()} of the page
     *              before
     * @param limit the most items on the page, 1 to {@link #MAX_PAGE_SIZE}
     * @return a cold {@code Mono} of the page, which may hold fewer than {@code limit} items and
     *         still have a {@link ItemPage#next()}
     */
    Mono<ItemPage> items(String queue, ItemState state, @Nullable String after, int limit);

    /**
     * The item of {@code queue} stored under {@code storedKey}, or empty if there is none. Read in
     * one statement, with the same states and ages as a listed item; a key the registered codec
     * refuses still gives the item, with its {@link QueueItem#keyDecodingError()}.
     *
     * <p>Cold: each subscription runs the read once; the {@code Mono} emits the item, or completes
     * empty, on a driver thread. Errors: {@code NullPointerException} for a {@code null} queue or
     * key, at subscription; the statement's own failure.
     * Cancelling stops waiting and gives the connection back; the read has no effect to undo.
     *
     * @param queue     the logical queue name, as stored
     * @param storedKey the key as stored ({@link QueueItem#storedKey()}), not as a codec encodes
     *                  it
     * @return a cold {@code Mono} of the item, empty if the queue has no item under that key
     */
    Mono<QueueItem> item(String queue, String storedKey);

    /**
     * Makes stalled and delayed items due now: available at the database's {@code now()} (so
     * claims find them at once, behind the ready items of their priority), attempts reset to 0.
     * Only items {@link ItemState#STALLED} or {@link ItemState#DELAYED} and not leased are touched:
     * ready, leased and completed items are left as they are, so a retry never revokes a lease nor
     * moves an item that would be claimed anyway, and retrying again changes nothing more.
     *
     * <p><b>The last error is kept</b>: the item still shows why it stalled until its next run
     * replaces the error (a failure) or clears it (a completion). Emits the stored keys it changed,
     * in key order. At most {@link #MAX_KEYS_PER_ACTION} keys, else
     * {@code IllegalArgumentException}; unknown keys are ignored, and none emits an empty list at
     * once.
     *
     * <p>Cold: each subscription runs one lock-ordered statement (retried as described above);
     * the {@code Mono} emits on a driver thread once it has committed. Errors, at subscription:
     * {@code NullPointerException} for a {@code null} queue, collection or key;
     * {@code IllegalArgumentException} for a key containing NUL or too many keys (nothing is
     * written); then the statement's own failure. Cancelling stops waiting and gives the
     * connection back, but the statement may already have committed: the items may still be
     * retried.
     *
     * @param queue      the logical queue name, as stored
     * @param storedKeys the keys as stored of the items to retry, at most
     *                   {@link #MAX_KEYS_PER_ACTION} once duplicates are dropped
     * @return a cold {@code Mono} of the stored keys of the items it made due, in key order (code
     *         points); a queue with unlimited attempts (or not registered) has no stalled items,
     *         so only its delayed ones change
     */
    Mono<List<String>> retry(String queue, Collection<String> storedKeys);

    /**
     * Deletes items whatever their state, as {@link ReactiveWorkQueue#remove(Collection)} does: a
     * worker holding one finds nothing to complete. Emits the stored keys it deleted, in key order.
     * At most {@link #MAX_KEYS_PER_ACTION} keys, else {@code IllegalArgumentException}; none emits an
     * empty list at once.
     *
     * <p>Cold: each subscription runs one lock-ordered delete (retried on 40001 and 40P01); the
     * {@code Mono} emits on a driver thread once it has committed. Errors, at subscription:
     * {@code NullPointerException} for a {@code null} queue, collection or key;
     * {@code IllegalArgumentException} for a key containing NUL or too many keys (nothing is
     * deleted); then the statement's own failure. Cancelling stops waiting and gives the
     * connection back, but the statement may already have committed: the items may still be
     * deleted.
     *
     * @param queue      the logical queue name, as stored
     * @param storedKeys the keys as stored of the items to delete, at most
     *                   {@link #MAX_KEYS_PER_ACTION} once duplicates are dropped
     * @return a cold {@code Mono} of the stored keys of the items it deleted, in key order (code
     *         points); unknown keys are not in it
     */
    Mono<List<String>> remove(String queue, Collection<String> storedKeys);

    /**
     * Deletes up to {@code limit} completed items of {@code queue}, oldest completion first,
     * whatever the queue's retention; an item enqueued again meanwhile is pending and kept. Emits
     * how many it deleted: call again while that equals {@code limit}. {@code limit} must be 1 to
     * {@link #MAX_PURGE_BATCH}, else {@code IllegalArgumentException}.
     *
     * <p>Cold: each subscription runs one delete, locking its rows in key order (retried on 40001
     * and 40P01); the {@code Mono} emits on a driver thread once it has committed. Errors, at
     * subscription: {@code NullPointerException} for a {@code null} queue and the
     * {@code IllegalArgumentException} above; then the statement's own failure. Cancelling stops
     * waiting and gives the connection back, but the statement may already have committed: the
     * items may still be deleted.
     *
     * @param queue the logical queue name, as stored
     * @param limit the most items to delete, 1 to {@link #MAX_PURGE_BATCH}
     * @return a cold {@code Mono} of how many items it deleted, 0 to {@code limit}
     */
    Mono<Long> purgeCompleted(String queue, int limit);

    /**
     * Pauses a logical queue for the whole fleet: from their next claim, claims on every instance
     * lease nothing (a worker waiting for work notices within its poll), while enqueues still land,
     * leases already held run on, and completes, releases and extensions still work. Stored in the
     * database, so it survives restarts of every instance, until {@link #resume}. Pausing a paused
     * queue keeps the first pause's instant. {@link Stats#pausedAt()} reports it, so a paused
     * queue's growing {@link Stats#oldestReadyAge()} is not mistaken for missing workers.
     *
     * <p>Cold: each subscription runs one short statement (an upsert of the queue's row in the
     * queues table, never touching an item); the {@code Mono} emits on a driver thread the instant
     * of the pause on the database clock. Errors, at subscription: {@code NullPointerException}
     * for a {@code null} queue, {@code IllegalArgumentException} for an empty one or one longer than
     * {@link WorkQueueConfig#MAX_NAME_LENGTH}; then the statement's own failure. Cancelling stops
     * waiting, but the pause may have committed.
     *
     * <p>The default, for admins that cannot pause, signals {@code UnsupportedOperationException}.
     *
     * @param queue the logical queue name, as stored; need not have items yet
     * @return a cold {@code Mono} of when the queue was paused
     */
    default Mono<Instant> pause(String queue) {
        return Mono.error(new UnsupportedOperationException(getClass().getName() + " cannot pause queues"));
    }

    /**
     * Resumes a queue {@link #pause paused}: claims hand out its items again from their next
     * claim; a worker waiting for work finds them within its poll. Cold, like {@link #pause}, with
     * the same errors; emits whether the queue was paused.
     *
     * <p>The default, for admins that cannot pause, signals {@code UnsupportedOperationException}.
     *
     * @param queue the logical queue name, as stored
     * @return a cold {@code Mono} of {@code true} if the queue was paused and now runs,
     *         {@code false} if it was not paused
     */
    default Mono<Boolean> resume(String queue) {
        return Mono.error(new UnsupportedOperationException(getClass().getName() + " cannot resume queues"));
    }

    /**
     * Assembles a {@link WorkQueueAdmin}. Not thread-safe; {@link #build()} validates everything
     * synchronously and throws.
     */
    final class Builder {
        private final ConnectionFactory connectionFactory;
        private String tablePrefix = "";
        private int writeAttempts = 3;
        private final List<WorkQueueBackend.AdminQueue> queues = new ArrayList<>();

        private Builder(ConnectionFactory connectionFactory) {
            this.connectionFactory = Objects.requireNonNull(connectionFactory, "connectionFactory");
        }

        /**
         * Sets the prefix of the table to read, as given to
         * {@link WorkQueueConfig.Builder#tablePrefix}; default {@code ""}. Checked by
         * {@link #build()}.
         *
         * @param tablePrefix the prefix, or {@code ""} for {@code work_queue_items}
         * @return this builder
         * @throws NullPointerException if {@code tablePrefix} is {@code null}
         */
        public Builder tablePrefix(String tablePrefix) {
            this.tablePrefix = Objects.requireNonNull(tablePrefix, "tablePrefix");
            return this;
        }

        /**
         * Registers a queue of this table: its attempt limit and codec decide its stalled items and
         * decode its keys, and {@link WorkQueueAdmin#stats(String)} of it is its own
         * {@link ReactiveWorkQueue#stats()}. Keys are decoded by the codec of a queue this library
         * built; those of any other implementation (a decorator) are shown as stored.
         *
         * @param queue a queue over this admin's table
         * @return this builder
         * @throws NullPointerException if {@code queue} is {@code null}
         */
        public Builder queue(ReactiveWorkQueue<?> queue) {
            queues.add(WorkQueueBackend.AdminQueue.of(Objects.requireNonNull(queue, "queue")));
            return this;
        }

        /**
         * Registers a queue by its configuration; its keys are shown as stored. Its attempt limit
         * decides its stalled items; its stats are read by the admin, without feeding any gauge.
         *
         * @param config the queue's configuration, with this admin's table prefix
         * @return this builder
         * @throws NullPointerException if {@code config} is {@code null}
         */
        public Builder queue(WorkQueueConfig config) {
            queues.add(WorkQueueBackend.AdminQueue.of(Objects.requireNonNull(config, "config"), null));
            return this;
        }

        /**
         * Registers a queue by its configuration, decoding its keys with {@code codec}; a key the
         * codec refuses is listed as stored, with {@link QueueItem#keyDecodingError()}.
         *
         * @param config the queue's configuration, with this admin's table prefix
         * @param codec  the codec the queue stores its keys with
         * @return this builder
         * @throws NullPointerException if {@code config} or {@code codec} is {@code null}
         */
        public Builder queue(WorkQueueConfig config, KeyCodec<?> codec) {
            queues.add(WorkQueueBackend.AdminQueue.of(Objects.requireNonNull(config, "config"),
                    Objects.requireNonNull(codec, "codec")));
            return this;
        }

        /**
         * Sets the runs of an action PostgreSQL asks to retry (40001, 40P01); default 3, at least 1.
         * Checked by {@link #build()}. Reads are not retried.
         *
         * @param writeAttempts the most runs of one {@link WorkQueueAdmin#retry},
         *                      {@link WorkQueueAdmin#remove} or {@link WorkQueueAdmin#purgeCompleted};
         *                      1 means no retry
         * @return this builder
         */
        public Builder writeAttempts(int writeAttempts) {
            this.writeAttempts = writeAttempts;
            return this;
        }

        /**
         * Builds the admin, checking every setting now. Connects to nothing: the first statement
         * runs when one of its publishers is subscribed.
         *
         * @return a new, thread-safe admin over the table of {@link #tablePrefix(String)}
         * @throws InvalidConfigException for a bad prefix, a queue of another table or registered
         *                                twice, or a bad setting
         * @throws UnsupportedDialectException if the connection factory is not PostgreSQL
         */
        public WorkQueueAdmin build() {
            WorkQueueConfig.validPrefix(tablePrefix);
            if (writeAttempts < 1) {
                throw new InvalidConfigException("writeAttempts must be at least 1 but was " + writeAttempts);
            }
            return Backends.BACKEND.admin(connectionFactory, tablePrefix, List.copyOf(queues), writeAttempts);
        }
    }
}
