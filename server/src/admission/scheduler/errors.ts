// Typed errors of the scheduler core. These are programming or configuration errors of the caller
// (the wiring, or an operator's config): a bad request never reaches the queue half-entered, and the
// scheduler's state is unchanged when one is thrown. Outcomes that are normal operation (queue full,
// deadline passed) are return values, not errors: see SubmitResult and Decision in scheduler.ts.

export class SchedulerError extends Error {
  override name = 'SchedulerError';
}

/** A field of a request, a weight or the config is malformed (NaN, negative, unknown class, ...). */
export class SchedulerInputError extends SchedulerError {
  override name = 'SchedulerInputError';
  constructor(
    /** The offending field, e.g. `weight`, `units`, `cls`, `deadline`, `config.capacity`. */
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

/** A request id that is already queued or admitted. */
export class DuplicateRequestError extends SchedulerError {
  override name = 'DuplicateRequestError';
  constructor(readonly id: string) {
    super(`request ${JSON.stringify(id)} is already queued or admitted`);
  }
}

/** An id the scheduler does not know, or knows in another state than the call needs. */
export class UnknownRequestError extends SchedulerError {
  override name = 'UnknownRequestError';
  constructor(
    readonly id: string,
    readonly expected: 'queued' | 'admitted' | 'queued or admitted',
  ) {
    super(`no ${expected} request ${JSON.stringify(id)}`);
  }
}

/** A group larger than the scheduler's capacity or max_group_size: it could never be admitted whole. */
export class GroupTooLargeError extends SchedulerError {
  override name = 'GroupTooLargeError';
  constructor(
    readonly units: number,
    readonly limit: number,
  ) {
    super(`a group of ${units} can never be admitted at once (limit ${limit})`);
  }
}
