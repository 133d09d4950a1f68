import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A fresh unguessable secret (256 bits, URL-safe). */
export function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** Compares two secrets in constant time (the digests have one length whatever was sent). */
export function sameSecret(a: string, b: string): boolean {
  const da = createHash('sha256').update(a).digest();
  const db = createHash('sha256').update(b).digest();
  return timingSafeEqual(da, db) && a.length === b.length;
}
