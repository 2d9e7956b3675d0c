package io.workqueue.notify;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.postgresql.api.Notification;
import io.r2dbc.postgresql.api.PostgresqlConnection;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.workqueue.InvalidConfigException;
import io.workqueue.UnsupportedDialectException;
import io.workqueue.internal.base.ConnectionAcquisition;
import io.workqueue.internal.base.Durations;
import io.workqueue.internal.base.Identifiers;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.util.retry.Retry;

/**
 * One LISTEN session on a dedicated PostgreSQL connection, shared by any number of subscribers, and
 * kept alive across connection loss.
 *
 * <p><b>Lifecycle.</b> The connection opens when the first subscriber subscribes to
 * {@link #notifications()} or {@link #wakeups()} (building the listener touches nothing), and
 * stays open, whoever comes and goes, until {@link #close()}. When it is lost (server restart,
 * {@code pg_terminate_backend}, a network cut caught by the periodic health check) the listener
 * logs the loss, reconnects with jittered exponential back-off between the configured bounds,
 * re-issues {@code LISTEN} and logs the recovery. Subscribers never see a lost connection as
 * completion or error; they see a gap, and {@link #wakeups()} emits one synthetic signal per
 * (re)established session to cover it, because anything sent while disconnected is lost.
 *
 * <p><b>Delivery.</b> NOTIFY is at-most-once and connection-scoped, and so is this. Both fluxes
 * are hot and best-effort: a subscriber receives what arrives while it is subscribed and has
 * demand; what it has no demand for is dropped, not buffered. Request unbounded (as the queue's
 * wake gate does). Signals are emitted on the driver's event-loop thread: do not block there.
 *
 * <p>The factory must be a plain PostgreSQL factory, never a pool: LISTEN survives a pooled
 * connection's release, and would keep delivering to a connection someone else now holds.
 * Thread-safe.
 */
public final class PgNotificationListener {
    private static final Logger log = LoggerFactory.getLogger(PgNotificationListener.class);

    /** The synthetic element {@link #wakeups()} emits when a LISTEN session (re)establishes. */
    public static final Object SESSION_ESTABLISHED = new Object() {
        @Override
        public String toString() {
            return "SESSION_ESTABLISHED";
        }
    };

    private final ConnectionFactory connectionFactory;
    private final String channel;
    private final Duration minBackoff;
    private final Duration maxBackoff;
    private final Duration healthCheckInterval;
    private final Duration healthCheckTimeout;
    private final Scheduler timer;

    /** What starts the payload of the listener's own delivery probes, which subscribers never see. */
    static final String PROBE_PAYLOAD_PREFIX = "reactive-workqueue delivery probe ";

    private final Map<String, Sinks.Empty<Void>> probes = new ConcurrentHashMap<>();
    private final AtomicLong probeCount = new AtomicLong();
    private final Sinks.Many<Notification> notifications = Sinks.many().multicast().directBestEffort();
    private final Sinks.Many<Object> wakeups = Sinks.many().multicast().directBestEffort();
    private final Object emitLock = new Object();
    private final AtomicBoolean started = new AtomicBoolean();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicReference<@Nullable Connection> current = new AtomicReference<>();
    private volatile @Nullable Disposable session;
    private volatile boolean lost;

    /** Takes the builder's values, which {@link Builder#build()} has checked and capped. */
    private PgNotificationListener(ConnectionFactory connectionFactory, String channel, Duration minBackoff,
            Duration maxBackoff, Duration healthCheckInterval, Duration healthCheckTimeout, Scheduler timer) {
        this.connectionFactory = connectionFactory;
        this.channel = channel;
        this.minBackoff = minBackoff;
        this.maxBackoff = maxBackoff;
        this.healthCheckInterval = healthCheckInterval;
        this.healthCheckTimeout = healthCheckTimeout;
        this.timer = timer;
    }

