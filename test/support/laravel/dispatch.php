<?php
// Dispatches EffectJobs the way an application does, with Laravel's own RedisQueue (or DatabaseQueue):
//   --connection=C     the queue connection: "redis" (default) or "database" (PostgreSQL)
//   --queue=Q          the queue (default "default")
//   --ready=N          N jobs pushed now (Queue::push), labelled ready-0 … ready-N-1
//   --delayed=N        N jobs pushed with Queue::later(--delay seconds), labelled delayed-…
//   --delay=S          the delay of the delayed jobs (default 2)
//   --reserved=N       N jobs pushed, then popped by RedisQueue::pop and abandoned (the process
//                      exits without deleting them): they sit in `queues:Q:reserved`, as the
//                      reservation of a worker that died mid-job. Labelled reserved-…
// Prints one JSON line: {"ready":[ids],"delayed":[ids],"reserved":[ids]} (payload ids).

require __DIR__ . '/bootstrap.php';

[$capsule] = harness_boot();
$options = harness_options($argv);
$queueName = $options['queue'] ?? 'default';
$delay = (int) ($options['delay'] ?? '2');
$connection = $capsule->connection($options['connection'] ?? 'redis');

$ids = ['ready' => [], 'delayed' => [], 'reserved' => []];
for ($i = 0; $i < (int) ($options['reserved'] ?? '0'); $i++) {
    $connection->push(new EffectJob("reserved-$i"), '', $queueName);
    $job = $connection->pop($queueName);
    if ($job === null) {
        fwrite(STDERR, "could not pop the job to abandon\n");
        exit(1);
    }
    $ids['reserved'][] = $job->getJobId();
}
for ($i = 0; $i < (int) ($options['ready'] ?? '0'); $i++) {
    $ids['ready'][] = $connection->push(new EffectJob("ready-$i"), '', $queueName);
}
for ($i = 0; $i < (int) ($options['delayed'] ?? '0'); $i++) {
    $ids['delayed'][] = $connection->later($delay, new EffectJob("delayed-$i"), '', $queueName);
}
echo json_encode($ids), "\n";
