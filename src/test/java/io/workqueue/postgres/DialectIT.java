package io.workqueue.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.spi.ConnectionFactory;
import io.workqueue.ReactiveWorkQueue;
import io.workqueue.WorkQueueConfig;
import io.workqueue.testing.TestDatabase;
import java.time.Duration;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

/** The real PostgreSQL factories, pooled and plain, pass the dialect check and work. */
class DialectIT {
    private static String prefix;

    @BeforeAll
    static void createTable() {
        prefix = TestDatabase.createTable();
    }

    private static void assertAcceptedAndWorking(ConnectionFactory factory) {
        ReactiveWorkQueue<String> queue = ReactiveWorkQueue.builder(factory, String.class)
                .config(WorkQueueConfig.builder(TestDatabase.uniqueName("dialect")).tablePrefix(prefix).build())
                .build();
        StepVerifier.create(queue.enqueueKeys("a").then(queue.stats()))
                .assertNext(stats -> {
                    assertEquals(1, stats.pending());
                    assertEquals(1, stats.ready());
                })
                .expectComplete()
                .verify(Duration.ofSeconds(30));
    }

    @Test
    void theSharedPoolIsAccepted() {
        assertEquals("PostgreSQL", TestDatabase.pool().getMetadata().getName());
        assertAcceptedAndWorking(TestDatabase.pool());
    }

    @Test
    void aPlainFactoryIsAccepted() {
        assertAcceptedAndWorking(TestDatabase.plain());
    }

    @Test
    void aFreshPoolOverThePlainFactoryIsAccepted() {
        ConnectionPool pool = TestDatabase.newPool(2);
        try {
            assertAcceptedAndWorking(pool);
        } finally {
            pool.dispose();
        }
    }
}
