import { createHash } from 'node:crypto';
import type { MovedJob } from '../types.js';
import { payloadIdentity } from './layout.js';

/** The job's id for the audit: its payload uuid / id, else a fingerprint of the member. */
export function jobIdOf(member: string): string {
  const { id } = payloadIdentity(member);
  if (id && id.length <= 64) return id;
  return `sha1:${createHash('sha1').update(member).digest('hex')}`;
}

/**
 * The jobs of a reply in the four-value form of the scripts' `digests` (id or '', SHA-1, bytes,
 * payload or ''): the id as the script read it, else as jobIdOf() reads the payload.
 */
export function jobsOfDigests(
  reply: readonly (string | number)[],
  batch: { from: string; to: string; fromSet: string; toSet: string },
): MovedJob[] {
  const jobs: MovedJob[] = [];
  for (let i = 0; i + 3 < reply.length; i += 4) {
    const id = String(reply[i]);
    const payload = String(reply[i + 3]);
    jobs.push({
      jobId: id || jobIdOf(payload),
      from: batch.from,
      to: batch.to,
      fromSet: batch.fromSet,
      toSet: batch.toSet,
      digest: { sha1: String(reply[i + 1]), bytes: Number(reply[i + 2]) },
    });
  }
  return jobs;
}
