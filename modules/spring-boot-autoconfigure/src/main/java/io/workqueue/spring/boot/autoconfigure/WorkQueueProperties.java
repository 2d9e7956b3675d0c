package io.workqueue.spring.boot.autoconfigure;

import io.workqueue.InvalidConfigException;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkerOptions;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.DeprecatedConfigurationProperty;
import org.springframework.validation.Errors;
import org.springframework.validation.Validator;

/**
 * The {@code workqueue.*} properties: which queues the application has and how they, their
 * workers, the notification listener, housekeeping and health behave.
 *
 * <p>Validated when bound, before any bean uses it: a value the library would refuse fails the
 * application's start with a message naming the property (for instance
 * {@code workqueue.queues.tiles.max-claim-batch}) and the library's own reason. The library's
 * builders are the judges, so the rules cannot drift apart: each setting is tried on its own
 * against {@link WorkQueueConfig.Builder} or {@link WorkerOptions.Builder}.
 *
 * <p>A mutable JavaBean, as Spring Boot binds it; not thread-safe, and not meant to be changed after
 * binding.
 */
@ConfigurationProperties(WorkQueueProperties.PREFIX)
public class WorkQueueProperties implements Validator {

    /** The prefix of every property here. */
    public static final String PREFIX = "workqueue";

    /** Whether the starter creates anything at all. */
    private boolean enabled = true;

    /**
     * The table prefix of every queue that does not set its own: "" uses the table
     * work_queue_items, "app" uses app_work_queue_items.
     */
    private String tablePrefix = "";

    /** The queues to create, one ReactiveWorkQueue bean each, named by its key here. */
    private Map<String, Queue> queues = new LinkedHashMap<>();

    private final Schema schema = new Schema();

    private final Listener listener = new Listener();

    private final Housekeeping housekeeping = new Housekeeping();

    private final Health health = new Health();

    private final Console console = new Console();

    /** Whether the starter creates anything at all; default true. */
    public boolean isEnabled() {
        return enabled;
    }

    /** Sets {@link #isEnabled()}. */
    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    /** The table prefix of queues that set none; default "". */
    public String getTablePrefix() {
        return tablePrefix;
    }

    /** Sets {@link #getTablePrefix()}. */
    public void setTablePrefix(String tablePrefix) {
        this.tablePrefix = tablePrefix;
    }

    /** The configured queues by bean name, in configuration order. */
    public Map<String, Queue> getQueues() {
        return queues;
    }

    /** Sets {@link #getQueues()}. */
    public void setQueues(Map<String, Queue> queues) {
        this.queues = queues;
    }

    /** When the starter creates the tables. */
    public Schema getSchema() {
        return schema;
    }

    /** The LISTEN connections that wake idle workers. */
    public Listener getListener() {
        return listener;
    }

    /** The periodic reap, stats and horizon. */
    public Housekeeping getHousekeeping() {
        return housekeeping;
    }

    /** The health indicator's defaults. */
    public Health getHealth() {
        return health;
    }

    /** The web console: off unless enabled, read-only unless actions are enabled too. */
    public Console getConsole() {
        return console;
    }

    /** The table prefix {@code queue} uses: its own, or else {@link #getTablePrefix()}. */
    String tablePrefixOf(Queue queue) {
        String own = queue.getTablePrefix();
        return own != null ? own : tablePrefix;
    }

    /** The health threshold of {@code queue}: its own, or else the default. */
    Duration maxOldestReadyAgeOf(@Nullable Queue queue) {
        Duration own = queue == null ? null : queue.getHealth().getMaxOldestReadyAge();
        return own != null ? own : health.getMaxOldestReadyAge();
    }

    /**
     * The library configuration of the queue configured as {@code bean}.
     *
     * @throws InvalidConfigException if a value is out of range (binding validation reports it first)
     */
    WorkQueueConfig configOf(String bean, Queue queue) {
        WorkQueueConfig.Builder builder = WorkQueueConfig.builder(queue.nameOr(bean)).tablePrefix(tablePrefixOf(queue));
        for (Setting<WorkQueueConfig.Builder, Queue> setting : Queue.SETTINGS) {
            setting.apply().accept(builder, queue);
        }
        return builder.build();
    }

