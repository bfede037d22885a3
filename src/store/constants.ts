/**
 * Values both drivers write, kept in one place so the drivers cannot drift.
 */

/** The error message of an attempt settled by `jobRescueExpired` (the lease ran out). */
export const LEASE_EXPIRED_MESSAGE = 'lease expired: the worker stopped heartbeating (crashed, killed or frozen)';

/** SQL SET fragment (valid on SQLite and PostgreSQL) that clears a job's lease holder and expiry; the token stays. */
export const CLEAR_LEASE = 'lease_owner = NULL, lease_expires_at = NULL';

/**
 * SQL SET fragment (both drivers) that ends the running attempt: its worker kept as
 * `last_worker` (migration 18), the lease cleared, and `wait` (migration 22) set to the
 * SQL expression `wait`: NULL, or what a suspending release waits for.
 */
export const endAttempt = (wait: string): string => `last_worker = lease_owner, wait = ${wait}, ${CLEAR_LEASE}`;

/** {@link endAttempt} with no wait: what every end of an attempt but a suspending release writes. */
export const END_ATTEMPT = endAttempt('NULL');
