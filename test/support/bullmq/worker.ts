import { Queue, Worker, type ConnectionOptions, type Job } from 'bullmq';

/** The machine's Redis for the BullMQ tests, at one DB index, with a key prefix per test file. */
export function bullmqConnection(db: number): ConnectionOptions {
  return { host: '127.0.0.1', port: 6379, db, maxRetriesPerRequest: null };
}

export function testQueue(db: number, prefix: string, name: string): Queue {
  return new Queue(name, { connection: bullmqConnection(db), prefix });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs a real BullMQ worker on `queue` until `until` holds (checked every 50 ms, at most
 * `timeoutMs`), counting each job's executions; `fail` makes every execution throw (`error`: with
 * what message).
 */
export async function runWorker(
  db: number,
  prefix: string,
  queue: string,
  options: {
    fail?: boolean;
    /** With `fail`: the error each job throws (default `boom in <name>`). */
    error?: (job: Job) => string;
    until: () => Promise<boolean>;
    timeoutMs?: number;
  },
): Promise<Map<string, number>> {
  const executions = new Map<string, number>();
  const worker = new Worker(
    queue,
    async (job: Job) => {
      executions.set(String(job.id), (executions.get(String(job.id)) ?? 0) + 1);
      if (options.fail) throw new Error(options.error ? options.error(job) : `boom in ${job.name}`);
      return 'ok';
    },
    { connection: bullmqConnection(db), prefix, concurrency: 4 },
  );
  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  try {
    while (!(await options.until())) {
      if (Date.now() > deadline) throw new Error(`worker on ${queue}: condition not met in time`);
      await sleep(50);
    }
  } finally {
    await worker.close();
  }
  return executions;
}
