import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { createPgDatabase, type PgTestDatabase } from '../support/postgres.js';

let db: PgTestDatabase;
const PASSWORD = 'hunter2-secret';

beforeAll(async () => {
  db = await createPgDatabase('pg_bad_input');
});

afterAll(async () => {
  await db?.drop();
});

/** The DSN of the test database with another user, password or database. */
function dsnWith(change: { user?: string; password?: string; database?: string; port?: number }): string {
  const url = new URL(db.dsn);
  if (change.user) url.username = change.user;
  if (change.password) url.password = change.password;
  if (change.database) url.pathname = `/${change.database}`;
  if (change.port) url.port = String(change.port);
  return url.toString();
}

async function expectConnectionFailure(dsn: string, message: RegExp, hint: RegExp): Promise<void> {
  const result = await runCli(['scan', '--db', dsn]);
  expect(result.code, result.stderr).toBe(3);
  expect(result.stderr).toMatch(message);
  expect(result.stderr).toMatch(hint);
  expect(result.stderr).toContain(':***@');
  expect(result.stderr + result.stdout).not.toContain(PASSWORD);
  expect(result.stderr).not.toMatch(/\n\s+at /);
}

describe('bad input on PostgreSQL', () => {
  it('an unknown database: exit 3, named, with the password masked', async () => {
    await expectConnectionFailure(
      dsnWith({ password: PASSWORD, database: 'no_such_database_here' }),
      /cannot connect to postgres:\/\/.*no_such_database_here: database "no_such_database_here" does not exist/,
      /Create the database, or fix its name/,
    );
  });

  it('a user the server refuses: exit 3, with the password masked', async () => {
    await expectConnectionFailure(
      dsnWith({ user: 'no_such_role', password: PASSWORD }),
      /cannot connect to postgres:\/\/no_such_role:\*\*\*@.*role "no_such_role" does not exist/,
      /Check the user name/,
    );
  });

  it('nothing listening: exit 3, saying where it looked', async () => {
    await expectConnectionFailure(
      dsnWith({ password: PASSWORD, port: 1 }),
      /ECONNREFUSED/,
      /Nothing listens at/,
    );
  });

  it('a missing table: exit 3, naming it and how to create it', async () => {
    const result = await runCli([
      'scan',
      '--db',
      dsnWith({ password: PASSWORD }),
      '--table',
      'no_such_table',
    ]);
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/table 'no_such_table' does not exist in postgres:\/\/postgres:\*\*\*@/);
    expect(result.stderr).toMatch(/taskrecon init/);
    expect(result.stderr).not.toContain(PASSWORD);
  });

  it('a bad sslmode: exit 3, naming the values it takes', async () => {
    const result = await runCli(['scan', '--db', `${dsnWith({ password: PASSWORD })}?sslmode=sometimes`]);
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/unknown sslmode 'sometimes'/);
    expect(result.stderr).not.toContain(PASSWORD);
  });
});
