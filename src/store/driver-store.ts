import type { Clock } from '../clock.js';
import type { ClockReading, Store, StoreChange, StoreOperation, StoreParams } from './store.js';

/**
 * Every store operation as a function of a driver context `C` (what the driver's
 * per-concern files export: `jobClaim(context, params)`, …). A driver spreads its
 * files into one `Operations<C>`; the type checker then proves no operation is
 * missing.
 */
export type Operations<C> = {
  [K in StoreOperation]: (context: C, params: StoreParams<K>) => ReturnType<Store[K]>;
};

/**
 * The composition both drivers share: a {@link Store} whose operations delegate to
 * the driver's functions with its context (SQLite: the connection and its statement
 * cache; PostgreSQL: the pools, `query` and `transaction`). A driver class extends
 * it and adds only its lifecycle: `migrate`, `clockSync`, `watchChanges`, `close`.
 * Internal, like the Store interface.
 */
export abstract class DriverStore<C> implements Store {
  abstract readonly driver: string;
  abstract readonly claimsInFlight: number;
  abstract readonly clock: Clock;
  readonly #context: C;
  readonly #operations: Operations<C>;

  protected constructor(context: C, operations: Operations<C>) {
    this.#context = context;
    this.#operations = operations;
  }

  abstract clockSync(): Promise<ClockReading>;
  abstract migrate(): Promise<void>;
  abstract schemaCheck(): Promise<void>;
  abstract watchChanges(params: { intervalMs: number; listener: (change?: StoreChange) => void }): () => void;
  abstract close(): Promise<void>;

