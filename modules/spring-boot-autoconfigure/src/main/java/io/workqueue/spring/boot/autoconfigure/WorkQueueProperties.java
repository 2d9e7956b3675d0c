package io.workqueue.spring.boot.autoconfigure;

import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkerOptions;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.validation.Errors;
import org.springframework.validation.Validator;

/**
 * The {@code workqueue.*} properties: which queues the application has and how they, their
 * workers, the notification listener and housekeeping behave. Data only: {@code QueueSettings}
 * judges the values and maps them onto the library's builders; {@code workqueue.health.*} and
 * {@code workqueue.console.*} belong to their own auto-configurations.
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

    /** Judged by {@code QueueSettings}, which also maps these properties onto the library's builders. */
    @Override
    public boolean supports(Class<?> type) {
        return WorkQueueProperties.class.isAssignableFrom(type);
    }

    /** Rejects each value the library would refuse, naming its property: see {@code QueueSettings}. */
    @Override
    public void validate(Object target, Errors errors) {
        QueueSettings.validate((WorkQueueProperties) target, errors);
    }

    // ------------------------------------------------------------------ nested groups

    /**
     * One queue: every {@link WorkQueueConfig} setting, its key type, its worker and its health
     * threshold. Defaults are the library's (a test keeps them equal).
     */
    public static class Queue {
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
         * Where the handler runs: worker-pool (a pool of the worker's own, at most concurrency
         * threads, where blocking is allowed), bounded-elastic (Reactor's shared pool), or driver
         * (the database driver's event-loop threads: no hand-off, and a handler must never block).
         */
        private HandlerScheduler handlerScheduler = HandlerScheduler.WORKER_POOL;

        /**
         * How long a handler may run while the worker keeps its lease alive (extending it on the
         * database clock while the handler runs); unset, a handler still running at its lease's
         * end is cancelled and its item lapses.
         */
        private @Nullable Duration maxRunTime;

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

        /** See {@link WorkerOptions#maxRunTime()}; unset by default. */
        public @Nullable Duration getMaxRunTime() {
            return maxRunTime;
        }

        /** Sets {@link #getMaxRunTime()}. */
        public void setMaxRunTime(@Nullable Duration maxRunTime) {
            this.maxRunTime = maxRunTime;
        }

        /** See {@link WorkerOptions#handlerScheduler()}; default {@code worker-pool}. */
        public HandlerScheduler getHandlerScheduler() {
            return handlerScheduler;
        }

        /** Sets {@link #getHandlerScheduler()}. */
        public void setHandlerScheduler(HandlerScheduler handlerScheduler) {
            this.handlerScheduler = handlerScheduler;
        }
    }

    /**
     * The values of {@code worker.handler-scheduler}: the choices of
     * {@link WorkerOptions#handlerScheduler()} a property can name.
     */
    public enum HandlerScheduler {
        /** The library's default: a pool of the worker's own, at most {@code concurrency} threads. */
        WORKER_POOL,
        /** Reactor's shared {@code Schedulers.boundedElastic()}, capped for the whole JVM. */
        BOUNDED_ELASTIC,
        /** {@code Schedulers.immediate()}: the database driver's threads; a handler must never block. */
        DRIVER
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

}
