/**
 * A leased work queue over PostgreSQL for Project Reactor: the public API.
 *
 * <p>Start with {@link io.workqueue.ReactiveWorkQueue#builder}. Everything here is non-null unless
 * annotated otherwise.
 */
@NullMarked
package io.workqueue;

import org.jspecify.annotations.NullMarked;
