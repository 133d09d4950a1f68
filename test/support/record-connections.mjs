// Preloaded with `node --import` into a process under test: records the address of every outgoing
// TCP connection (one JSON line each) to the file named by TASKRECON_RECORD_CONNECTIONS.
import { appendFileSync } from 'node:fs';
import net from 'node:net';

const file = process.env.TASKRECON_RECORD_CONNECTIONS;
if (file) {
  const connect = net.Socket.prototype.connect;
  net.Socket.prototype.connect = function (...args) {
    const first = args[0];
    let target;
    if (Array.isArray(first)) target = first[0] ?? {};
    else if (first && typeof first === 'object') target = first;
    else target = { port: first, host: typeof args[1] === 'string' ? args[1] : 'localhost' };
    appendFileSync(
      file,
      `${JSON.stringify({ host: target.host ?? 'localhost', port: target.port ?? null, path: target.path ?? null })}\n`,
    );
    return connect.apply(this, args);
  };
}
