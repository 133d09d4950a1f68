/** The fields of the task object of the JSON contract (the JSON contract), in the order NDJSON and CSV write them. */
export const TASK_FIELDS = [
  'id',
  'bizType',
  'bizId',
  'eventId',
  'status',
  'attempts',
  'nextRetryAt',
  'lastError',
  'createdAt',
  'updatedAt',
  'queue',
  'connection',
] as const;
