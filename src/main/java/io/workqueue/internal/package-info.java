/** See {@link io.workqueue.ReactiveWorkQueue}. */
@NullMarked
package io.workqueue.internal;

import org.jspecify.annotations.NullMarked;
