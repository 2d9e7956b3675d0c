package io.workqueue.examples.webflux;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.ConfigurationPropertiesScan;

/**
 * A tile-rendering service: {@code POST /tiles/{layer}/{x}/{y}} enqueues a tile, a background
 * {@link TileWorker} renders queued tiles, and {@code GET /queue/stats} reports the queue's health.
 * The queue and its resources are wired in {@link WorkQueueConfiguration}.
 */
@SpringBootApplication
@ConfigurationPropertiesScan
public class TileServiceApplication {
    public static void main(String[] args) {
        SpringApplication.run(TileServiceApplication.class, args);
    }
}
