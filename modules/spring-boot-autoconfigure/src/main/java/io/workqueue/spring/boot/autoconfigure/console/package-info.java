/**
 * The web console of the Spring Boot starter: {@link io.workqueue.spring.boot.autoconfigure.console.WorkQueueConsoleAutoConfiguration}
 * and the handlers it routes to. Not API: only the auto-configuration class is public, because Spring
 * Boot loads it by name.
 */
@NullMarked
package io.workqueue.spring.boot.autoconfigure.console;

import org.jspecify.annotations.NullMarked;
