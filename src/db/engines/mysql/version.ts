import type { ServerVerdict } from '../types.js';

/**
 * Which MySQL/MariaDB versions taskrecon supports, and since which SKIP LOCKED works. TiDB
 * (`8.0.11-TiDB-v7.5.0`) and Vitess (`8.0.30-Vitess`) answer VERSION() with the MySQL version they
 * speak; they are told apart by the suffix.
 */

interface Version {
  product: 'MariaDB' | 'MySQL' | 'TiDB' | 'Vitess';
  major: number;
  minor: number;
  patch: number;
}

export function parseServerVersion(version: string): Version | undefined {
  const match = /^(\d+)\.(\d+)\.(\d+)/.exec(version);
  if (!match) return undefined;
  return {
    product: /-TiDB-/i.test(version)
      ? 'TiDB'
      : /-Vitess\b/i.test(version)
        ? 'Vitess'
        : /mariadb/i.test(version)
          ? 'MariaDB'
          : 'MySQL',
    major: Number(match[1]),
    minor: Number(match[2]),
    patch: Number(match[3]),
  };
}

const atLeast = (v: Version, major: number, minor: number, patch: number): boolean =>
  v.major !== major ? v.major > major : v.minor !== minor ? v.minor > minor : v.patch >= patch;

/** SKIP LOCKED came in MariaDB 10.6 and MySQL 8.0.1; redrive's concurrent claims rely on it. */
export function supportsSkipLocked(version: string): boolean {
  const v = parseServerVersion(version);
  if (!v) return false;
  return v.product === 'MariaDB' ? atLeast(v, 10, 6, 0) : atLeast(v, 8, 0, 1);
}

export function mysqlVersionVerdict(version: string): ServerVerdict {
  const v = parseServerVersion(version);
  if (!v)
    return {
      status: 'warn',
      message: `unrecognised server version '${version}'`,
      hint: 'taskrecon supports MySQL 8 and MariaDB 10.6+.',
    };
  const supported = v.product === 'MariaDB' ? atLeast(v, 10, 6, 0) : atLeast(v, 8, 0, 0);
  return supported
    ? { status: 'ok', message: `${v.product} ${version}`, hint: null }
    : {
        status: 'fail',
        message: `${v.product} ${version} is older than taskrecon supports`,
        hint: 'Upgrade to MySQL 8 or MariaDB 10.6+.',
      };
}

export function mysqlSkipLockedVerdict(version: string): ServerVerdict | null {
  if (parseServerVersion(version)?.product === 'TiDB')
    return {
      status: 'ok',
      message:
        `${version} accepts FOR UPDATE SKIP LOCKED without skipping locked rows (pingcap/tidb#69720); ` +
        "redrive's claims do not rely on it: each is a guarded UPDATE whose changed rows are counted, so concurrent workers stay correct and only contend more",
      hint: null,
    };
  if (supportsSkipLocked(version)) return null;
  return {
    status: 'fail',
    message: `${version} has no FOR UPDATE SKIP LOCKED, so concurrent redrive workers would block each other`,
    hint: 'Upgrade to MariaDB 10.6+ or MySQL 8.0.1+, or run a single redrive with --concurrency 1.',
  };
}