    // ------------------------------------------------------------------ validation

    @Override
    public boolean supports(Class<?> type) {
        return WorkQueueProperties.class.isAssignableFrom(type);
    }

    @Override
    public void validate(Object target, Errors errors) {
        WorkQueueProperties properties = (WorkQueueProperties) target;
        check(errors, "tablePrefix", () -> WorkQueueConfig.builder("q").tablePrefix(properties.tablePrefix).build());
        properties.queues.forEach((bean, queue) -> queue.validate(bean, properties, errors));
        properties.schema.validate(errors);
        properties.listener.validate(errors);
        properties.housekeeping.validate(errors);
        requirePositive(errors, "health.maxOldestReadyAge", properties.health.getMaxOldestReadyAge());
        requirePositive(errors, "health.timeout", properties.health.getTimeout());
        properties.console.validate(errors);
    }

    /** Runs {@code attempt}; if the library refuses it, rejects {@code field} with the library's reason. */
    private static void check(Errors errors, String field, Runnable attempt) {
        try {
            attempt.run();
        } catch (InvalidConfigException e) {
            errors.rejectValue(field, "invalid", e.getMessage());
        }
    }

    private static void requirePositive(Errors errors, String field, @Nullable Duration value) {
        if (value == null || value.isZero() || value.isNegative()) {
            errors.rejectValue(field, "invalid", "must be positive but was " + value);
        }
    }

    /** One property and how it is handed to a library builder, so validation and use share it. */
    record Setting<B, P>(String field, BiConsumer<B, P> apply) {}

    // ------------------------------------------------------------------ nested groups

    /**
     * One queue: every {@link WorkQueueConfig} setting, its key type, its worker and its health
     * threshold. Defaults are the library's (a test keeps them equal).
     */
    public static class Queue {
        static final List<Setting<WorkQueueConfig.Builder, Queue>> SETTINGS = List.of(
                new Setting<>("notifyChannel", (b, q) -> b.notifyChannel(q.notifyChannel)),
                new Setting<>("notifyOnEnqueue", (b, q) -> b.notifyOnEnqueue(q.notifyOnEnqueue)),
                new Setting<>("retention", (b, q) -> b.retention(q.retention)),
                new Setting<>("maxAttempts", (b, q) -> b.maxAttempts(q.maxAttempts)),
                new Setting<>("maxClaimBatch", (b, q) -> b.maxClaimBatch(q.maxClaimBatch)),
                new Setting<>("reapBatchSize", (b, q) -> b.reapBatchSize(q.reapBatchSize)),
                new Setting<>("writeAttempts", (b, q) -> b.writeAttempts(q.writeAttempts)),
                new Setting<>("minWakeInterval", (b, q) -> b.minWakeInterval(q.minWakeInterval)),
                new Setting<>("writeTimeout", (b, q) -> b.writeTimeout(q.writeTimeout)),
                new Setting<>("deleteOnComplete", (b, q) -> b.deleteOnComplete(q.deleteOnComplete)),
                new Setting<>("maxWriteBatch", (b, q) -> b.maxWriteBatch(q.maxWriteBatch)),
                new Setting<>("horizonWarning", (b, q) -> b.horizonWarning(q.horizonWarning)),
                new Setting<>("storeTraceContexts", (b, q) -> b.storeTraceContexts(q.storeTraceContexts)));

        /**
         * The logical queue name stored in the table (free text, 1 to 512 characters); default: this
         * queue's key under workqueue.queues.
         */
        private @Nullable String name;

        /**
         * The key type: String, Integer, Long, UUID, an enum, or a record or class stored as JSON.
         */
        private Class<?> keyType = String.class;

