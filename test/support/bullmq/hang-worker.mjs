// A BullMQ worker whose jobs never finish, killed with SIGKILL by the test mid-job.
// argv: redis db, prefix, queue, concurrency, lockDuration ms.
import { Worker } from 'bullmq';

const [db, prefix, queue, concurrency, lockDuration] = process.argv.slice(2);
const worker = new Worker(queue, () => new Promise(() => undefined), {
  connection: { host: '127.0.0.1', port: 6379, db: Number(db), maxRetriesPerRequest: null },
  prefix,
  concurrency: Number(concurrency),
  lockDuration: Number(lockDuration),
  // Its own stalled check runs (and marks its active jobs) as a real worker's does.
  stalledInterval: 1500,
});
worker.on('active', (job) => process.stdout.write(`active ${job.id}\n`));
