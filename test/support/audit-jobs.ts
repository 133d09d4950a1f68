/**
 * Audit rows as read with SQL, one per job: a job-batch row (task_id `(jobs)`, the jobs listed in
 * its before image as [id, sha1, bytes]) becomes one row per job, the way `taskrecon audit` lists
 * it; any other row stays as it is. The rows must carry task_id and before_json.
 */
export const JOB_BATCH = '(jobs)';

export function perJob<T extends Record<string, unknown>>(rows: readonly T[]): T[] {
  return rows.flatMap((row) => {
    if (row.task_id !== JOB_BATCH) return [row];
    const before = JSON.parse(String(row.before_json)) as {
      queue: string;
      set: string | null;
      jobs: Array<[string, string | null, number | null]>;
    };
    return before.jobs.map(
      ([id, sha1, bytes]) =>
        ({
          ...row,
          task_id: id,
          ...('event_id' in row ? { event_id: id } : {}),
          before_json: JSON.stringify({ queue: before.queue, set: before.set, sha1, bytes }),
        }) as T,
    );
  });
}
