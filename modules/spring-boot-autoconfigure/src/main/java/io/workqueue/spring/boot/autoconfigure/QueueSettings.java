package io.workqueue.spring.boot.autoconfigure;

import io.workqueue.InvalidConfigException;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkerOptions;
import io.workqueue.spring.boot.autoconfigure.WorkQueueProperties.HandlerScheduler;
import io.workqueue.spring.boot.autoconfigure.WorkQueueProperties.Queue;
import io.workqueue.spring.boot.autoconfigure.WorkQueueProperties.Worker;
import java.time.Duration;
import java.util.List;
import java.util.function.BiConsumer;
import org.jspecify.annotations.Nullable;
import org.springframework.validation.Errors;
import reactor.core.scheduler.Schedulers;

/**
 * What the {@code workqueue.*} properties mean to the library: the one place that maps them onto
 * {@link WorkQueueConfig.Builder} and {@link WorkerOptions.Builder}, and judges them when bound.
 *
 * <p>The library's builders are the judges, so the rules cannot drift apart: validation tries each
 * setting on its own against a fresh builder and reports the builder's reason under the setting's
 * property; mapping applies the same list of settings. The starter adds only the checks the library
 * has no builder for (the restart back-off, the listener's and housekeeping's durations), worded as
 * {@link PropertyChecks} words them.
 */
final class QueueSettings {
    private QueueSettings() {}

    /** One property and how it is handed to a library builder, so validation and use share it. */
    private record Setting<B, P>(String field, BiConsumer<B, P> apply) {}

    private static final List<Setting<WorkQueueConfig.Builder, Queue>> QUEUE = List.of(
            new Setting<>("notifyChannel", (b, q) -> b.notifyChannel(q.getNotifyChannel())),
            new Setting<>("notifyOnEnqueue", (b, q) -> b.notifyOnEnqueue(q.isNotifyOnEnqueue())),
            new Setting<>("retention", (b, q) -> b.retention(q.getRetention())),
            new Setting<>("maxAttempts", (b, q) -> b.maxAttempts(q.getMaxAttempts())),
            new Setting<>("maxClaimBatch", (b, q) -> b.maxClaimBatch(q.getMaxClaimBatch())),
            new Setting<>("reapBatchSize", (b, q) -> b.reapBatchSize(q.getReapBatchSize())),
            new Setting<>("writeAttempts", (b, q) -> b.writeAttempts(q.getWriteAttempts())),
            new Setting<>("minWakeInterval", (b, q) -> b.minWakeInterval(q.getMinWakeInterval())),
            new Setting<>("writeTimeout", (b, q) -> b.writeTimeout(q.getWriteTimeout())),
            new Setting<>("deleteOnComplete", (b, q) -> b.deleteOnComplete(q.isDeleteOnComplete())),
            new Setting<>("maxWriteBatch", (b, q) -> b.maxWriteBatch(q.getMaxWriteBatch())),
            new Setting<>("horizonWarning", (b, q) -> b.horizonWarning(q.getHorizonWarning())),
            new Setting<>("storeTraceContexts", (b, q) -> b.storeTraceContexts(q.isStoreTraceContexts())));

    private static final List<Setting<WorkerOptions.Builder, Worker>> WORKER = List.of(
            new Setting<>("concurrency", (b, w) -> b.concurrency(w.getConcurrency())),
            new Setting<>("lease", (b, w) -> b.lease(w.getLease())),
            new Setting<>("poll", (b, w) -> b.poll(w.getPoll())),
            new Setting<>("claimBatch", (b, w) -> b.claimBatch(w.getClaimBatch())),
            new Setting<>("handlerScheduler", (b, w) -> handlerScheduler(w.getHandlerScheduler(), b)),
            new Setting<>("maxRunTime", (b, w) -> b.maxRunTime(w.getMaxRunTime())));

    // ------------------------------------------------------------------ mapping

    /**
     * The library configuration of the queue configured as {@code bean}.
     *
     * @throws InvalidConfigException if a value is out of range (binding validation reports it first)
     */
    static WorkQueueConfig configOf(WorkQueueProperties properties, String bean, Queue queue) {
        WorkQueueConfig.Builder builder = WorkQueueConfig.builder(nameOf(bean, queue))
                .tablePrefix(tablePrefixOf(properties, queue));
        QUEUE.forEach(setting -> setting.apply().accept(builder, queue));
        return builder.build();
    }

    /**
     * The worker options of {@code worker}: its settings, the library's
     * {@linkplain WorkerOptions#exponentialBackoff(Duration, Duration) exponential back-off} from
     * {@code backoff} to {@code max-backoff} (with the defaults, exactly the library's default), and
     * restarts on error from {@code restart-backoff} to {@code max-restart-backoff}.
     *
     * @throws InvalidConfigException if a value is out of range (binding validation reports it first)
     */
    static WorkerOptions options(Worker worker) {
        WorkerOptions.Builder builder = WorkerOptions.builder()
                .backoff(WorkerOptions.exponentialBackoff(worker.getBackoff(), worker.getMaxBackoff()))
                .restartOnError(worker.getRestartBackoff(), worker.getMaxRestartBackoff());
        WORKER.forEach(setting -> setting.apply().accept(builder, worker));
        return builder.build();
    }