    /**
     * Starts building a listener over a non-pooled PostgreSQL {@code connectionFactory}. Nothing
     * is checked or connected here: {@link Builder#build()} checks everything, a {@code null}
     * factory included.
     *
     * @param connectionFactory a plain (never pooled) PostgreSQL connection factory
     * @return a new builder
     */
    public static Builder builder(ConnectionFactory connectionFactory) {
        return new Builder(connectionFactory);
    }

    /**
     * The channel this listener listens on.
     *
     * @return the channel given to {@link Builder#channel}
     */
    public String channel() {
        return channel;
    }

    /**
     * The driver's notifications on {@link #channel()}, as they arrive. Hot and shared: every
     * subscriber sees what arrives while it is subscribed, over the one LISTEN session, and
     * nothing from before. Best-effort: what arrives while a subscriber has no demand is dropped
     * for it, not buffered, so request unbounded. Subscribing opens the session if it is not open
     * yet; cancelling leaves it open for the others (only {@link #close()} ends it). Emits on the
     * driver's event-loop thread. A lost connection is a gap, not a signal: it completes only on
     * {@link #close()}, and errors only if the session cannot be re-established at all (a factory
     * that turns out not to be PostgreSQL).
     *
     * @return a hot {@code Flux} of notifications
     */
    public Flux<Notification> notifications() {
        return startingOnceSubscribed(notifications.asFlux());
    }

    /**
     * Every notification plus {@link #SESSION_ESTABLISHED} each time a LISTEN session is
     * (re)established, because anything sent while disconnected is lost: hand this to
     * {@code WorkQueueBuilder.wakeups(...)}. Hot, shared and best-effort like
     * {@link #notifications()}, with the same subscription, cancellation, thread, completion and
     * error behaviour.
     *
     * @return a hot {@code Flux} of wakeups
     */
    public Flux<Object> wakeups() {
        return startingOnceSubscribed(wakeups.asFlux());
    }

    /**
     * {@code hot}, starting the session once the subscriber is registered with it. The sinks
     * register a subscriber only after its {@code onSubscribe} has returned, so a session started
     * from there (as {@code doOnSubscribe} would) can be established first, on a driver thread,
     * while a slow subscribing thread is still inside it: the subscriber that started the session
     * then never hears {@link #SESSION_ESTABLISHED}.
     */
    private <T> Flux<T> startingOnceSubscribed(Flux<T> hot) {
        return Flux.from(subscriber -> {
            hot.subscribe(subscriber);
            start();
        });
    }

    /**
     * Proves that the LISTEN session receives what other sessions send: a second, short-lived
     * connection from the same factory sends a notification on {@link #channel()} with a unique
     * payload, and this completes when the listener receives it, or signals
     * {@link NotificationDeliveryException} after {@code timeout}. A listener connected through a
     * transaction-mode pooler fails it. Subscribers never see the probe. The listener runs this
     * itself each time a session is established and logs a WARN if it fails.
     *
     * <p>Cold: each subscription sends its own probe. Completes on the driver's thread that
     * delivered the probe. Errors: {@link NotificationDeliveryException} after {@code timeout};
     * {@code IllegalStateException} without an open session (subscribe to {@link #wakeups()}
     * first); {@code NullPointerException} for a {@code null} timeout; the sending connection's
     * own failure. Cancelling stops waiting for the probe (a probe already sent is ignored when
     * it arrives).
     *
     * @param timeout how long the probe may take; longer than
     *                {@link io.workqueue.ReactiveWorkQueue#MAX_DURATION} is that
     * @return a cold {@code Mono} that completes once the probe came back
     */
    public Mono<Void> verifyDelivery(Duration timeout) {
        return Mono.defer(() -> {
            Objects.requireNonNull(timeout, "timeout");
            if (current.get() == null) {
                return Mono.error(new IllegalStateException("LISTEN " + channel + " has no open session;"
                        + " subscribe to wakeups() or notifications() first"));
            }
            // Not UUID.randomUUID(): SecureRandom may read from the OS, and this runs on event loops.
            String payload = PROBE_PAYLOAD_PREFIX + Long.toHexString(ThreadLocalRandom.current().nextLong())
                    + "-" + probeCount.incrementAndGet();
            Sinks.Empty<Void> received = Sinks.empty();
            probes.put(payload, received);
            Mono<Void> send = Mono.usingWhen(ConnectionAcquisition.forUsingWhen(connectionFactory),
                    sender -> Flux.from(sender.createStatement("SELECT pg_notify($1, $2)")
                                    .bind(0, channel).bind(1, payload).execute())
                            .concatMap(result -> result.map((row, meta) -> 1))
                            .then(),
                    Connection::close);
            return send.then(received.asMono())
                    .timeout(Durations.capped(timeout), Mono.<Void>error(() -> new NotificationDeliveryException(
                            "LISTEN " + channel + " did not receive a notification another session sent within "
                                    + timeout + "; is the listener connected through a transaction-mode pooler?"
                                    + " Connect it to PostgreSQL directly")), timer)
                    .doFinally(signal -> probes.remove(payload));
        });
    }

