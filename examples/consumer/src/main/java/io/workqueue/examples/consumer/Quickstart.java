package io.workqueue.examples.consumer;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactories;
import io.r2dbc.spi.ConnectionFactory;
import io.workqueue.Entry;
import io.workqueue.Item;
import io.workqueue.ItemPage;
import io.workqueue.ItemState;
import io.workqueue.QueueItem;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueAdmin;
import io.workqueue.WorkQueueConfig;
import io.workqueue.WorkerOptions;
import io.workqueue.migrations.WorkQueueMigrations;
import io.workqueue.notify.PgNotificationListener;
import java.time.Duration;
import java.util.List;
import java.util.function.Function;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The README's Quickstart, as a program: every code block of that section is a tagged region of
 * this file (the library's ReadmeSnippetsTest checks they are identical), and CI runs it against a
 * real server. Run it with {@code WORKQUEUE_R2DBC_URL} naming your PostgreSQL.
 */
public final class Quickstart {
    private Quickstart() {}

    public static void main(String[] args) {
        // tag::setup[]
        String url = System.getenv().getOrDefault("WORKQUEUE_R2DBC_URL",
                "r2dbc:postgresql://postgres@localhost:5432/postgres");
        ConnectionFactory database = ConnectionFactories.get(url);
        ConnectionPool pool = new ConnectionPool(ConnectionPoolConfiguration.builder(database).maxSize(10).build());

        WorkQueueConfig config = WorkQueueConfig.builder("thumbnails").notifyChannel("thumbnails_work").build();

        // Create the table (idempotent), or hand WorkQueueMigrations.sql("") to your migration tool.
        // Like every Mono of the library, it does nothing until subscribed; block() subscribes and waits.
        WorkQueueMigrations.apply(pool, config).block();

        // Optional: wake idle workers within milliseconds of an enqueue. LISTEN holds a connection of
        // its own, so the listener gets the plain factory, never the pool.
        PgNotificationListener listener = PgNotificationListener.builder(database)
                .channel("thumbnails_work")
                .build();

        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(pool, String.class)
                .config(config)
                .wakeups(listener.wakeups())
                .build();
        // end::setup[]

        // tag::enqueue[]
        // Producers: cheap under any concurrency (enqueues merge into one statement); each Mono
        // completes once its rows have committed.
        Mono<Void> accepted = queue.enqueue(List.of(
                Entry.of("img-1"),
                Entry.of("img-2"),
                Entry.of("img-urgent").withPriority(5),               // claimed first
                Entry.of("img-later").withDelay(Duration.ofSeconds(1)))); // due in a second
        accepted.block();
        // end::enqueue[]

        // tag::claimStream[]
        // Workers, by hand: claim, work, complete; a failure goes back with a delay and its reason.
        Flux<Long> completed = queue.claimStream(Duration.ofSeconds(30), Duration.ofSeconds(1))
                .flatMap(item -> render(item.key())
                        .thenReturn(item.key())
                        .onErrorResume(e -> queue.release(Duration.ofMinutes(1), e, List.of(item.key()))
                                .then(Mono.empty())), 8)
                .bufferTimeout(100, Duration.ofMillis(50), true)
                .concatMap(queue::complete);
        // end::claimStream[]
        // Here: until all four are done (the stream itself never ends).
        completed.scan(0L, Long::sum).takeUntil(done -> done >= 4).blockLast();

        // tag::process[]
        // Or let the library run the loop: at most 8 handlers at once, successes completed,
        // failures released after a back-off with the error recorded.
        Flux<Item<String>> processed = queue.process(item -> render(item.key()),
                WorkerOptions.builder().concurrency(8).lease(Duration.ofSeconds(30)).build());
        // end::process[]
        queue.enqueueKeys(List.of("doc-1", "doc-2", "doc-3")).block();

        // tag::transactional[]
        // Inside your own transaction, beside your own writes: the rows commit or roll back with it.
        // The bracket, commit included, tells the queue when it has committed: idle workers wake then.
        // On failure or cancellation: roll back before the connection goes back to the pool.
        Function<Connection, Mono<Void>> rollBackAndRelease =
                connection -> Mono.from(connection.rollbackTransaction()).then(Mono.from(connection.close()));
        Mono<Void> inTransaction = ReactiveWorkQueue.announceAfterCommit(Mono.usingWhen(pool.create(),
                connection -> Mono.from(connection.beginTransaction())
                        .then(queue.enqueue(connection, List.of(Entry.of("doc-4"))))
                        .then(Mono.from(connection.commitTransaction())),
                Connection::close,
                (connection, error) -> rollBackAndRelease.apply(connection),
                rollBackAndRelease));
        inTransaction.block();
        // end::transactional[]
        processed.take(4).blockLast();

        // tag::admin[]
        // Operators: a window onto every queue of the table. What is stuck, and why; then retry it.
        WorkQueueAdmin admin = WorkQueueAdmin.builder(pool).queue(queue).build();
        ItemPage stalled = admin.items("thumbnails", ItemState.STALLED, null, 50).block();
        for (QueueItem item : stalled.items()) {
            System.out.println(item.key() + " stalled after " + item.attempts() + " attempts: " + item.lastError());
        }
        List<String> retried = admin.retry("thumbnails",
                stalled.items().stream().map(QueueItem::storedKey).toList()).block();
        // end::admin[]
        System.out.println("retried " + retried);

        // tag::shutdown[]
        // On shutdown: close() flushes pending enqueues and returns a Mono like everything else;
        // then the listener, then the pool.
        queue.close().then(listener.close()).block();
        pool.dispose();
        // end::shutdown[]
    }

    /** The work: here, a line on the console. */
    private static Mono<Void> render(String key) {
        return Mono.fromRunnable(() -> System.out.println("rendered " + key));
    }
}