    /** The table prefix {@code queue} uses: its own, or else the application's. */
    static String tablePrefixOf(WorkQueueProperties properties, Queue queue) {
        String own = queue.getTablePrefix();
        return own != null ? own : properties.getTablePrefix();
    }

    /** The health threshold of {@code queue}: its own, or else the default. */
    static Duration maxOldestReadyAgeOf(@Nullable Queue queue, WorkQueueHealthProperties health) {
        Duration own = queue == null ? null : queue.getHealth().getMaxOldestReadyAge();
        return own != null ? own : health.getMaxOldestReadyAge();
    }

    /** The logical name of the queue configured as {@code bean}: its own, or else the bean name. */
    private static String nameOf(String bean, Queue queue) {
        String name = queue.getName();
        return name != null ? name : bean;
    }

    /**
     * Sets {@code choice} on {@code builder}; the worker's pool is the builder's default, so it
     * sets nothing. A {@code null} choice (an empty property) is handed on, for the builder to
     * refuse with a message naming the setting.
     */
    private static void handlerScheduler(@Nullable HandlerScheduler choice, WorkerOptions.Builder builder) {
        if (choice == null) {
            builder.handlerScheduler(null);
            return;
        }
        switch (choice) {
            case WORKER_POOL -> { }
            case BOUNDED_ELASTIC -> builder.handlerScheduler(Schedulers.boundedElastic());
            case DRIVER -> builder.handlerScheduler(Schedulers.immediate());
        }
    }

    // ------------------------------------------------------------------ validation

    /** Rejects each value of {@code properties} the library would refuse, under its property's path. */
    static void validate(WorkQueueProperties properties, Errors errors) {
        check(errors, "tablePrefix", () -> WorkQueueConfig.builder("q").tablePrefix(properties.getTablePrefix()).build());
        properties.getQueues().forEach((bean, queue) -> validateQueue(properties, bean, queue, errors));
        PropertyChecks.requirePositive(errors, "schema.timeout", properties.getSchema().getTimeout());
        validateListener(properties.getListener(), errors);
        PropertyChecks.requirePositive(errors, "housekeeping.interval", properties.getHousekeeping().getInterval());
    }

    private static void validateQueue(WorkQueueProperties properties, String bean, Queue queue, Errors errors) {
        String path = "queues[" + bean + "].";
        String logicalName = nameOf(bean, queue);
        check(errors, path + "name", () -> WorkQueueConfig.builder(logicalName).build());
        check(errors, path + "tablePrefix",
                () -> WorkQueueConfig.builder("q").tablePrefix(tablePrefixOf(properties, queue)).build());
        for (Setting<WorkQueueConfig.Builder, Queue> setting : QUEUE) {
            check(errors, path + setting.field(), () -> {
                WorkQueueConfig.Builder builder = WorkQueueConfig.builder("q");
                setting.apply().accept(builder, queue);
                builder.build();
            });
        }
        validateWorker(path + "worker.", queue.getWorker(), errors);
        Duration threshold = queue.getHealth().getMaxOldestReadyAge();
        if (threshold != null) {
            PropertyChecks.requirePositive(errors, path + "health.maxOldestReadyAge", threshold);
        }
    }

    private static void validateWorker(String path, Worker worker, Errors errors) {
        for (Setting<WorkerOptions.Builder, Worker> setting : WORKER) {
            check(errors, path + setting.field(), () -> {
                WorkerOptions.Builder builder = WorkerOptions.builder();
                setting.apply().accept(builder, worker);
                builder.build();
            });
        }
        // The library judges the back-off pair too, but names its arguments (first, max) rather
        // than the properties, so the starter words the same two rules in the properties' terms.
        Duration backoff = worker.getBackoff();
        if (backoff == null || backoff.isNegative()) {
            errors.rejectValue(path + "backoff", "invalid", "must be zero or more but was " + backoff);
        } else {
            PropertyChecks.requireAtLeast(errors, path + "maxBackoff", worker.getMaxBackoff(), "backoff", backoff);
        }
        PropertyChecks.requirePositive(errors, path + "restartBackoff", worker.getRestartBackoff());
        PropertyChecks.requireAtLeast(errors, path + "maxRestartBackoff", worker.getMaxRestartBackoff(),
                "restart-backoff", worker.getRestartBackoff());
    }

    private static void validateListener(WorkQueueProperties.Listener listener, Errors errors) {
        PropertyChecks.requirePositive(errors, "listener.reconnectBackoff", listener.getReconnectBackoff());
        PropertyChecks.requireAtLeast(errors, "listener.maxReconnectBackoff", listener.getMaxReconnectBackoff(),
                "reconnect-backoff", listener.getReconnectBackoff());
        PropertyChecks.requirePositive(errors, "listener.healthCheckInterval", listener.getHealthCheckInterval());
        PropertyChecks.requirePositive(errors, "listener.healthCheckTimeout", listener.getHealthCheckTimeout());
    }

    /** Runs {@code attempt}; if the library refuses it, rejects {@code field} with the library's reason. */
    private static void check(Errors errors, String field, Runnable attempt) {
        try {
            attempt.run();
        } catch (InvalidConfigException e) {
            errors.rejectValue(field, "invalid", e.getMessage());
        }
    }
}
