import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requestLink } from '../../src/console/control/client.js';
import { controlDir, socketPath } from '../../src/console/control/paths.js';
import { openControlSocket } from '../../src/console/control/server.js';

/** The console's control socket on a private runtime directory of this test. */
describe('console control socket (console --link)', () => {
  let runtime: string;
  const saved = process.env.XDG_RUNTIME_DIR;

  beforeEach(() => {
    runtime = mkdtempSync(join(tmpdir(), 'taskrecon-control-'));
    process.env.XDG_RUNTIME_DIR = runtime;
  });

  afterEach(() => {
    if (saved === undefined) delete process.env.XDG_RUNTIME_DIR;
    else process.env.XDG_RUNTIME_DIR = saved;
    rmSync(runtime, { recursive: true, force: true });
  });

  it('keeps the socket owner-only (directory 700, socket 600) and answers a link request with a fresh link', async () => {
    let minted = 0;
    const control = await openControlSocket(4242, () => ({
      url: `http://127.0.0.1:4242/?token=t${++minted}`,
      port: 4242,
      readOnly: false,
      operator: 'alice',
    }));
    try {
      const dir = controlDir();
      expect(statSync(dir).mode & 0o777).toBe(0o700);
      expect(statSync(socketPath(dir, 4242)).mode & 0o777).toBe(0o600);
      expect((await requestLink(4242)).url).toBe('http://127.0.0.1:4242/?token=t1');
      // Without --port: the only console of this user.
      expect((await requestLink(0)).url).toBe('http://127.0.0.1:4242/?token=t2');
      await expect(requestLink(4243)).rejects.toThrow(/no console is running on port 4243/);
    } finally {
      await control.close();
    }
    await expect(requestLink(0)).rejects.toThrow(/no console is running for this user/);
  });

  it('refuses a control directory others can enter: nothing is opened there', async () => {
    mkdirSync(join(runtime, 'taskrecon'), { mode: 0o755 });
    chmodSync(join(runtime, 'taskrecon'), 0o755);
    await expect(
      openControlSocket(4244, () => ({ url: 'x', port: 4244, readOnly: false, operator: 'a' })),
    ).rejects.toThrow(/not a private directory/);
  });

  it('asks which console when several run', async () => {
    const answer = (port: number) => () => ({ url: `u${port}`, port, readOnly: false, operator: 'a' });
    const a = await openControlSocket(5001, answer(5001));
    const b = await openControlSocket(5002, answer(5002));
    try {
      await expect(requestLink(0)).rejects.toThrow(/2 consoles are running \(ports 5001, 5002\)/);
      expect((await requestLink(5002)).url).toBe('u5002');
    } finally {
      await a.close();
      await b.close();
    }
  });
});
