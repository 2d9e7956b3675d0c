/**
 * What the API packages and the implementation both stand on: rules and names that depend on
 * nothing else of the library (durations at their cap, identifiers that may be rendered into SQL,
 * the table's names, code-point order, how a connection is borrowed). Not API: the module exports
 * none of it. An architecture test keeps it a leaf, so the API never depends on the implementation
 * and no package cycle forms.
 */
@NullMarked
package io.workqueue.internal.base;

import org.jspecify.annotations.NullMarked;
