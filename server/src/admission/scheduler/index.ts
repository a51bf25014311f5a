// The scheduler core's public surface (docs/SCHEDULING.md). Not wired into the server yet.
export { DuplicateRequestError, GroupTooLargeError, SchedulerError, SchedulerInputError, UnknownRequestError } from './errors.js';
export type { Decision, FailureOutcome, Progress, SchedulerConfig, SchedulerStats, SubmitRequest, SubmitResult } from './scheduler.js';
export { Scheduler } from './scheduler.js';