        /** This queue's table prefix; default: workqueue.table-prefix. */
        private @Nullable String tablePrefix;

        /**
         * The LISTEN/NOTIFY channel (a plain lower-case identifier): every enqueue notifies it and
         * the starter listens on it, so idle workers wake at once instead of at their next poll.
         * Empty for none.
         */
        private String notifyChannel = "";

        /**
         * Whether enqueues send notifications on the notify channel; false keeps the channel (the
         * starter still listens on it) while this instance's enqueues send nothing (poll-only).
         */
        private boolean notifyOnEnqueue = true;

        /** How long completed items are kept before reap may delete them; at least 1s. */
        private Duration retention = Duration.ofHours(24);

        /** Claims allowed per item before it stalls; 0 means unlimited. */
        private int maxAttempts = 0;

        /** The most items one claim statement leases; at least 1. */
        private int maxClaimBatch = 500;

        /** The most rows one reap deletes; at least 1. */
        private int reapBatchSize = 1000;

        /** Runs of a write PostgreSQL asks to retry (SQLSTATE 40001, 40P01); at least 1. */
        private int writeAttempts = 3;

        /** The least time between two wakeups ending a worker's wait; at least 1ms. */
        private Duration minWakeInterval = Duration.ofMillis(100);

        /**
         * How long one group-committed write (merged enqueues, completes or claims) may take before
         * its callers fail with WriteTimeoutException; the library's writeTimeout.
         */
        private Duration writeTimeout = Duration.ofSeconds(10);

        /** Whether completing an item deletes its row at once instead of keeping it for retention. */
        private boolean deleteOnComplete = false;

        /**
         * Whether enqueues store the caller's trace context with the key, for the handler's span to
         * link to (needs schema version 5 and Micrometer Tracing).
         */
        private boolean storeTraceContexts = false;

        /** The most keys one group-committed write carries; at least 1. */
        private int maxWriteBatch = 10_000;

        /**
         * How old the transaction holding back the MVCC horizon may get before horizon() logs a
         * WARN; at least 1s.
         */
        private Duration horizonWarning = Duration.ofMinutes(5);

        private final Worker worker = new Worker();

        private final QueueHealth health = new QueueHealth();

        /** The logical name, or {@code bean} when none is set. */
        String nameOr(String bean) {
            return name != null ? name : bean;
        }

        void validate(String bean, WorkQueueProperties properties, Errors errors) {
            String path = "queues[" + bean + "].";
            String logicalName = nameOr(bean);
            check(errors, path + "name", () -> WorkQueueConfig.builder(logicalName).build());
            check(errors, path + "tablePrefix",
                    () -> WorkQueueConfig.builder("q").tablePrefix(properties.tablePrefixOf(this)).build());
            for (Setting<WorkQueueConfig.Builder, Queue> setting : SETTINGS) {
                check(errors, path + setting.field(), () -> {
                    WorkQueueConfig.Builder builder = WorkQueueConfig.builder("q");
                    setting.apply().accept(builder, this);
                    builder.build();
                });
            }
            worker.validate(path + "worker.", errors);
            Duration threshold = health.getMaxOldestReadyAge();
            if (threshold != null) {
                requirePositive(errors, path + "health.maxOldestReadyAge", threshold);
            }
        }

        /** The logical name; null means the key under workqueue.queues. */
        public @Nullable String getName() {
            return name;
        }

        /** Sets {@link #getName()}. */
        public void setName(@Nullable String name) {
            this.name = name;
        }

        /** The key type; default {@code String}. */
        public Class<?> getKeyType() {
            return keyType;
        }

        /** Sets {@link #getKeyType()}. */
        public void setKeyType(Class<?> keyType) {
            this.keyType = keyType;
        }

        /** This queue's own table prefix; null means workqueue.table-prefix. */
        public @Nullable String getTablePrefix() {
            return tablePrefix;
        }

        /** Sets {@link #getTablePrefix()}. */
        public void setTablePrefix(@Nullable String tablePrefix) {
            this.tablePrefix = tablePrefix;
        }

