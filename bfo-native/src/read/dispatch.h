/* SPDX-License-Identifier: Apache-2.0 */
#ifndef BFO_DISPATCH_H
#define BFO_DISPATCH_H

/* Phase 2 of a read: the dispatcher thread of a context (arg). */
void *dispatcher_main(void *arg);

#endif
