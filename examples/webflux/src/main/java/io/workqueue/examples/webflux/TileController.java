package io.workqueue.examples.webflux;

import io.workqueue.InvalidKeyException;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.Stats;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/** The HTTP face of the tile queue. */
@RestController
class TileController {
    private final ReactiveWorkQueue<TileKey> queue;

    TileController(ReactiveWorkQueue<TileKey> queue) {
        this.queue = queue;
    }

    /**
     * Queues a tile for rendering. Answers 202 once the tile is durably queued: concurrent requests
     * share one group-committed upsert, so a burst of posts costs a few statements, not one each.
     * Posting a tile that is already queued is harmless; posting one already rendered renders it
     * again.
     */
    @PostMapping("/tiles/{layer}/{x}/{y}")
    @ResponseStatus(HttpStatus.ACCEPTED)
    Mono<Void> enqueue(@PathVariable String layer, @PathVariable int x, @PathVariable int y) {
        return queue.enqueueKeys(new TileKey(layer, x, y));
    }

    /** The queue's health, read in one statement. */
    @GetMapping("/queue/stats")
    Mono<QueueStats> stats() {
        return queue.stats().map(stats -> QueueStats.of(queue.name(), stats));
    }

    // tag::invalid-key[]
    /** A key the queue refuses, such as a layer name longer than a key may be. */
    @ExceptionHandler(InvalidKeyException.class)
    ProblemDetail invalidTile(InvalidKeyException e) {
        return ProblemDetail.forStatusAndDetail(HttpStatus.BAD_REQUEST, e.getMessage());
    }
    // end::invalid-key[]

    /**
     * The JSON of {@code GET /queue/stats}: the queue's {@link Stats}, with {@code oldestReadyAge} as
     * an ISO-8601 duration ({@code "PT0S"} when nothing is ready, {@code "PT1.5S"} for a second and a
     * half). Mapped by hand so the JSON does not change with the JSON library's duration settings.
     */
    record QueueStats(String queue, long pending, long ready, long leased, long stalled, long completed,
            String oldestReadyAge) {
        static QueueStats of(String queue, Stats stats) {
            return new QueueStats(queue, stats.pending(), stats.ready(), stats.leased(), stats.stalled(),
                    stats.completed(), stats.oldestReadyAge().toString());
        }
    }
}