        /** The notification channel; "" for none. */
        public String getNotifyChannel() {
            return notifyChannel;
        }

        /** Sets {@link #getNotifyChannel()}. */
        public void setNotifyChannel(String notifyChannel) {
            this.notifyChannel = notifyChannel;
        }

        /** See {@link WorkQueueConfig#notifyOnEnqueue()}. */
        public boolean isNotifyOnEnqueue() {
            return notifyOnEnqueue;
        }

        /** Sets {@link #isNotifyOnEnqueue()}. */
        public void setNotifyOnEnqueue(boolean notifyOnEnqueue) {
            this.notifyOnEnqueue = notifyOnEnqueue;
        }

        /** See {@link WorkQueueConfig#retention()}. */
        public Duration getRetention() {
            return retention;
        }

        /** Sets {@link #getRetention()}. */
        public void setRetention(Duration retention) {
            this.retention = retention;
        }

        /** See {@link WorkQueueConfig#maxAttempts()}. */
        public int getMaxAttempts() {
            return maxAttempts;
        }

        /** Sets {@link #getMaxAttempts()}. */
        public void setMaxAttempts(int maxAttempts) {
            this.maxAttempts = maxAttempts;
        }

        /** See {@link WorkQueueConfig#maxClaimBatch()}. */
        public int getMaxClaimBatch() {
            return maxClaimBatch;
        }

        /** Sets {@link #getMaxClaimBatch()}. */
        public void setMaxClaimBatch(int maxClaimBatch) {
            this.maxClaimBatch = maxClaimBatch;
        }

        /** See {@link WorkQueueConfig#reapBatchSize()}. */
        public int getReapBatchSize() {
            return reapBatchSize;
        }

        /** Sets {@link #getReapBatchSize()}. */
        public void setReapBatchSize(int reapBatchSize) {
            this.reapBatchSize = reapBatchSize;
        }

        /** See {@link WorkQueueConfig#writeAttempts()}. */
        public int getWriteAttempts() {
            return writeAttempts;
        }

        /** Sets {@link #getWriteAttempts()}. */
        public void setWriteAttempts(int writeAttempts) {
            this.writeAttempts = writeAttempts;
        }

        /** See {@link WorkQueueConfig#minWakeInterval()}. */
        public Duration getMinWakeInterval() {
            return minWakeInterval;
        }

        /** Sets {@link #getMinWakeInterval()}. */
        public void setMinWakeInterval(Duration minWakeInterval) {
            this.minWakeInterval = minWakeInterval;
        }

        /** See {@link WorkQueueConfig#writeTimeout()}. */
        public Duration getWriteTimeout() {
            return writeTimeout;
        }

        /** Sets {@link #getWriteTimeout()}. */
        public void setWriteTimeout(Duration writeTimeout) {
            this.writeTimeout = writeTimeout;
        }

        /**
         * The former name of {@link #getWriteTimeout()}, from before it bounded completes and claims
         * too; the same value.
         *
         * @deprecated use {@code write-timeout}
         */
        @Deprecated
        @DeprecatedConfigurationProperty(replacement = "workqueue.queues.*.write-timeout")
        public Duration getEnqueueTimeout() {
            return writeTimeout;
        }

        /**
         * Sets {@link #getWriteTimeout()} under its former name.
         *
         * @deprecated use {@code write-timeout}
         */
        @Deprecated
        public void setEnqueueTimeout(Duration enqueueTimeout) {
            this.writeTimeout = enqueueTimeout;
        }

        /** See {@link WorkQueueConfig#storeTraceContexts()}. */
        public boolean isStoreTraceContexts() {
            return storeTraceContexts;
        }

        /** Sets {@link #isStoreTraceContexts()}. */
        public void setStoreTraceContexts(boolean storeTraceContexts) {
            this.storeTraceContexts = storeTraceContexts;
        }

