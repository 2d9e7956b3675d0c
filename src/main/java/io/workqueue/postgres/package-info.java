/** See {@link io.workqueue.ReactiveWorkQueue}. */
@NullMarked
package io.workqueue.postgres;

import org.jspecify.annotations.NullMarked;
