<?php
// Laravel's own queue worker, as `php artisan queue:work redis --queue=Q --stop-when-empty
// --tries=T --sleep=0` runs it: Illuminate\Queue\Worker::daemon with WorkerOptions. It exits when a
// pop finds the queue empty (migrating due delayed jobs and expired reservations first, as
// RedisQueue::pop does).
//   --queue=Q (default "default"), --tries=T (default 3), --timeout=S (default 60)

require __DIR__ . '/bootstrap.php';

use Illuminate\Queue\Worker;
use Illuminate\Queue\WorkerOptions;

[$capsule, $container, $events] = harness_boot();
$options = harness_options($argv);
$queueName = $options['queue'] ?? 'default';

$worker = new Worker(
    $capsule->getQueueManager(),
    $events,
    $container->make(\Illuminate\Contracts\Debug\ExceptionHandler::class),
    static fn () => false,
);
$workerOptions = new WorkerOptions(
    'default',
    0,
    512,
    (int) ($options['timeout'] ?? '60'),
    0,
    (int) ($options['tries'] ?? '3'),
    false,
    true,
);
$processed = 0;
$events->listen(\Illuminate\Queue\Events\JobProcessed::class, static function () use (&$processed) {
    $processed++;
});
$failed = 0;
$events->listen(\Illuminate\Queue\Events\JobFailed::class, static function () use (&$failed) {
    $failed++;
});
$status = $worker->daemon('redis', $queueName, $workerOptions);
echo json_encode(['processed' => $processed, 'failed' => $failed, 'status' => $status]), "\n";
exit($status);
