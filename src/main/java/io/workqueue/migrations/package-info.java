/** See {@link io.workqueue.ReactiveWorkQueue}. */
@NullMarked
package io.workqueue.migrations;

import org.jspecify.annotations.NullMarked;
