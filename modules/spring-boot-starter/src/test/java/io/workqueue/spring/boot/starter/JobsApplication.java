package io.workqueue.spring.boot.starter;

import io.workqueue.ReactiveWorkQueue;
import io.workqueue.spring.boot.HandlesQueue;
import io.workqueue.spring.boot.WorkQueueHandler;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.http.HttpStatus;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * The smallest WebFlux service on the starter: {@code POST /jobs/{key}} enqueues, a handler bean
 * works the queue {@code jobs} configured by properties. Keys starting with {@code held} wait for
 * {@link #gate} (so a test can keep them in flight); {@code held-fail…} then fail.
 */
@SpringBootApplication
public class JobsApplication {
    /** Opens the held items' handlers. */
    final Sinks.Empty<Void> gate = Sinks.empty();
    /** Keys whose handler has started. */
    final Set<String> started = ConcurrentHashMap.newKeySet();
    /** Keys whose handler has succeeded. */
    final Set<String> succeeded = ConcurrentHashMap.newKeySet();

    @Bean
    @HandlesQueue("jobs")
    WorkQueueHandler<String> jobRunner() {
        return item -> Mono.defer(() -> {
            String key = item.key();
            started.add(key);
            if (!key.startsWith("held")) {
                return Mono.fromRunnable(() -> succeeded.add(key));
            }
            return gate.asMono().then(key.startsWith("held-fail")
                    ? Mono.error(new IllegalStateException("failed while the service stopped"))
                    : Mono.fromRunnable(() -> succeeded.add(key)));
        });
    }

    @RestController
    static class JobsController {
        private final ReactiveWorkQueue<String> jobs;

        JobsController(ReactiveWorkQueue<String> jobs) {
            this.jobs = jobs;
        }

        @PostMapping("/jobs/{key}")
        @ResponseStatus(HttpStatus.ACCEPTED)
        Mono<Void> enqueue(@PathVariable String key) {
            return jobs.enqueueKeys(key);
        }
    }
}
