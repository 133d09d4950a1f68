import { createHash } from 'node:crypto';
import { payloadIdentity } from './layout.js';

/** The job's id for the audit: its payload uuid / id, else a fingerprint of the member. */
export function jobIdOf(member: string): string {
  const { id } = payloadIdentity(member);
  if (id && id.length <= 64) return id;
  return `sha1:${createHash('sha1').update(member).digest('hex')}`;
}
