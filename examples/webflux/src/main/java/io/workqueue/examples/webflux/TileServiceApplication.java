package io.workqueue.examples.webflux;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * A tile-rendering service: {@code POST /tiles/{layer}/{x}/{y}} enqueues a tile, {@link TileRenderer}
 * renders queued tiles in the background, and {@code GET /queue/stats} (or Actuator's
 * {@code /actuator/health/workqueue}) reports the queue's health. The queue, its worker and their
 * shutdown come from the reactive-workqueue Spring Boot starter, configured in
 * {@code application.yml}.
 */
@SpringBootApplication
public class TileServiceApplication {
    public static void main(String[] args) {
        SpringApplication.run(TileServiceApplication.class, args);
    }
}