        /** See {@link WorkQueueConfig#deleteOnComplete()}. */
        public boolean isDeleteOnComplete() {
            return deleteOnComplete;
        }

        /** Sets {@link #isDeleteOnComplete()}. */
        public void setDeleteOnComplete(boolean deleteOnComplete) {
            this.deleteOnComplete = deleteOnComplete;
        }

        /** See {@link WorkQueueConfig#maxWriteBatch()}. */
        public int getMaxWriteBatch() {
            return maxWriteBatch;
        }

        /** Sets {@link #getMaxWriteBatch()}. */
        public void setMaxWriteBatch(int maxWriteBatch) {
            this.maxWriteBatch = maxWriteBatch;
        }

        /** See {@link WorkQueueConfig#horizonWarning()}. */
        public Duration getHorizonWarning() {
            return horizonWarning;
        }

        /** Sets {@link #getHorizonWarning()}. */
        public void setHorizonWarning(Duration horizonWarning) {
            this.horizonWarning = horizonWarning;
        }

        /** How this queue's worker runs, when a handler bean is bound to it. */
        public Worker getWorker() {
            return worker;
        }

        /** This queue's health threshold. */
        public QueueHealth getHealth() {
            return health;
        }
    }

    /**
     * How the worker of a queue runs: the {@link WorkerOptions} handed to
     * {@code ReactiveWorkQueue.process}, and how the starter restarts it. Defaults are the library's.
     */
    public static class Worker {
        static final List<Setting<WorkerOptions.Builder, Worker>> SETTINGS = List.of(
                new Setting<>("concurrency", (b, w) -> b.concurrency(w.concurrency)),
                new Setting<>("lease", (b, w) -> b.lease(w.lease)),
                new Setting<>("poll", (b, w) -> b.poll(w.poll)),
                new Setting<>("claimBatch", (b, w) -> b.claimBatch(w.claimBatch)));

        /** Whether this application runs the queue's handler bean; false to only enqueue here. */
        private boolean enabled = true;

        /** Handlers running at once, which is also the most leases the worker holds; at least 1. */
        private int concurrency = 16;

        /**
         * The lease each claim takes: longer than a handler's worst case, since a handler still
         * running when its lease ends is cancelled and its item handed out again.
         */
        private Duration lease = Duration.ofSeconds(30);

        /** How long an idle worker waits for a wakeup before claiming again. */
        private Duration poll = Duration.ofSeconds(1);

        /** The most items one claim asks for (never more than the free handler slots); at least 1. */
        private int claimBatch = 100;

        /** The delay before a failed item is due again after its first attempt; doubled per attempt. */
        private Duration backoff = Duration.ofSeconds(1);

        /** The ceiling of that delay. */
        private Duration maxBackoff = Duration.ofMinutes(5);

        /** The first delay before a worker whose stream ended on an error is restarted. */
        private Duration restartBackoff = Duration.ofSeconds(1);

        /** The ceiling of the restart delay, which doubles while restarts keep failing. */
        private Duration maxRestartBackoff = Duration.ofMinutes(1);

        /**
         * The worker options.
         *
         * @throws InvalidConfigException if a value is out of range (binding validation reports it first)
         */
        WorkerOptions options() {
            WorkerOptions.Builder builder = WorkerOptions.builder().backoff(this::backoffFor);
            for (Setting<WorkerOptions.Builder, Worker> setting : SETTINGS) {
                setting.apply().accept(builder, this);
            }
            return builder.build();
        }

        /**
         * {@link #getBackoff()} doubled for each attempt after the first, capped at
         * {@link #getMaxBackoff()}; with the defaults, exactly {@link WorkerOptions#exponentialBackoff}.
         */
        Duration backoffFor(int attempts) {
            int doublings = Math.max(0, Math.min(attempts - 1, 40));
            // Compare before multiplying, so a long back-off cannot overflow.
            Duration delay = backoff;
            for (int i = 0; i < doublings && delay.compareTo(maxBackoff) < 0; i++) {
                delay = delay.multipliedBy(2);
            }
            return delay.compareTo(maxBackoff) > 0 ? maxBackoff : delay;
        }