    /**
     * Stops listening for good: ends the session, closes the connection, completes subscribers of
     * {@link #notifications()} and {@link #wakeups()}. Idempotent: only the first subscription
     * does anything, later ones complete at once.
     *
     * <p>Cold: nothing happens until subscription. Completes once the connection is closed, on the
     * driver's thread (or at once if none was open). Errors: none; a connection that fails to
     * close is given up. Cancelling stops waiting for the close, which goes on.
     *
     * @return a cold {@code Mono} that completes once the listener is closed
     */
    public Mono<Void> close() {
        return Mono.defer(() -> {
            if (!closed.compareAndSet(false, true)) {
                return Mono.empty();
            }
            Disposable running = session;
            if (running != null) {
                running.dispose();
            }
            synchronized (emitLock) {
                notifications.tryEmitComplete();
                wakeups.tryEmitComplete();
            }
            Connection connection = current.getAndSet(null);
            return connection == null ? Mono.empty() : Mono.from(connection.close()).onErrorResume(e -> Mono.empty());
        });
    }

    private void start() {
        if (closed.get() || !started.compareAndSet(false, true)) {
            return;
        }
        session = sessions()
                .retryWhen(Retry.backoff(Long.MAX_VALUE, minBackoff)
                        .maxBackoff(maxBackoff)
                        .jitter(0.5)
                        .scheduler(timer)
                        .transientErrors(true) // an established session resets the back-off
                        .filter(e -> !closed.get() && !(e instanceof UnsupportedDialectException))
                        .doBeforeRetry(signal -> {
                            lost = true;
                            log.warn("LISTEN {} lost its connection ({}); reconnecting (attempt {})",
                                    channel, signal.failure().toString(), signal.totalRetriesInARow() + 1);
                        }))
                .subscribe(
                        ignored -> {},
                        error -> {
                            log.error("LISTEN {} stopped", channel, error);
                            synchronized (emitLock) {
                                notifications.tryEmitError(error);
                                wakeups.tryEmitError(error);
                            }
                        });
    }

    /**
     * One LISTEN session per subscription: emits once when established, errors when the connection
     * is lost (the notification stream errors on a killed backend and completes on a closed one;
     * both are loss here), and closes its connection however it ends.
     */
    private Flux<Object> sessions() {
        return Flux.usingWhen(
                ConnectionAcquisition.forUsingWhen(connectionFactory),
                this::listen,
                connection -> {
                    current.compareAndSet(connection, null);
                    return Mono.from(connection.close()).onErrorResume(e -> Mono.empty());
                });
    }

    private Flux<Object> listen(Connection connection) {
        if (!(connection instanceof PostgresqlConnection postgres)) {
            return Flux.error(new UnsupportedDialectException("PgNotificationListener needs a PostgresqlConnection"
                    + " but the factory made " + connection.getClass().getName()));
        }
        current.set(connection);
        if (closed.get()) {
            return Flux.empty();
        }
        // Subscribe to the notification stream before LISTEN: the stream drops what arrives unobserved.
        Flux<Object> incoming = postgres.getNotifications()
                .doOnNext(this::publish)
                .thenMany(Flux.error(() -> new ListenerConnectionLostException("notification stream completed")));
        Flux<Object> established = Flux.from(postgres.createStatement("LISTEN " + channel).execute())
                .concatMap(result -> result.getRowsUpdated())
                .then(Mono.<Object>fromCallable(this::onEstablished))
                .flux();
        Flux<Object> health = Flux.interval(healthCheckInterval, timer)
                .onBackpressureDrop()
                .concatMap(tick -> ping(postgres), 1)
                .thenMany(Flux.empty());
        return Flux.merge(incoming, established.concatWith(health));
    }

