/** See {@link io.workqueue.ReactiveWorkQueue}. */
@NullMarked
package io.workqueue.notify;

import org.jspecify.annotations.NullMarked;
