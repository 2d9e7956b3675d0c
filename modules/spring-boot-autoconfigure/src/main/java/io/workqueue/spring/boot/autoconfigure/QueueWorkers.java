package io.workqueue.spring.boot.autoconfigure;

import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkerOptions;
import io.workqueue.spring.boot.HandlesQueue;
import io.workqueue.spring.boot.WorkQueueHandler;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.NoSuchBeanDefinitionException;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.core.ResolvableType;
import org.springframework.util.ClassUtils;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * Runs {@link ReactiveWorkQueue#process} for every {@link WorkQueueHandler} bean, from application
 * start to shutdown, in phase {@link WorkQueuePhases#WORKERS}.
 *
 * <p><b>Binding</b> is resolved when this bean is created, so a mistake fails the start: every
 * handler must carry {@link HandlesQueue} naming an existing queue bean, one handler per queue, and
 * the queue's key type must be one the handler accepts. Options come from
 * {@code workqueue.queues.<name>.worker.*}; a worker switched off there is not run.
 *
 * <p><b>Restarts.</b> A worker's stream ends on an error only when the database fails in a way the
 * library does not retry (say, the table was dropped). The library then logs it with the cause and
 * restarts the worker after a back-off that doubles from {@code restart-backoff} to
 * {@code max-restart-backoff}, and resets once the worker completes items again
 * ({@link WorkerOptions#restartBackoff()}); the starter only sets the option.
 *
 * <p><b>Stopping</b> asks every worker to stop gracefully: it claims nothing more, lets running
 * handlers finish, completes or releases their items, and ends; Spring's callback runs once all
 * have ended, and Spring waits for it at most {@code spring.lifecycle.timeout-per-shutdown-phase}.
 * A worker still settling after that is cancelled by {@link #abandon()} when the queues close; what
 * it still holds is handed out again once its leases lapse.
 *
 * <p>Thread-safe; started and stopped by the container.
 */
final class QueueWorkers implements SmartLifecycle {
    private static final Logger log = LoggerFactory.getLogger(QueueWorkers.class);

    private final List<Binding<?>> bindings;
    private final Object lock = new Object();
    // Guarded by lock.
    private final List<Disposable> running = new ArrayList<>();
    private Sinks.@Nullable Empty<Void> stop;
    private @Nullable Mono<Void> allEnded;

    QueueWorkers(ConfigurableListableBeanFactory beanFactory, WorkQueueProperties properties) {
        this.bindings = bind(beanFactory, properties);
    }

    /** A handler bean bound to its queue, with the options its worker runs with. */
    private record Binding<K>(String handlerBean, String queueBean, ReactiveWorkQueue<K> queue,
            WorkQueueHandler<K> handler, WorkerOptions options, WorkQueueProperties.Worker settings) {

        Flux<?> run(Mono<Void> stop) {
            NamedHandler<K> named = new NamedHandler<>(handler, handlerBean);
            // The options restart the worker on error (WorkerOptions.restartBackoff), logging why.
            return queue.process(named, options, stop);
        }
    }

    /**
     * The handler bean as the function {@code process} calls, named after the bean: the library's
     * warnings about a handler (one holding the driver's thread, say) then name the user's class
     * and bean rather than a lambda of the starter's.
     */
    private record NamedHandler<K>(WorkQueueHandler<K> handler, String bean) implements Function<Item<K>, Publisher<?>> {
        @Override
        public Publisher<?> apply(Item<K> item) {
            return handler.handle(item);
        }

        @Override
        public String toString() {
            return ClassUtils.getUserClass(handler).getName() + " (bean '" + bean + "')";
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static List<Binding<?>> bind(ConfigurableListableBeanFactory beanFactory, WorkQueueProperties properties) {
        Map<String, String> handlerOfQueue = new LinkedHashMap<>();
        List<Binding<?>> bindings = new ArrayList<>();
        for (String handlerBean : beanFactory.getBeanNamesForType(WorkQueueHandler.class)) {
            HandlesQueue binding = beanFactory.findAnnotationOnBean(handlerBean, HandlesQueue.class);
            if (binding == null) {
                throw new IllegalStateException("WorkQueueHandler bean '" + handlerBean + "' names no queue:"
                        + " annotate its @Bean method or class with @HandlesQueue(\"<queue bean name>\")");
            }
            String queueBean = binding.value();
            String other = handlerOfQueue.putIfAbsent(queueBean, handlerBean);
            if (other != null) {
                throw new IllegalStateException("WorkQueueHandler beans '" + other + "' and '" + handlerBean
                        + "' are both bound to queue '" + queueBean + "'; bind one handler per queue");
            }
            ReactiveWorkQueue<?> queue;
            try {
                queue = beanFactory.getBean(queueBean, ReactiveWorkQueue.class);
            } catch (NoSuchBeanDefinitionException e) {
                throw new IllegalStateException("WorkQueueHandler bean '" + handlerBean + "' is bound to queue '"
                        + queueBean + "', but there is no ReactiveWorkQueue bean of that name; configure"
                        + " workqueue.queues." + queueBean + ".* or declare the bean", e);
            }
            checkKeyTypes(beanFactory, handlerBean, queueBean);
            WorkQueueProperties.Queue queueProperties = properties.getQueues().get(queueBean);
            WorkQueueProperties.Worker settings = queueProperties != null
                    ? queueProperties.getWorker() : new WorkQueueProperties.Worker();
            if (!settings.isEnabled()) {
                log.info("worker of queue {} is switched off (workqueue.queues.{}.worker.enabled=false)",
                        queueBean, queueBean);
                continue;
            }
            WorkQueueHandler<?> handler = beanFactory.getBean(handlerBean, WorkQueueHandler.class);
            bindings.add(new Binding(handlerBean, queueBean, queue, handler, QueueSettings.options(settings), settings));
        }
        return List.copyOf(bindings);
    }

    /** Refuses a handler whose declared key type the queue's keys are not. */
    private static void checkKeyTypes(ConfigurableListableBeanFactory beanFactory, String handlerBean, String queueBean) {
        Class<?> handled = keyType(beanFactory, handlerBean, WorkQueueHandler.class);
        Class<?> queued = keyType(beanFactory, queueBean, ReactiveWorkQueue.class);
        if (handled != null && queued != null && !handled.isAssignableFrom(queued)) {
            throw new IllegalStateException("WorkQueueHandler bean '" + handlerBean + "' handles keys of type "
                    + handled.getName() + ", but queue '" + queueBean + "' holds keys of type " + queued.getName());
        }
    }

    /** The first type argument of {@code bean} as a {@code type}, if the bean definition declares it. */
    private static @Nullable Class<?> keyType(ConfigurableListableBeanFactory beanFactory, String bean, Class<?> type) {
        ResolvableType declared = beanFactory.getMergedBeanDefinition(bean).getResolvableType();
        Class<?> key = declared.as(type).getGeneric(0).resolve();
        return key == null || key == Object.class ? null : key;
    }

    @Override
    public void start() {
        synchronized (lock) {
            if (stop != null) {
                return;
            }
            Sinks.Empty<Void> stopSignal = Sinks.empty();
            List<Mono<Void>> ends = new ArrayList<>();
            for (Binding<?> binding : bindings) {
                Sinks.Empty<Void> ended = Sinks.empty();
                ends.add(ended.asMono());
                running.add(binding.run(stopSignal.asMono())
                        .doFinally(signal -> ended.tryEmitEmpty())
                        .subscribe(null, error -> log.error("worker of queue {} (handler {}) stopped for good",
                                binding.queueBean(), binding.handlerBean(), error)));
                log.info("worker of queue {} started: handler {}, concurrency {}, lease {}, handlers on {}",
                        binding.queueBean(), binding.handlerBean(), binding.options().concurrency(),
                        binding.options().lease(), binding.settings().getHandlerScheduler());
            }
            stop = stopSignal;
            allEnded = Mono.when(ends);
        }
    }

    /**
     * Asks every worker to stop gracefully and runs {@code callback} once all have ended: nothing is
     * claimed after this call, and every item a worker leased is completed or released by then.
     * Returns at once; the callback runs on whichever thread settles the last worker.
     */
    @Override
    public void stop(Runnable callback) {
        Sinks.Empty<Void> stopSignal;
        Mono<Void> ended;
        synchronized (lock) {
            stopSignal = stop;
            ended = allEnded;
            stop = null;
            allEnded = null;
        }
        if (stopSignal == null || ended == null) {
            callback.run();
            return;
        }
        log.info("stopping {} worker(s): no more claims; waiting for running handlers", bindings.size());
        ended.subscribe(null, error -> callback.run(), () -> {
            log.info("every worker stopped with its items settled");
            callback.run();
        });
        stopSignal.tryEmitEmpty();
    }

    /** Asks every worker to stop gracefully without waiting; {@link #stop(Runnable)} is what Spring calls. */
    @Override
    public void stop() {
        stop(() -> {});
    }

    /**
     * Cancels every worker still settling after the shutdown phase ran out of time: they claim
     * nothing more, and what they hold lapses and is handed out again.
     */
    void abandon() {
        List<Disposable> workers;
        synchronized (lock) {
            workers = List.copyOf(running);
            running.clear();
        }
        long unsettled = workers.stream().filter(worker -> !worker.isDisposed()).count();
        if (unsettled > 0) {
            log.warn("{} worker(s) did not settle within spring.lifecycle.timeout-per-shutdown-phase; cancelling"
                    + " them, so the items they still hold return when their leases lapse", unsettled);
        }
        workers.forEach(Disposable::dispose);
    }

    @Override
    public boolean isRunning() {
        synchronized (lock) {
            return stop != null;
        }
    }

    @Override
    public int getPhase() {
        return WorkQueuePhases.WORKERS;
    }

    /** The bound workers, for tests: queue bean name to handler bean name. */
    Map<String, String> handlers() {
        Map<String, String> handlers = new LinkedHashMap<>();
        bindings.forEach(binding -> handlers.put(binding.queueBean(), binding.handlerBean()));
        return handlers;
    }
}