  jobInsertMany(params: StoreParams<'jobInsertMany'>) {
    return this.#operations.jobInsertMany(this.#context, params);
  }
  jobClaim(params: StoreParams<'jobClaim'>) {
    return this.#operations.jobClaim(this.#context, params);
  }
  jobCompleteMany(params: StoreParams<'jobCompleteMany'>) {
    return this.#operations.jobCompleteMany(this.#context, params);
  }
  jobCompleteAndClaim(params: StoreParams<'jobCompleteAndClaim'>) {
    return this.#operations.jobCompleteAndClaim(this.#context, params);
  }
  jobFail(params: StoreParams<'jobFail'>) {
    return this.#operations.jobFail(this.#context, params);
  }
  jobFinishCancelled(params: StoreParams<'jobFinishCancelled'>) {
    return this.#operations.jobFinishCancelled(this.#context, params);
  }
  jobRelease(params: StoreParams<'jobRelease'>) {
    return this.#operations.jobRelease(this.#context, params);
  }
  jobSuspend(params: StoreParams<'jobSuspend'>) {
    return this.#operations.jobSuspend(this.#context, params);
  }
  jobStepList(params: StoreParams<'jobStepList'>) {
    return this.#operations.jobStepList(this.#context, params);
  }
  jobStepSave(params: StoreParams<'jobStepSave'>) {
    return this.#operations.jobStepSave(this.#context, params);
  }
  jobMessageSend(params: StoreParams<'jobMessageSend'>) {
    return this.#operations.jobMessageSend(this.#context, params);
  }
  jobMessageTake(params: StoreParams<'jobMessageTake'>) {
    return this.#operations.jobMessageTake(this.#context, params);
  }
  jobEnqueueChildren(params: StoreParams<'jobEnqueueChildren'>) {
    return this.#operations.jobEnqueueChildren(this.#context, params);
  }
  jobStepsOrphaned(params: StoreParams<'jobStepsOrphaned'>) {
    return this.#operations.jobStepsOrphaned(this.#context, params);
  }
  finishedListen(params: StoreParams<'finishedListen'>) {
    return this.#operations.finishedListen(this.#context, params);
  }
  finishedUnlisten(params: StoreParams<'finishedUnlisten'>) {
    return this.#operations.finishedUnlisten(this.#context, params);
  }
  jobChildren(params: StoreParams<'jobChildren'>) {
    return this.#operations.jobChildren(this.#context, params);
  }
  jobCheckpoint(params: StoreParams<'jobCheckpoint'>) {
    return this.#operations.jobCheckpoint(this.#context, params);
  }
  jobProgress(params: StoreParams<'jobProgress'>) {
    return this.#operations.jobProgress(this.#context, params);
  }
  leaseExtendMany(params: StoreParams<'leaseExtendMany'>) {
    return this.#operations.leaseExtendMany(this.#context, params);
  }
  jobCancelRequests(params: StoreParams<'jobCancelRequests'>) {
    return this.#operations.jobCancelRequests(this.#context, params);
  }
  jobRescueExpired(params: StoreParams<'jobRescueExpired'>) {
    return this.#operations.jobRescueExpired(this.#context, params);
  }
  jobCancel(params: StoreParams<'jobCancel'>) {
    return this.#operations.jobCancel(this.#context, params);
  }
  jobRetry(params: StoreParams<'jobRetry'>) {
    return this.#operations.jobRetry(this.#context, params);
  }
  jobPromote(params: StoreParams<'jobPromote'>) {
    return this.#operations.jobPromote(this.#context, params);
  }
  jobGet(params: StoreParams<'jobGet'>) {
    return this.#operations.jobGet(this.#context, params);
  }
  jobTimeline(params: StoreParams<'jobTimeline'>) {
    return this.#operations.jobTimeline(this.#context, params);
  }
  jobList(params: StoreParams<'jobList'>) {
    return this.#operations.jobList(this.#context, params);
  }
  queueCounts(params: StoreParams<'queueCounts'>) {
    return this.#operations.queueCounts(this.#context, params);
  }
  queueUnservedTasks(params: StoreParams<'queueUnservedTasks'>) {
    return this.#operations.queueUnservedTasks(this.#context, params);
  }
  queueOldestDue(params: StoreParams<'queueOldestDue'>) {
    return this.#operations.queueOldestDue(this.#context, params);
  }
  leaseAcquire(params: StoreParams<'leaseAcquire'>) {
    return this.#operations.leaseAcquire(this.#context, params);
  }
  leaseRenew(params: StoreParams<'leaseRenew'>) {
    return this.#operations.leaseRenew(this.#context, params);
  }
  leaseRelease(params: StoreParams<'leaseRelease'>) {
    return this.#operations.leaseRelease(this.#context, params);
  }
  leaseGet(params: StoreParams<'leaseGet'>) {
    return this.#operations.leaseGet(this.#context, params);
  }
  serviceEnsure(params: StoreParams<'serviceEnsure'>) {
    return this.#operations.serviceEnsure(this.#context, params);
  }
  serviceGet(params: StoreParams<'serviceGet'>) {
    return this.#operations.serviceGet(this.#context, params);
  }
  serviceList(params: StoreParams<'serviceList'>) {
    return this.#operations.serviceList(this.#context, params);
  }
  serviceRecord(params: StoreParams<'serviceRecord'>) {
    return this.#operations.serviceRecord(this.#context, params);
  }
  serviceSetPaused(params: StoreParams<'serviceSetPaused'>) {
    return this.#operations.serviceSetPaused(this.#context, params);
  }
  serviceTrigger(params: StoreParams<'serviceTrigger'>) {
    return this.#operations.serviceTrigger(this.#context, params);
  }
  scheduleUpsert(params: StoreParams<'scheduleUpsert'>) {
    return this.#operations.scheduleUpsert(this.#context, params);
  }
  scheduleGet(params: StoreParams<'scheduleGet'>) {
    return this.#operations.scheduleGet(this.#context, params);
  }
  scheduleList(params?: StoreParams<'scheduleList'>) {
    return this.#operations.scheduleList(this.#context, params);
  }
  scheduleDue(params: StoreParams<'scheduleDue'>) {
    return this.#operations.scheduleDue(this.#context, params);
  }
  scheduleAdvance(params: StoreParams<'scheduleAdvance'>) {
    return this.#operations.scheduleAdvance(this.#context, params);
  }
  scheduleTrigger(params: StoreParams<'scheduleTrigger'>) {
    return this.#operations.scheduleTrigger(this.#context, params);
  }
  scheduleSetPaused(params: StoreParams<'scheduleSetPaused'>) {
    return this.#operations.scheduleSetPaused(this.#context, params);
  }
  scheduleRemove(params: StoreParams<'scheduleRemove'>) {
    return this.#operations.scheduleRemove(this.#context, params);
  }
  workerUpsert(params: StoreParams<'workerUpsert'>) {
    return this.#operations.workerUpsert(this.#context, params);
  }
  workerDelete(params: StoreParams<'workerDelete'>) {
    return this.#operations.workerDelete(this.#context, params);
  }
  workerList(params: StoreParams<'workerList'>) {
    return this.#operations.workerList(this.#context, params);
  }
  queueThroughput(params: StoreParams<'queueThroughput'>) {
    return this.#operations.queueThroughput(this.#context, params);
  }
  jobDeleteFinished(params: StoreParams<'jobDeleteFinished'>) {
    return this.#operations.jobDeleteFinished(this.#context, params);
  }
  jobDeleteFinishedBeyond(params: StoreParams<'jobDeleteFinishedBeyond'>) {
    return this.#operations.jobDeleteFinishedBeyond(this.#context, params);
  }
  queueSetPaused(params: StoreParams<'queueSetPaused'>) {
    return this.#operations.queueSetPaused(this.#context, params);
  }
  queueKnown(params: StoreParams<'queueKnown'>) {
    return this.#operations.queueKnown(this.#context, params);
  }
  jobDelete(params: StoreParams<'jobDelete'>) {
    return this.#operations.jobDelete(this.#context, params);
  }
  jobCount(params: StoreParams<'jobCount'>) {
    return this.#operations.jobCount(this.#context, params);
  }
  jobSelectIds(params: StoreParams<'jobSelectIds'>) {
    return this.#operations.jobSelectIds(this.#context, params);
  }
  jobRetryMany(params: StoreParams<'jobRetryMany'>) {
    return this.#operations.jobRetryMany(this.#context, params);
  }
  jobCancelMany(params: StoreParams<'jobCancelMany'>) {
    return this.#operations.jobCancelMany(this.#context, params);
  }
  jobTableStats(params?: StoreParams<'jobTableStats'>) {
    return this.#operations.jobTableStats(this.#context, params);
  }
  jobTableVacuum(params?: StoreParams<'jobTableVacuum'>) {
    return this.#operations.jobTableVacuum(this.#context, params);
  }
  queueListPaused(params?: StoreParams<'queueListPaused'>) {
    return this.#operations.queueListPaused(this.#context, params);
  }
  queueSetConcurrency(params: StoreParams<'queueSetConcurrency'>) {
    return this.#operations.queueSetConcurrency(this.#context, params);
  }
  queueListLimits(params?: StoreParams<'queueListLimits'>) {
    return this.#operations.queueListLimits(this.#context, params);
  }
  queueSetRateLimit(params: StoreParams<'queueSetRateLimit'>) {
    return this.#operations.queueSetRateLimit(this.#context, params);
  }
  queueDeclare(params: StoreParams<'queueDeclare'>) {
    return this.#operations.queueDeclare(this.#context, params);
  }
  queueClearOverride(params: StoreParams<'queueClearOverride'>) {
    return this.#operations.queueClearOverride(this.#context, params);
  }
  queueListSettings(params?: StoreParams<'queueListSettings'>) {
    return this.#operations.queueListSettings(this.#context, params);
  }
  queueListRateLimits(params: StoreParams<'queueListRateLimits'>) {
    return this.#operations.queueListRateLimits(this.#context, params);
  }
  rateStartsPrune(params: StoreParams<'rateStartsPrune'>) {
    return this.#operations.rateStartsPrune(this.#context, params);
  }
  concurrencyKeyList(params: StoreParams<'concurrencyKeyList'>) {
    return this.#operations.concurrencyKeyList(this.#context, params);
  }
}
