/**
 * The auto-configuration of the web console ({@code reactive-workqueue-console}):
 * {@link io.workqueue.spring.boot.autoconfigure.console.WorkQueueConsoleAutoConfiguration}, its
 * properties, and the line that says where the console is. Not API: the classes Spring Boot loads
 * or binds by name are public.
 */
@NullMarked
package io.workqueue.spring.boot.autoconfigure.console;

import org.jspecify.annotations.NullMarked;
