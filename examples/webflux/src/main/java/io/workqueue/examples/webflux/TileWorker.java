package io.workqueue.examples.webflux;

import io.workqueue.Item;
import io.workqueue.ReactiveWorkQueue;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.stereotype.Component;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.util.retry.Retry;

/**
 * Renders queued tiles in the background, from context start to context close.
 *
 * <p>One Reactor pipeline: {@code claimStream} leases tiles only as fast as {@code flatMap} asks for
 * them (at most {@code concurrency} rendering at once), successes are acknowledged in batches by the
 * fair {@code bufferTimeout} and one {@code complete} statement at a time, and failures are released
 * with an exponential back-off, their error recorded on the item. If the pipeline fails (a database
 * error that is not retried), it is restarted with back-off; tiles it held are leased until their
 * leases lapse, then handed out again.
 *
 * <p><b>Graceful stop.</b> As a {@link SmartLifecycle} in the default phase, it is stopped before
 * the web server and before any bean is destroyed. Stopping cancels {@code claimStream}, so no more
 * tiles are leased, and lets what is in flight finish: renders complete, the last partial batch is
 * acknowledged, failures are released. If that takes longer than {@code shutdownTimeout}, the
 * pipeline is disposed instead, and the tiles still held come back once their leases lapse. The
 * queue itself is closed afterwards, by bean destruction (see {@link WorkQueueConfiguration}).
 *
 * <p>Thread-safe; start and stop are called by the container.
 */
@Component
class TileWorker implements SmartLifecycle {
    private static final Logger log = LoggerFactory.getLogger(TileWorker.class);

    private final ReactiveWorkQueue<TileKey> queue;
    private final WorkQueueProperties.Worker settings;
    private final AtomicLong claimed = new AtomicLong();
    private final AtomicLong completed = new AtomicLong();
    private final AtomicLong released = new AtomicLong();

    private final Object lock = new Object();
    private Sinks.@Nullable Empty<Void> stopClaiming; // guarded by lock
    private @Nullable CountDownLatch finished; // guarded by lock
    private @Nullable Disposable pipeline; // guarded by lock

    TileWorker(ReactiveWorkQueue<TileKey> queue, WorkQueueProperties properties) {
        this.queue = queue;
        this.settings = properties.worker();
    }

    @Override
    public void start() {
        synchronized (lock) {
            if (pipeline != null) {
                return;
            }
            Sinks.Empty<Void> stop = Sinks.empty();
            CountDownLatch done = new CountDownLatch(1);
            stopClaiming = stop;
            finished = done;
            pipeline = work(stop.asMono())
                    .doFinally(signal -> done.countDown())
                    .subscribe(null, error -> log.error("tile worker stopped", error));
        }
        log.info("tile worker started on queue {}: {} at once, lease {}", queue.name(), settings.concurrency(),
                settings.lease());
    }

    /**
     * The pipeline, ending once {@code stop} completes and what was in flight is settled. Emits the
     * number of tiles each complete statement acknowledged.
     */
    private Flux<Long> work(Mono<Void> stop) {
        return queue.claimStream(settings.lease(), settings.poll())
                // Cancels claimStream (it stops claiming) and completes downstream, which lets
                // flatMap finish its renders and bufferTimeout flush its last batch.
                .takeUntilOther(stop)
                .doOnNext(item -> claimed.incrementAndGet())
                .flatMap(this::render, settings.concurrency())
                // Fair: emits a batch only when concatMap asks for one. The plain variant emits on
                // its timer regardless and overflows while a complete is still running.
                .bufferTimeout(settings.batchSize(), settings.batchWindow(), true)
                .concatMap(tiles -> queue.complete(tiles).doOnNext(n -> completed.addAndGet(tiles.size())), 1)
                // A restart after stop completes at once: the stop sink replays its completion.
                .retryWhen(Retry.backoff(Long.MAX_VALUE, Duration.ofSeconds(1))
                        .maxBackoff(Duration.ofSeconds(30))
                        .doBeforeRetry(signal -> log.warn("tile worker failed; restarting (attempt {})",
                                signal.totalRetriesInARow() + 1, signal.failure())));
    }

    /** Emits the tile's key when rendered; when rendering fails, releases it and emits nothing. */
    private Mono<TileKey> render(Item<TileKey> item) {
        return simulateRendering(item.key())
                .thenReturn(item.key())
                .onErrorResume(error -> queue.release(backoff(item.attempts()), error, item.key())
                        .doOnNext(n -> released.incrementAndGet())
                        // A release that fails costs only time: the lease lapses and the tile returns.
                        .onErrorResume(releaseError -> Mono.empty())
                        .then(Mono.empty()));
    }

    /** Stands in for real rendering: a few milliseconds, failing at {@code failureRate}. */
    private Mono<Void> simulateRendering(TileKey tile) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        boolean fails = random.nextDouble() < settings.failureRate();
        return Mono.delay(Duration.ofMillis(random.nextInt(2, 10)))
                .then(fails
                        ? Mono.<Void>error(new IllegalStateException("renderer ran out of memory on " + tile))
                        : Mono.<Void>empty());
    }

    /** {@code backoff}, doubled for each attempt after the first, up to {@code maxBackoff}. */
    private Duration backoff(int attempts) {
        Duration delay = settings.backoff().multipliedBy(1L << Math.min(attempts - 1, 20));
        return delay.compareTo(settings.maxBackoff()) > 0 ? settings.maxBackoff() : delay;
    }

    @Override
    public void stop() {
        Disposable running;
        CountDownLatch done;
        synchronized (lock) {
            if (pipeline == null || stopClaiming == null || finished == null) {
                return;
            }
            running = pipeline;
            done = finished;
            stopClaiming.tryEmitEmpty();
            pipeline = null;
            stopClaiming = null;
            finished = null;
        }
        boolean drained;
        try {
            drained = done.await(settings.shutdownTimeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            drained = false;
        }
        if (!drained) {
            running.dispose();
            log.warn("tile worker did not finish within {}; tiles still held return when their leases lapse",
                    settings.shutdownTimeout());
        }
        log.info("tile worker stopped: {} claimed, {} completed, {} released", claimed.get(), completed.get(),
                released.get());
    }

    @Override
    public boolean isRunning() {
        synchronized (lock) {
            return pipeline != null;
        }
    }

    /** Tiles leased so far. */
    long claimed() {
        return claimed.get();
    }

    /** Tiles acknowledged by a complete statement so far. */
    long completed() {
        return completed.get();
    }

    /** Tiles handed back after a failed render so far. */
    long released() {
        return released.get();
    }
}
