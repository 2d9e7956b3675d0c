package io.workqueue.examples.webflux;

import io.workqueue.Item;
import io.workqueue.spring.boot.HandlesQueue;
import io.workqueue.spring.boot.WorkQueueHandler;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.stereotype.Component;
import reactor.core.publisher.Mono;

/**
 * Renders queued tiles; the starter runs it on the queue {@code tiles} from start to shutdown with
 * the settings of {@code workqueue.queues.tiles.worker}. A render that completes completes its tile;
 * one that fails releases it with back-off, its error recorded; on shutdown nothing new is claimed
 * and the renders in flight finish first.
 */
// tag::bean[]
@Component
@HandlesQueue("tiles")
class TileRenderer implements WorkQueueHandler<TileKey> {
    private final double failureRate;

    TileRenderer(@Value("${tiles.failure-rate}") double failureRate) {
        this.failureRate = failureRate;
    }

    @Override
    public Mono<Void> handle(Item<TileKey> item) {
        // Stands in for real rendering: a few milliseconds, failing now and then. Blocking here would
        // hold only this handler's slot (handlers run on the worker's own pool, never the database
        // driver's threads), but a timer keeps even that thread free.
        return Mono.defer(() -> {
            ThreadLocalRandom random = ThreadLocalRandom.current();
            Mono<Void> render = Mono.delay(Duration.ofMillis(random.nextInt(2, 10))).then();
            return random.nextDouble() < failureRate
                    ? render.then(Mono.error(new IllegalStateException("renderer ran out of memory on " + item.key())))
                    : render;
        });
    }
}
// end::bean[]
