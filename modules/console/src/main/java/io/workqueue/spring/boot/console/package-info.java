/**
 * The web console for reactive-workqueue ({@code reactive-workqueue-console}):
 * {@link io.workqueue.spring.boot.console.WorkQueueConsole}, WebFlux routes serving a page and a JSON
 * API over one {@link io.workqueue.WorkQueueAdmin} per table. The Spring Boot auto-configuration
 * serves it when this artifact is on the class path and the console is enabled.
 */
@NullMarked
package io.workqueue.spring.boot.console;

import org.jspecify.annotations.NullMarked;
