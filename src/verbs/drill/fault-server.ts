import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * An HTTP server on loopback that answers task deliveries, with a switchable fault in front of
 * the real work: the drills' reference handler (work = apply the effect) and the fault proxy in
 * front of a staging handler (work = forward the delivery) are both one of these.
 *
 * - `none`: do the work, answer with its result;
 * - `hang`: accept the request and never answer (the caller's timeout must fire);
 * - `reject`: answer 422 without doing the work (a permanent error);
 * - `slow`: do the work, then answer only after `slowMs` (the caller times out, the effect is in).
 */
export const FAULTS = ['none', 'hang', 'reject', 'slow'] as const;
export type Fault = (typeof FAULTS)[number];

/** A delivery as the http dispatcher sends it. */
export interface Delivery {
  eventId: string;
  bizType: string | null;
  bizId: string | null;
  payload: unknown;
  attempt: number | null;
  idempotencyKey: string | null;
}

export interface WorkResult {
  status: number;
  body: unknown;
}

export type Work = (delivery: Delivery) => Promise<WorkResult>;

/** What happened to each delivery, in arrival order: the drill's observation of the target. */
export interface DeliveryLog {
  eventId: string;
  fault: Fault;
  answered: number | null;
}

export interface FaultServer {
  readonly url: string;
  readonly port: number;
  fault: Fault;
  /** How long `slow` holds the answer back. */
  slowMs: number;
  readonly deliveries: DeliveryLog[];
  /** Deliveries of one event id so far. */
  deliveriesOf(eventId: string): number;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 1 << 20;

/** Starts the server on 127.0.0.1 at an ephemeral port (or `port`). */
export async function startFaultServer(
  work: Work,
  options: { port?: number; slowMs?: number } = {},
): Promise<FaultServer> {
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const deliveries: DeliveryLog[] = [];
  const state = { fault: 'none' as Fault, slowMs: options.slowMs ?? 1500 };

  const server: Server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) answer(res, 500, { error: (error as Error).message });
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST') return answer(res, 405, { error: 'POST a task delivery' });
    const delivery = parseDelivery(await readBody(req), req.headers['idempotency-key']);
    if (!delivery) return answer(res, 400, { error: 'not a task delivery: expected JSON with eventId' });
    const fault = state.fault;
    const log: DeliveryLog = { eventId: delivery.eventId, fault, answered: null };
    deliveries.push(log);
    if (fault === 'hang') return; // the socket stays open, unanswered, until the caller gives up or we close
    if (fault === 'reject') {
      log.answered = 422;
      return answer(res, 422, { error: 'rejected: the drill injected a permanent error' });
    }
    const result = await work(delivery);
    if (fault === 'slow') {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          timers.delete(timer);
          resolve();
        }, state.slowMs);
        timers.add(timer);
      });
    }
    log.answered = result.status;
    if (!res.destroyed) answer(res, result.status, result.body);
  }

  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/tasks`,
    port,
    get fault() {
      return state.fault;
    },
    set fault(next: Fault) {
      state.fault = next;
    },
    get slowMs() {
      return state.slowMs;
    },
    set slowMs(ms: number) {
      state.slowMs = ms;
    },
    deliveries,
    deliveriesOf: (eventId) => deliveries.filter((d) => d.eventId === eventId).length,
    async close() {
      for (const timer of timers) clearTimeout(timer);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function answer(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new Error('delivery too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parseDelivery(text: string, header: string | string[] | undefined): Delivery | undefined {
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (!body || typeof body !== 'object' || typeof body.eventId !== 'string' || body.eventId === '')
    return undefined;
  const str = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));
  return {
    eventId: body.eventId,
    bizType: str(body.bizType),
    bizId: str(body.bizId),
    payload: body.payload ?? null,
    attempt: typeof body.attempt === 'number' ? body.attempt : null,
    idempotencyKey: Array.isArray(header) ? (header[0] ?? null) : (header ?? null),
  };
}