        void validate(String path, Errors errors) {
            for (Setting<WorkerOptions.Builder, Worker> setting : SETTINGS) {
                check(errors, path + setting.field(), () -> {
                    WorkerOptions.Builder builder = WorkerOptions.builder();
                    setting.apply().accept(builder, this);
                    builder.build();
                });
            }
            if (backoff == null || backoff.isNegative()) {
                errors.rejectValue(path + "backoff", "invalid", "must be zero or more but was " + backoff);
            } else if (maxBackoff == null || maxBackoff.compareTo(backoff) < 0) {
                errors.rejectValue(path + "maxBackoff", "invalid",
                        "must be at least backoff (" + backoff + ") but was " + maxBackoff);
            }
            requirePositive(errors, path + "restartBackoff", restartBackoff);
            if (restartBackoff != null && (maxRestartBackoff == null || maxRestartBackoff.compareTo(restartBackoff) < 0)) {
                errors.rejectValue(path + "maxRestartBackoff", "invalid",
                        "must be at least restart-backoff (" + restartBackoff + ") but was " + maxRestartBackoff);
            }
        }

        /** Whether the worker runs here; default true. */
        public boolean isEnabled() {
            return enabled;
        }

        /** Sets {@link #isEnabled()}. */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        /** See {@link WorkerOptions#concurrency()}. */
        public int getConcurrency() {
            return concurrency;
        }

        /** Sets {@link #getConcurrency()}. */
        public void setConcurrency(int concurrency) {
            this.concurrency = concurrency;
        }

        /** See {@link WorkerOptions#lease()}. */
        public Duration getLease() {
            return lease;
        }

        /** Sets {@link #getLease()}. */
        public void setLease(Duration lease) {
            this.lease = lease;
        }

        /** See {@link WorkerOptions#poll()}. */
        public Duration getPoll() {
            return poll;
        }

        /** Sets {@link #getPoll()}. */
        public void setPoll(Duration poll) {
            this.poll = poll;
        }

        /** See {@link WorkerOptions#claimBatch()}. */
        public int getClaimBatch() {
            return claimBatch;
        }

        /** Sets {@link #getClaimBatch()}. */
        public void setClaimBatch(int claimBatch) {
            this.claimBatch = claimBatch;
        }

        /** The first retry delay of a failed item; default 1s. */
        public Duration getBackoff() {
            return backoff;
        }

        /** Sets {@link #getBackoff()}. */
        public void setBackoff(Duration backoff) {
            this.backoff = backoff;
        }

        /** The ceiling of a failed item's retry delay; default 5m. */
        public Duration getMaxBackoff() {
            return maxBackoff;
        }

        /** Sets {@link #getMaxBackoff()}. */
        public void setMaxBackoff(Duration maxBackoff) {
            this.maxBackoff = maxBackoff;
        }

        /** The first delay before restarting a failed worker; default 1s. */
        public Duration getRestartBackoff() {
            return restartBackoff;
        }

        /** Sets {@link #getRestartBackoff()}. */
        public void setRestartBackoff(Duration restartBackoff) {
            this.restartBackoff = restartBackoff;
        }

        /** The ceiling of the restart delay; default 1m. */
        public Duration getMaxRestartBackoff() {
            return maxRestartBackoff;
        }

        /** Sets {@link #getMaxRestartBackoff()}. */
        public void setMaxRestartBackoff(Duration maxRestartBackoff) {
            this.maxRestartBackoff = maxRestartBackoff;
        }
    }

    /** A queue's own health threshold. */
    public static class QueueHealth {
        /** How long the oldest ready item may wait before the queue is DOWN; default: workqueue.health.max-oldest-ready-age. */
        private @Nullable Duration maxOldestReadyAge;

        /** The queue's own threshold; null means the default. */
        public @Nullable Duration getMaxOldestReadyAge() {
            return maxOldestReadyAge;
        }

