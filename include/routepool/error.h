/* SPDX-License-Identifier: MIT */
/*
 * routepool/error.h - error codes shared by every routepool function.
 *
 * Fallible functions return 0 on success and a negative RP_E* code on
 * failure.  One X-macro list generates the enum, rp_strerror() and
 * rp_err_name(), so the three can never disagree.  The code says what kind
 * of failure happened; rp_errmsg() says which field or argument caused it.
 */
#ifndef ROUTEPOOL_ERROR_H
#define ROUTEPOOL_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, value, description) */
#define RP_ERROR_LIST(X)                                                    \
    X(OK, 0, "success")                                                     \
    X(EINVAL, -1, "invalid argument")                                       \
    X(ENOMEM, -2, "out of memory")                                          \
    X(EFULL, -3, "mailbox full: job rejected")                              \
    X(EDROPPED, -4, "mailbox full: new job dropped (drop-new)")             \
    X(EEVICTED, -5, "mailbox full: oldest job evicted (drop-head)")         \
    X(ESTOPPED, -6, "routee stopped")                                       \
    X(ENOROUTEE, -7, "no routee to route to")                               \
    X(ESHUTDOWN, -8, "pool is shut down")                                   \
    X(ETIMEDOUT, -9, "timed out")                                           \
    X(ESYS, -10, "operating system call failed")                            \
    X(EBUSY, -11, "operation not allowed from a routee thread")             \
    X(ENODEPTH, -12, "routee depth cannot be read")                         \
    X(ESEND, -13, "foreign routee refused the job")                          \
    X(ENOREPLY, -14, "job returned without replying to its ask")            \
    X(ECANCELLED, -15, "cancelled: another routee won the scatter")         \
    X(EAGGREGATE, -16, "every routee of the scatter failed")                \
    X(EEXPIRED, -17, "ask expired before its job started")                 \
    X(EEXIST, -18, "already exists (e.g. a live cluster node has this id)") \
    X(EUNAVAILABLE, -19, "cluster unavailable: Redis cannot be reached")    \
    X(ENOHANDLER, -20, "no handler registered under that name")

/** Error codes.  Every public function documents which of these it returns. */
typedef enum rp_errcode {
#define RP__ERR_ENUM(name, value, desc) RP_##name = (value),
    RP_ERROR_LIST(RP__ERR_ENUM)
#undef RP__ERR_ENUM
} rp_errcode;

/**
 * Describe an error code.
 *
 * @param code  a value returned by a routepool function (0 or RP_E*).
 * @return      a static, human-readable string; "unknown error" for codes
 *              routepool does not define.  Never NULL.
 * Thread-safe.
 */
const char *rp_strerror(int code);

/**
 * Name of an error code, e.g. "RP_EFULL".
 *
 * @return a static string; "RP_E?" for unknown codes.  Never NULL.
 * Thread-safe.
 */
const char *rp_err_name(int code);

/**
 * Detail of the last error returned to the calling thread, naming the
 * field or argument at fault, e.g.
 * "rp_pool_create: opts.routees must be 1..4096 (got 0)".
 *
 * Set by every failing routepool call; not cleared by successful ones.
 *
 * @return a thread-local string, valid until the calling thread's next
 *         failing routepool call; "" if no call has failed on this thread.
 * Thread-safe (each thread has its own message).
 */
const char *rp_errmsg(void);

/**
 * Set the calling thread's rp_errmsg() detail and return code: for
 * libraries built on routepool's public API (libroutepool-cluster), so
 * their failing calls report the same way the core's do.
 *
 * @param code  returned unchanged (normally a negative RP_E* code).
 * @param fmt   printf format (never data: pass data through "%s");
 *              the message is truncated to 255 bytes.
 * @return code.
 * Thread-safe (each thread has its own message).
 */
int rp_error_set(int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
}
#endif
#endif /* ROUTEPOOL_ERROR_H */