    private Mono<Object> ping(PostgresqlConnection connection) {
        return Flux.from(connection.createStatement("SELECT 1").execute())
                .concatMap(result -> result.map((row, meta) -> 1))
                .then(Mono.empty())
                .timeout(healthCheckTimeout, timer)
                .onErrorMap(e -> new ListenerConnectionLostException("health check failed: " + e, e));
    }

    private Object onEstablished() {
        if (lost) {
            lost = false;
            log.info("LISTEN {} re-established", channel);
        } else {
            log.debug("LISTEN {} established", channel);
        }
        synchronized (emitLock) {
            wakeups.tryEmitNext(SESSION_ESTABLISHED);
        }
        // The poll is the backstop, so a session that hears nothing only logs, once per session. A
        // session that ended meanwhile (lost, closed) proves nothing either way: the next one probes.
        Connection probed = current.get();
        verifyDelivery(healthCheckTimeout).subscribe(
                null,
                error -> {
                    if (closed.get() || current.get() != probed) {
                        log.debug("LISTEN {}: the session ended before its delivery probe came back", channel);
                    } else {
                        log.warn("LISTEN {}: notifications from other sessions do not arrive; wakeups will not"
                                + " come and queues will wait for their poll: {}", channel, error.getMessage());
                    }
                },
                () -> log.debug("LISTEN {} receives notifications", channel));
        return SESSION_ESTABLISHED;
    }

    private void publish(Notification notification) {
        if (!channel.equals(notification.getName())) {
            return;
        }
        String payload = notification.getParameter();
        if (payload != null && payload.startsWith(PROBE_PAYLOAD_PREFIX)) {
            Sinks.Empty<Void> probe = probes.get(payload);
            if (probe != null) {
                probe.tryEmitEmpty();
            }
            return;
        }
        synchronized (emitLock) {
            notifications.tryEmitNext(notification);
            wakeups.tryEmitNext(notification);
        }
    }

    /** Why a session ended, when it was not asked to. */
    static final class ListenerConnectionLostException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ListenerConnectionLostException(String message) {
            super(message);
        }

        ListenerConnectionLostException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /**
     * Assembles a {@link PgNotificationListener}: its connection factory, channel, reconnect
     * back-off, health check and timer. Obtain one from {@link PgNotificationListener#builder}.
     *
     * <p>Not thread-safe. Setters only record, and the last value given for a setting wins; a
     * setter never throws. {@link #build()} checks everything synchronously and throws an
     * {@link InvalidConfigException} naming the first bad setting and its value ({@code null}
     * included). A duration longer than {@link io.workqueue.ReactiveWorkQueue#MAX_DURATION} means
     * "forever" and is taken as that maximum: Reactor's back-off and timers work in a {@code long}
     * of nanoseconds (and the back-off in milliseconds), which a longer one would overflow, ending
     * the listener at its first reconnect.
     */
    public static final class Builder {
        private final @Nullable ConnectionFactory connectionFactory;
        private @Nullable String channel;
        private @Nullable Duration minBackoff = Duration.ofMillis(100);
        private @Nullable Duration maxBackoff = Duration.ofSeconds(10);
        private @Nullable Duration healthCheckInterval = Duration.ofSeconds(30);
        private @Nullable Duration healthCheckTimeout = Duration.ofSeconds(5);
        private @Nullable Scheduler timer = Schedulers.parallel();

        private Builder(@Nullable ConnectionFactory connectionFactory) {
            this.connectionFactory = connectionFactory;
        }