        /** Sets {@link #getMaxOldestReadyAge()}. */
        public void setMaxOldestReadyAge(@Nullable Duration maxOldestReadyAge) {
            this.maxOldestReadyAge = maxOldestReadyAge;
        }
    }

    /** Whether and how the starter creates the queue tables at startup. */
    public static class Schema {
        /**
         * Whether to create or upgrade every configured queue's table at startup
         * (WorkQueueMigrations.apply, idempotent), blocking the start until done. Off by default, so
         * that a migration tool owns the schema.
         */
        private boolean apply = false;

        /** How long applying the schema may take before the start fails. */
        private Duration timeout = Duration.ofSeconds(30);

        void validate(Errors errors) {
            requirePositive(errors, "schema.timeout", timeout);
        }

        /** Whether the schema is applied at startup; default false. */
        public boolean isApply() {
            return apply;
        }

        /** Sets {@link #isApply()}. */
        public void setApply(boolean apply) {
            this.apply = apply;
        }

        /** The bound on applying it; default 30s. */
        public Duration getTimeout() {
            return timeout;
        }

        /** Sets {@link #getTimeout()}. */
        public void setTimeout(Duration timeout) {
            this.timeout = timeout;
        }
    }

    /** The notification listeners: one LISTEN connection per distinct notify channel. */
    public static class Listener {
        /** The first delay before reconnecting a lost LISTEN connection. */
        private Duration reconnectBackoff = Duration.ofMillis(100);

        /** The ceiling of the reconnect delay. */
        private Duration maxReconnectBackoff = Duration.ofSeconds(10);

        /** How often an idle LISTEN connection proves itself alive with SELECT 1. */
        private Duration healthCheckInterval = Duration.ofSeconds(30);

        /** How long that check may take before the connection is replaced. */
        private Duration healthCheckTimeout = Duration.ofSeconds(5);

        void validate(Errors errors) {
            requirePositive(errors, "listener.reconnectBackoff", reconnectBackoff);
            if (reconnectBackoff != null
                    && (maxReconnectBackoff == null || maxReconnectBackoff.compareTo(reconnectBackoff) < 0)) {
                errors.rejectValue("listener.maxReconnectBackoff", "invalid",
                        "must be at least reconnect-backoff (" + reconnectBackoff + ") but was " + maxReconnectBackoff);
            }
            requirePositive(errors, "listener.healthCheckInterval", healthCheckInterval);
            requirePositive(errors, "listener.healthCheckTimeout", healthCheckTimeout);
        }

        /** Default 100ms. */
        public Duration getReconnectBackoff() {
            return reconnectBackoff;
        }

        /** Sets {@link #getReconnectBackoff()}. */
        public void setReconnectBackoff(Duration reconnectBackoff) {
            this.reconnectBackoff = reconnectBackoff;
        }

        /** Default 10s. */
        public Duration getMaxReconnectBackoff() {
            return maxReconnectBackoff;
        }

        /** Sets {@link #getMaxReconnectBackoff()}. */
        public void setMaxReconnectBackoff(Duration maxReconnectBackoff) {
            this.maxReconnectBackoff = maxReconnectBackoff;
        }

        /** Default 30s. */
        public Duration getHealthCheckInterval() {
            return healthCheckInterval;
        }

        /** Sets {@link #getHealthCheckInterval()}. */
        public void setHealthCheckInterval(Duration healthCheckInterval) {
            this.healthCheckInterval = healthCheckInterval;
        }

        /** Default 5s. */
        public Duration getHealthCheckTimeout() {
            return healthCheckTimeout;
        }

        /** Sets {@link #getHealthCheckTimeout()}. */
        public void setHealthCheckTimeout(Duration healthCheckTimeout) {
            this.healthCheckTimeout = healthCheckTimeout;
        }
    }

