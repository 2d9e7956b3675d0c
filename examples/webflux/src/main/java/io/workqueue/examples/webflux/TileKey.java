package io.workqueue.examples.webflux;

/**
 * Names one map tile. The queue's default codec stores a record as JSON with its properties
 * sorted, so the same tile is always the same key, and enqueueing it twice is one item.
 */
public record TileKey(String layer, int x, int y) {}