        /**
         * Sets the channel to LISTEN on; required. A plain lower-case identifier (letters, digits,
         * underscores, not starting with a digit) of at most 63 bytes, because it is rendered
         * into the {@code LISTEN} statement.
         *
         * @param channel the channel, as the queue's {@code notifyChannel} names it
         * @return this builder
         */
        public Builder channel(String channel) {
            this.channel = channel;
            return this;
        }

        /**
         * Sets the bounds of the jittered exponential back-off between reconnects; default 100 ms
         * to 10 s. Both positive, {@code max} at least {@code min}. Either bound longer than
         * {@link io.workqueue.ReactiveWorkQueue#MAX_DURATION} is that.
         *
         * @param min the first delay after a loss
         * @param max the longest delay between attempts
         * @return this builder
         */
        public Builder reconnectBackoff(Duration min, Duration max) {
            this.minBackoff = min;
            this.maxBackoff = max;
            return this;
        }

        /**
         * Sets how often an idle session proves its connection with {@code SELECT 1}, and how long
         * the answer (and a delivery probe) may take; default every 30 s within 5 s. Both
         * positive. A half-open TCP connection gives no other signal. Either longer than
         * {@link io.workqueue.ReactiveWorkQueue#MAX_DURATION} is that.
         *
         * @param interval the time between two checks
         * @param timeout  how long one check may take before the session counts as lost
         * @return this builder
         */
        public Builder healthCheck(Duration interval, Duration timeout) {
            this.healthCheckInterval = interval;
            this.healthCheckTimeout = timeout;
            return this;
        }

        /**
         * Sets the scheduler for back-off, health checks and probe timeouts; default
         * {@code Schedulers.parallel()}. Tests pass a virtual-time scheduler.
         *
         * @param timer the scheduler
         * @return this builder
         */
        public Builder timer(Scheduler timer) {
            this.timer = timer;
            return this;
        }

        /**
         * Checks every setting and builds the listener; nothing is connected until its first
         * subscriber. Reads the factory's metadata, which does not connect.
         *
         * @return the listener
         * @throws InvalidConfigException for a missing factory, a missing or malformed channel,
         *                                bad durations, a missing timer, or a pooled factory
         * @throws UnsupportedDialectException if the factory is not PostgreSQL
         */
        public PgNotificationListener build() {
            ConnectionFactory factory = connectionFactory;
            if (factory == null) {
                throw new InvalidConfigException("connectionFactory must not be null but was null");
            }
            String name = channel;
            if (name == null) {
                throw new InvalidConfigException("channel is required but was null");
            }
            String channelProblem = Identifiers.problem("channel", name);
            if (channelProblem != null) {
                throw new InvalidConfigException(channelProblem);
            }
            Duration min = positive("reconnectBackoff min", minBackoff);
            if (maxBackoff == null || Durations.capped(maxBackoff).compareTo(min) < 0) {
                throw new InvalidConfigException("reconnectBackoff max must be at least min (" + minBackoff
                        + ") but was " + maxBackoff);
            }
            Duration max = Durations.capped(maxBackoff);
            Duration interval = positive("healthCheck interval", healthCheckInterval);
            Duration timeout = positive("healthCheck timeout", healthCheckTimeout);
            Scheduler scheduler = timer;
            if (scheduler == null) {
                throw new InvalidConfigException("timer must not be null but was null");
            }
            if (factory instanceof ConnectionPool) {
                throw new InvalidConfigException("PgNotificationListener needs a non-pooled connection factory:"
                        + " LISTEN outlives a pooled connection's release");
            }
            String product = factory.getMetadata().getName();
            if (!"PostgreSQL".equalsIgnoreCase(product)) {
                throw new UnsupportedDialectException("LISTEN/NOTIFY needs PostgreSQL, but the factory reports " + product);
            }
            return new PgNotificationListener(factory, name, min, max, interval, timeout, scheduler);
        }

        /** {@code value} capped, if positive; else refused, naming {@code field}. */
        private static Duration positive(String field, @Nullable Duration value) {
            return Durations.capped(Durations.requirePositive(field, value, InvalidConfigException::new));
        }
    }
}
