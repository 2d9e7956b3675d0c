package io.workqueue.postgres;

import static io.workqueue.postgres.Rows.intValue;
import static io.workqueue.postgres.Rows.longValue;
import static io.workqueue.postgres.Rows.ofMicros;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.Row;
import io.workqueue.InvalidConfigException;
import io.workqueue.ItemPage;
import io.workqueue.ItemState;
import io.workqueue.KeyCodec;
import io.workqueue.QueueItem;
import io.workqueue.QueueSummary;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.Stats;
import io.workqueue.WorkQueueAdmin;
import io.workqueue.WorkQueueConfig;
import io.workqueue.internal.base.CodePointOrder;
import io.workqueue.internal.Throwables;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * The PostgreSQL implementation of {@link WorkQueueAdmin}. Build it through
 * {@link WorkQueueAdmin#builder}. Each operation borrows a connection for one statement and gives
 * it back on completion, error and cancellation ({@link Database}, as the queue does). Thread-safe.
 */
public final class PostgresWorkQueueAdmin implements WorkQueueAdmin {
    /** How many queues' stats {@link #queues()} reads at once. */
    private static final int STATS_CONCURRENCY = 2;
    /** Decoding errors are bounded like last errors, so one pathological message cannot flood a page. */
    private static final int MAX_ERROR_LENGTH = PostgresWorkQueue.MAX_ERROR_LENGTH;

    private final String tablePrefix;
    private final Map<String, QueueSettings> queues;
    private final InspectionSql sql;
    private final Database database;

    private PostgresWorkQueueAdmin(ConnectionFactory connectionFactory, String tablePrefix,
            Map<String, QueueSettings> queues, int writeAttempts) {
        this.tablePrefix = tablePrefix;
        this.queues = queues;
        this.sql = new InspectionSql(tablePrefix);
        this.database = Database.of(connectionFactory, Schedulers.parallel(), "table " + sql.table, tablePrefix,
                writeAttempts, () -> {});
    }

    /**
     * An admin over the table of {@code tablePrefix} (validated by the caller); see
     * {@link WorkQueueAdmin.Builder#build()}.
     *
     * @throws InvalidConfigException if a queue is of another table or registered twice
     * @throws UnsupportedDialectException if the factory does not report PostgreSQL
     */
    static PostgresWorkQueueAdmin create(ConnectionFactory connectionFactory, String tablePrefix,
            List<QueueSettings> settings, int writeAttempts) {
        Objects.requireNonNull(connectionFactory, "connectionFactory");
        Objects.requireNonNull(tablePrefix, "tablePrefix");
        Database.requirePostgres(connectionFactory);
        Map<String, QueueSettings> byName = new LinkedHashMap<>();
        for (QueueSettings queue : settings) {
            if (!queue.tablePrefix().equals(tablePrefix)) {
                throw new InvalidConfigException("queue " + queue.name() + " is in the table of prefix \""
                        + queue.tablePrefix() + "\", but this admin reads the table of prefix \"" + tablePrefix + "\"");
            }
            if (byName.putIfAbsent(queue.name(), queue) != null) {
                throw new InvalidConfigException("queue " + queue.name() + " is registered twice");
            }
        }
        return new PostgresWorkQueueAdmin(connectionFactory, tablePrefix, Map.copyOf(byName), writeAttempts);
    }

    /**
     * What the admin knows of one queue: its name, table, attempt limit, and (optionally) its codec
     * and the queue instance whose {@code stats()} it reads.
     *
     * @param name        the logical queue name
     * @param tablePrefix its table's prefix
     * @param maxAttempts its attempt limit, 0 for unlimited
     * @param codec       its key codec, or null to show keys as stored
     * @param queue       the queue instance, or null
     */
    public record QueueSettings(String name, String tablePrefix, int maxAttempts, @Nullable KeyCodec<?> codec,
            @Nullable ReactiveWorkQueue<?> queue) {
        /**
         * The settings of {@code queue}: its configuration, and its codec when this library built
         * it (a decorator of one says nothing of its codec, so its keys are shown as stored).
         */
        public static QueueSettings of(ReactiveWorkQueue<?> queue) {
            WorkQueueConfig config = queue.config();
            KeyCodec<?> codec = queue instanceof PostgresWorkQueue<?> postgres ? postgres.codec() : null;
            return new QueueSettings(config.name(), config.tablePrefix(), config.maxAttempts(), codec, queue);
        }

        /** The settings of a queue known by its configuration, with {@code codec} or none. */
        public static QueueSettings of(WorkQueueConfig config, @Nullable KeyCodec<?> codec) {
            return new QueueSettings(config.name(), config.tablePrefix(), config.maxAttempts(), codec, null);
        }
    }

    @Override
    public String tablePrefix() {
        return tablePrefix;
    }

    // ---------------------------------------------------------------- reads

    @Override
    public Flux<QueueSummary> queues() {
        return Flux.defer(() -> database.inConnection(connection -> Flux.from(sql.queueNames.on(connection).execute())
                        .concatMap(result -> result.map((row, meta) -> Objects.requireNonNull(row.get("queue_name", String.class))))
                        .collectList())
                .flatMapMany(present -> {
                    Set<String> names = new TreeSet<>(CodePointOrder::compare);
                    names.addAll(present);
                    names.addAll(queues.keySet());
                    return Flux.fromIterable(names);
                })
                .flatMapSequential(name -> stats(name).map(stats -> {
                    QueueSettings settings = queues.get(name);
                    return QueueSummary.of(name, stats, settings == null ? 0 : settings.maxAttempts(), settings != null);
                }), STATS_CONCURRENCY));
    }

    @Override
    public Mono<Stats> stats(String queue) {
        return Mono.defer(() -> {
            Objects.requireNonNull(queue, "queue");
            QueueSettings settings = queues.get(queue);
            if (settings != null && settings.queue() != null) {
                return settings.queue().stats();
            }
            return StatsRead.of(database, sql.statsCompleted, sql.stats, queue, maxAttempts(queue));
        });
    }

    @Override
    public Mono<ItemPage> items(String queue, ItemState state, @Nullable String after, int limit) {
        return Mono.defer(() -> {
            Objects.requireNonNull(queue, "queue");
            Objects.requireNonNull(state, "state");
            if (limit < 1 || limit > MAX_PAGE_SIZE) {
                throw new IllegalArgumentException("limit must be 1 to " + MAX_PAGE_SIZE + " but was " + limit);
            }
            boolean completed = state == ItemState.COMPLETED;
            Cursor cursor = Cursor.parse(after, completed);
            return database.inConnection(connection -> {
                SqlStatement.Bound statement = pageSql(state).on(connection)
                        .bind("queue", queue)
                        .bind("attempt_limit", maxAttempts(queue))
                        .bindNullable("after_key", cursor == null ? null : cursor.key(), String.class)
                        .bind("page_size", limit)
                        .bind("scan_budget", SCAN_BUDGET);
                if (completed) {
                    statement.bindNullable("completed_at", cursor == null ? null : cursor.position(), Long.class);
                } else {
                    statement.bindNullable("band", cursor == null ? null : cursor.priority(), Integer.class)
                            .bindNullable("available", cursor == null ? null : cursor.position(), Long.class)
                            // The bands after the last page's band; bigint, so "below the lowest int" is expressible.
                            .bind("next_bands", cursor == null ? (long) Integer.MAX_VALUE : cursor.priority() - 1L);
                }
                return Flux.from(statement.execute())
                        .concatMap(result -> result.map((row, meta) -> pageRow(queue, row)))
                        .collectList();
            }).map(rows -> page(rows, limit, completed));
        });
    }

    private SqlStatement pageSql(ItemState state) {
        return switch (state) {
            case READY -> sql.readyPage;
            case DELAYED -> sql.delayedPage;
            case LEASED -> sql.leasedPage;
            case STALLED -> sql.stalledPage;
            case COMPLETED -> sql.completedPage;
        };
    }

    /**
     * The page out of the two parts' rows (in listing order): the matching items up to
     * {@code limit}, stopping early at a part's last budgeted entry, since nothing after it was
     * read; the next page continues from the last row taken.
     */
    private static ItemPage page(List<PageRow> rows, int limit, boolean completed) {
        List<QueueItem> items = new ArrayList<>(Math.min(rows.size(), limit));
        for (PageRow row : rows) {
            if (row.wanted()) {
                items.add(row.item());
            }
            if (row.n() == SCAN_BUDGET || items.size() == limit) {
                return ItemPage.of(items, Cursor.after(row, completed));
            }
        }
        return ItemPage.of(items, null);
    }

    @Override
    public Mono<QueueItem> item(String queue, String storedKey) {
        return Mono.defer(() -> {
            Objects.requireNonNull(queue, "queue");
            Objects.requireNonNull(storedKey, "storedKey");
            return database.inConnection(connection -> Flux.from(sql.item.on(connection)
                            .bind("queue", queue)
                            .bind("attempt_limit", maxAttempts(queue))
                            .bind("key", storedKey)
                            .execute())
                    .concatMap(result -> result.map((row, meta) -> item(queue, row)))
                    .next());
        });
    }

    /** One row of a page: its part and place in it, whether it is in the state listed, and its item. */
    private record PageRow(int part, long n, boolean wanted, QueueItem item, long availableUs, @Nullable Long completedUs) {}

    private PageRow pageRow(String queue, Row row) {
        return new PageRow(intValue(row.get("part", Integer.class)), longValue(row.get("n", Long.class)),
                Boolean.TRUE.equals(row.get("wanted", Boolean.class)), item(queue, row),
                longValue(row.get("available_us", Long.class)), row.get("completed_us", Long.class));
    }

    private QueueItem item(String queue, Row row) {
        String storedKey = Objects.requireNonNull(row.get("item_key", String.class));
        QueueItem.Builder item = QueueItem.builder(queue, storedKey)
                .priority(intValue(row.get("priority", Integer.class)))
                .attempts(intValue(row.get("attempts", Integer.class)))
                .lastError(row.get("last_error", String.class))
                .age(ofMicros(longValue(row.get("age_us", Long.class))))
                .availableIn(ofMicros(longValue(row.get("available_in_us", Long.class))))
                .leaseRemaining(ofMicrosOrNull(row.get("lease_left_us", Long.class)))
                .completedAgo(ofMicrosOrNull(row.get("completed_ago_us", Long.class)))
                .requeueRequested(Boolean.TRUE.equals(row.get("requeue_requested", Boolean.class)))
                .leaseLapsed(Boolean.TRUE.equals(row.get("lease_lapsed", Boolean.class)));
        stateIf(item, row, "is_ready", ItemState.READY);
        stateIf(item, row, "is_delayed", ItemState.DELAYED);
        stateIf(item, row, "is_leased", ItemState.LEASED);
        stateIf(item, row, "is_stalled", ItemState.STALLED);
        stateIf(item, row, "is_completed", ItemState.COMPLETED);
        QueueSettings settings = queues.get(queue);
        if (settings != null && settings.codec() != null) {
            try {
                item.key(Objects.requireNonNull(settings.codec().decode(storedKey), "the codec decoded the key as null"));
            } catch (Throwable e) {
                if (Throwables.isJvmFatal(e)) {
                    throw e;
                }
                // Shown under its stored key, with the reason: an operator must see such an item.
                String reason = e.toString();
                item.keyDecodingError(reason.length() > MAX_ERROR_LENGTH
                        ? reason.substring(0, reason.offsetByCodePoints(0, Math.min(MAX_ERROR_LENGTH,
                                reason.codePointCount(0, reason.length()))))
                        : reason);
            }
        }
        return item.build();
    }

    private static void stateIf(QueueItem.Builder item, Row row, String column, ItemState state) {
        if (Boolean.TRUE.equals(row.get(column, Boolean.class))) {
            item.state(state);
        }
    }

    // ---------------------------------------------------------------- actions

    @Override
    public Mono<List<String>> retry(String queue, Collection<String> storedKeys) {
        return Mono.defer(() -> {
            Objects.requireNonNull(queue, "queue");
            String[] keys = distinctKeys(storedKeys);
            if (keys.length == 0) {
                return Mono.just(List.<String>of());
            }
            return writeReturningKeys(connection -> sql.retryKeys.on(connection)
                    .bind("queue", queue)
                    .bind("attempt_limit", maxAttempts(queue))
                    .bind("keys", keys));
        });
    }

    @Override
    public Mono<List<String>> remove(String queue, Collection<String> storedKeys) {
        return Mono.defer(() -> {
            Objects.requireNonNull(queue, "queue");
            String[] keys = distinctKeys(storedKeys);
            if (keys.length == 0) {
                return Mono.just(List.<String>of());
            }
            return writeReturningKeys(connection -> sql.removeKeys.on(connection)
                    .bind("queue", queue)
                    .bind("keys", keys));
        });
    }

    @Override
    public Mono<Long> purgeCompleted(String queue, int limit) {
        return Mono.defer(() -> {
            Objects.requireNonNull(queue, "queue");
            if (limit < 1 || limit > MAX_PURGE_BATCH) {
                throw new IllegalArgumentException("limit must be 1 to " + MAX_PURGE_BATCH + " but was " + limit);
            }
            return database.withRetries(database.inConnection(connection -> Flux.from(sql.purgeCompleted.on(connection)
                            .bind("queue", queue)
                            .bind("purge_limit", limit)
                            .execute())
                    .concatMap(result -> result.getRowsUpdated())
                    .reduce(0L, Long::sum)));
        });
    }

    @Override
    public Mono<Instant> pause(String queue) {
        return Mono.defer(() -> {
            requireQueueName(queue);
            return database.withRetries(database.inConnection(connection -> Flux.from(sql.pause.on(connection)
                            .bind("queue", queue)
                            .execute())
                    .concatMap(result -> result.map((row, meta) ->
                            Instant.EPOCH.plus(longValue(row.get("paused_us", Long.class)), ChronoUnit.MICROS)))
                    .single()));
        });
    }

    @Override
    public Mono<Boolean> resume(String queue) {
        return Mono.defer(() -> {
            requireQueueName(queue);
            return database.withRetries(database.inConnection(connection -> Flux.from(sql.resume.on(connection)
                            .bind("queue", queue)
                            .execute())
                    .concatMap(result -> result.getRowsUpdated())
                    .reduce(0L, Long::sum)
                    .map(resumed -> resumed > 0)));
        });
    }

    /** A queue name an operator typed: what a queue could be called, else a clear error. */
    private static void requireQueueName(String queue) {
        Objects.requireNonNull(queue, "queue");
        if (queue.isEmpty() || queue.length() > WorkQueueConfig.MAX_NAME_LENGTH) {
            throw new IllegalArgumentException("queue must be 1 to " + WorkQueueConfig.MAX_NAME_LENGTH
                    + " characters but was " + queue.length());
        }
    }

    /** Runs a lock-ordered action whose rows are its {@code RETURNING item_key}, and sorts them in key order. */
    private Mono<List<String>> writeReturningKeys(Function<Connection, SqlStatement.Bound> statement) {
        return database.withRetries(database.inConnection(connection -> Flux.from(statement.apply(connection).execute())
                        .concatMap(result -> result.map((row, meta) -> Objects.requireNonNull(row.get("item_key", String.class))))
                        .collectList()))
                .map(keys -> {
                    List<String> sorted = new ArrayList<>(keys);
                    sorted.sort(CodePointOrder::compare);
                    return List.copyOf(sorted);
                });
    }

    /** The keys of an action, checked and without duplicates. */
    private static String[] distinctKeys(Collection<String> storedKeys) {
        Objects.requireNonNull(storedKeys, "storedKeys");
        Set<String> keys = new LinkedHashSet<>();
        for (String key : storedKeys) {
            Objects.requireNonNull(key, "a stored key is null");
            if (key.indexOf('\0') >= 0) {
                throw new IllegalArgumentException("a stored key never contains NUL, but one named here does");
            }
            keys.add(key);
        }
        if (keys.size() > MAX_KEYS_PER_ACTION) {
            throw new IllegalArgumentException("an action names at most " + MAX_KEYS_PER_ACTION
                    + " keys but this one names " + keys.size());
        }
        return keys.toArray(String[]::new);
    }

    // ---------------------------------------------------------------- plumbing

    private int maxAttempts(String queue) {
        QueueSettings settings = queues.get(queue);
        return settings == null ? 0 : settings.maxAttempts();
    }

    private static @Nullable Duration ofMicrosOrNull(@Nullable Long micros) {
        return micros == null ? null : ofMicros(micros);
    }

    /**
     * Where a page ended, as an opaque token: the state kind, the position in the listing order
     * (priority and availability for pending states, completion for completed ones, both in
     * microseconds since the epoch) and the key. Base64url over UTF-8, so any key survives a URL.
     */
    private record Cursor(int priority, long position, String key) {
        private static final String PENDING = "P";
        private static final String COMPLETED = "C";

        static String after(PageRow row, boolean completed) {
            String text = completed
                    ? COMPLETED + "\n" + Objects.requireNonNull(row.completedUs(), "completed_us") + "\n" + row.item().storedKey()
                    : PENDING + "\n" + row.item().priority() + "\n" + row.availableUs() + "\n" + row.item().storedKey();
            return Base64.getUrlEncoder().withoutPadding().encodeToString(text.getBytes(StandardCharsets.UTF_8));
        }

        static @Nullable Cursor parse(@Nullable String token, boolean completed) {
            if (token == null) {
                return null;
            }
            String text;
            try {
                text = new String(Base64.getUrlDecoder().decode(token), StandardCharsets.UTF_8);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("not a page cursor: " + token, e);
            }
            String[] parts = text.split("\n", completed ? 3 : 4);
            String kind = completed ? COMPLETED : PENDING;
            if (parts.length != (completed ? 3 : 4) || !parts[0].equals(kind) || parts[parts.length - 1].isEmpty()) {
                throw new IllegalArgumentException("not a page cursor of " + (completed ? "completed" : "pending")
                        + " items: " + token);
            }
            try {
                return completed
                        ? new Cursor(0, Long.parseLong(parts[1]), parts[2])
                        : new Cursor(Integer.parseInt(parts[1]), Long.parseLong(parts[2]), parts[3]);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("not a page cursor: " + token, e);
            }
        }
    }
}
