/**
 * Wakeups over PostgreSQL LISTEN/NOTIFY: {@link io.workqueue.notify.PgNotificationListener}.
 * Notifications only shorten latency; no guarantee of the queue rests on them.
 */
@NullMarked
package io.workqueue.notify;

import org.jspecify.annotations.NullMarked;