    /** The periodic reap(), stats() and horizon() of every queue. */
    public static class Housekeeping {
        /** Whether to reap and read stats and the MVCC horizon on a schedule (they feed the Micrometer gauges). */
        private boolean enabled = true;

        /**
         * How often: each round, one instance of the fleet per queue (chosen on the database, for a
         * lease of 1.25 intervals) reaps it (repeating while a reap deletes a full batch) and reads
         * its stats and horizon; the others report that reading.
         */
        private Duration interval = Duration.ofSeconds(30);

        void validate(Errors errors) {
            requirePositive(errors, "housekeeping.interval", interval);
        }

        /** Default true. */
        public boolean isEnabled() {
            return enabled;
        }

        /** Sets {@link #isEnabled()}. */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        /** Default 30s. */
        public Duration getInterval() {
            return interval;
        }

        /** Sets {@link #getInterval()}. */
        public void setInterval(Duration interval) {
            this.interval = interval;
        }
    }

    /** The defaults of the per-queue health indicator. */
    public static class Health {
        /** How long the oldest ready item may wait before its queue reports DOWN. */
        private Duration maxOldestReadyAge = Duration.ofMinutes(5);

        /** How long the stats read behind a health check may take before the queue reports DOWN. */
        private Duration timeout = Duration.ofSeconds(5);

        /** Default 5m. */
        public Duration getMaxOldestReadyAge() {
            return maxOldestReadyAge;
        }

        /** Sets {@link #getMaxOldestReadyAge()}. */
        public void setMaxOldestReadyAge(Duration maxOldestReadyAge) {
            this.maxOldestReadyAge = maxOldestReadyAge;
        }

        /** Default 5s. */
        public Duration getTimeout() {
            return timeout;
        }

        /** Sets {@link #getTimeout()}. */
        public void setTimeout(Duration timeout) {
            this.timeout = timeout;
        }
    }

    /**
     * The web console (WebFlux applications only): a page and a JSON API under {@link #getPath()}
     * to see every queue, list its items by state and look at one, and, only when
     * {@link #isActionsEnabled()}, retry, remove and purge.
     */
    public static class Console {
        /** Whether to serve the console. Off by default: it shows every key and error of every queue. */
        private boolean enabled = false;

        /** Where the console is served: a path of letters, digits, '-', '_', '.' and '/'. */
        private String path = "/workqueue";

        /**
         * Whether the console may change anything (retry, remove, purge). Off by default; even on,
         * actions are accepted only as same-origin POSTs carrying the console's token.
         */
        private boolean actionsEnabled = false;

        /**
         * How old the queue list's stats may be before a view reads them again (in the background,
         * showing the previous read meanwhile): each is a stats read, which reads every pending row.
         */
        private Duration statsMaxAge = Duration.ofSeconds(5);

        void validate(Errors errors) {
            if (path == null || !path.matches("(/[A-Za-z0-9._-]+)+")) {
                errors.rejectValue("console.path", "invalid",
                        "must be '/' followed by segments of letters, digits, '.', '_' and '-', without a trailing '/', but was " + path);
            }
            requirePositive(errors, "console.statsMaxAge", statsMaxAge);
        }

        /** Default false. */
        public boolean isEnabled() {
            return enabled;
        }

        /** Sets {@link #isEnabled()}. */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        /** Default "/workqueue". */
        public String getPath() {
            return path;
        }

        /** Sets {@link #getPath()}. */
        public void setPath(String path) {
            this.path = path;
        }

        /** Default false. */
        public boolean isActionsEnabled() {
            return actionsEnabled;
        }

        /** Sets {@link #isActionsEnabled()}. */
        public void setActionsEnabled(boolean actionsEnabled) {
            this.actionsEnabled = actionsEnabled;
        }

        /** Default 5s. */
        public Duration getStatsMaxAge() {
            return statsMaxAge;
        }

        /** Sets {@link #getStatsMaxAge()}. */
        public void setStatsMaxAge(Duration statsMaxAge) {
            this.statsMaxAge = statsMaxAge;
        }
    }
}
