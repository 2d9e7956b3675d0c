package io.workqueue;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import io.r2dbc.spi.ConnectionFactory;
import io.workqueue.internal.base.CoalescingTimer;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Assembles a {@link ReactiveWorkQueue}: its connection factory, configuration, key codec, wakeup
 * source, metrics and timer. Obtain one from {@link ReactiveWorkQueue#builder}.
 *
 * <p>Not thread-safe. Setters only record, and the last value given for a setting wins; a setter
 * never throws. {@link #build()} checks everything synchronously and throws, unlike the queue's
 * own methods: a missing or {@code null} setting is an {@link InvalidConfigException} naming it,
 * like any other bad setting.
 *
 * @param <K> the key type
 */
public final class WorkQueueBuilder<K> {
    private final @Nullable ConnectionFactory connectionFactory;
    private final @Nullable Class<K> keyType;
    private @Nullable WorkQueueConfig config;
    private @Nullable KeyCodec<K> keyCodec;
    private @Nullable Publisher<?> wakeups;
    private @Nullable Scheduler timer = Schedulers.parallel();
    /** Whether {@link #timer(Scheduler)} was called: the default gets a {@link CoalescingTimer} in front. */
    private boolean timerGiven;
    /** Held as {@code Object} so that this class never needs Micrometer unless a registry is given. */
    private @Nullable Object meterRegistry;
    /** Held as {@code Object} for the same reason: the Observation API is optional too. */
    private @Nullable Object observationRegistry;
    /** Optional settings given as {@code null}, by name: refused by build(), not by the setter. */
    private final Map<String, String> refused = new LinkedHashMap<>();

    WorkQueueBuilder(@Nullable ConnectionFactory connectionFactory, @Nullable Class<K> keyType) {
        this.connectionFactory = connectionFactory;
        this.keyType = keyType;
    }

    /**
     * Sets the queue's configuration; required.
     *
     * @param config the configuration, from {@link WorkQueueConfig#builder}
     * @return this builder
     */
    public WorkQueueBuilder<K> config(WorkQueueConfig config) {
        this.config = config;
        return given("config", config);
    }

    /**
     * Sets the codec between keys and their stored form, overriding {@link KeyCodec#defaultFor}
     * of the key type.
     *
     * @param codec the codec; deterministic and injective
     * @return this builder
     */
    public WorkQueueBuilder<K> keyCodec(KeyCodec<K> codec) {
        this.keyCodec = codec;
        return given("keyCodec", codec);
    }

    /**
     * Sets a source of "there may be work" signals that ends {@link ReactiveWorkQueue#awaitWork}
     * early; any element counts, its value is ignored. Typically a
     * {@code PgNotificationListener}'s {@code wakeups()}. It is subscribed once, on the first wait,
     * and its completion or error only stops wakeups (the poll still runs). Without one, waits end
     * at their poll, or when the instance itself finds work (see
     * {@link ReactiveWorkQueue#awaitWork}).
     *
     * @param wakeups the wakeup source
     * @return this builder
     */
    public WorkQueueBuilder<K> wakeups(Publisher<?> wakeups) {
        this.wakeups = wakeups;
        return given("wakeups", wakeups);
    }

    /**
     * Records the meters named in {@link WorkQueueMeters} to {@code registry}, tagged with the
     * queue's name. Micrometer is an optional dependency: without this call it need not be on the
     * classpath. Build one instance per queue name and registry: a second instance with the same
     * name shares the counters, but Micrometer keeps the first instance's gauges.
     *
     * @param registry where the meters are registered
     * @return this builder
     */
    public WorkQueueBuilder<K> meterRegistry(MeterRegistry registry) {
        this.meterRegistry = registry;
        return given("meterRegistry", registry);
    }

    /**
     * Observes the queue's operations through {@code registry}: the observations named in
     * {@code io.workqueue.observation.WorkQueueObservations} (enqueue, each group-committed write,
     * claim, each handler run of {@code process()}, complete, release), one instrumentation that
     * yields timers with a meter handler and spans with a tracing handler. Register
     * {@code io.workqueue.observation.WorkQueueTracingObservationHandler} for spans that link a
     * handler's run to the requests that enqueued its item
     * ({@link WorkQueueConfig#storeTraceContexts()}). Micrometer's Observation API is an optional
     * dependency: without this call it need not be on the classpath, and the queue observes nothing
     * at no cost. A registry that is a no-op costs a check per operation.
     *
     * @param registry where observations are made; Spring Boot's, say
     * @return this builder
     */
    public WorkQueueBuilder<K> observationRegistry(ObservationRegistry registry) {
        this.observationRegistry = registry;
        return given("observationRegistry", registry);
    }

    /**
     * Sets the scheduler for the queue's timers (poll delays, wake floor, claim back-off, write
     * timeouts). By default the queue keeps its delayed tasks itself and arms one task at a time on
     * {@link Schedulers#parallel()}, for the earliest, so that the many timeouts cancelled before
     * they are due wake none of its threads; a scheduler given here is used as it is (tests pass a
     * virtual-time scheduler).
     *
     * @param timer the scheduler
     * @return this builder
     */
    public WorkQueueBuilder<K> timer(Scheduler timer) {
        this.timer = timer;
        this.timerGiven = true;
        return given("timer", timer);
    }

    private WorkQueueBuilder<K> given(String setting, @Nullable Object value) {
        if (value == null) {
            refused.put(setting, setting + " must not be null but was null");
        } else {
            refused.remove(setting);
        }
        return this;
    }

    /**
     * Checks every setting and the key type, and builds the queue. Reads the connection factory's
     * metadata but does not connect: nothing touches the database until a method's publisher is
     * subscribed.
     *
     * @return the queue
     * @throws InvalidConfigException if the connection factory, key type or configuration is
     *                                missing, or a setting was given as {@code null}, naming it
     * @throws UnsupportedKeyTypeException (an {@code InvalidConfigException}) if the codec is the
     *                                library's JSON codec (the default for records and classes)
     *                                and Jackson cannot write the key type, or a type it
     *                                contains, at all: a class with no properties, say. Decided
     *                                from the type alone, without a key; what only a key's
     *                                runtime class decides (a property typed {@code Object} or
     *                                an interface) is left to the enqueue, which refuses a key it
     *                                cannot encode with {@link InvalidKeyException}
     * @throws UnsupportedDialectException if the connection factory is not PostgreSQL (pooled or
     *                                     not)
     */
    public ReactiveWorkQueue<K> build() {
        if (connectionFactory == null) {
            throw new InvalidConfigException("connectionFactory must not be null but was null");
        }
        if (keyType == null) {
            throw new InvalidConfigException("keyType must not be null but was null");
        }
        if (!refused.isEmpty()) {
            throw new InvalidConfigException(refused.values().iterator().next());
        }
        WorkQueueConfig checked = config;
        if (checked == null) {
            throw new InvalidConfigException("config is required: call config(WorkQueueConfig) before build()");
        }
        Scheduler scheduler = timer;
        if (scheduler == null) {
            throw new InvalidConfigException("timer must not be null but was null");
        }
        if (!timerGiven) {
            // Most of a queue's timers are cancelled long before they are due: kept here, they cost
            // the parallel scheduler's threads no wakeup each (CoalescingTimer). A timer given is
            // used as it is, since it may wait in virtual time.
            scheduler = CoalescingTimer.inRealTime(scheduler);
        }
        KeyCodec<K> codec = keyCodec != null ? keyCodec : KeyCodec.defaultFor(keyType);
        KeyCodecs.checkKeyType(codec);
        return Backends.BACKEND.queue(connectionFactory, checked, codec, wakeups, scheduler, meterRegistry,
                observationRegistry);
    }
}
