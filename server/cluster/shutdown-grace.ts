/**
 * How long a stopping server (SIGTERM, SIGINT) lets its open streams finish before it cuts them
 * off, each recorded as `server_shutdown`; every process of `--workers` keeps the same grace, and
 * the primary waits a little longer for them to log and exit.
 */
export const SHUTDOWN_GRACE_MS = 10_000;

/** After the grace: time for the cut-off responses to be logged and the workers to exit. */
export const SHUTDOWN_WRAP_UP_MS = 5_000;
