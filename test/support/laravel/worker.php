<?php
// Laravel's own queue worker, as `php artisan queue:work redis --queue=Q --stop-when-empty
// --tries=T --sleep=0` runs it: Illuminate\Queue\Worker::daemon with WorkerOptions. It exits when a
// pop finds the queue empty (migrating due delayed jobs and expired reservations first, as
// RedisQueue::pop does).
//   --connection=C ("redis", the default, or "database"), --queue=Q (default "default"),
//   --tries=T (default 3), --timeout=S (default 60)
// When a `queue.failer` is bound, a failed job is logged to it as WorkCommand's JobFailed listener
// does.

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
$failer = $container->bound('queue.failer') ? $container->make('queue.failer') : null;
$events->listen(
    \Illuminate\Queue\Events\JobFailed::class,
    static function ($event) use (&$failed, $failer) {
        $failed++;
        if ($failer !== null) {
            $failer->log(
                $event->connectionName,
                $event->job->getQueue(),
                $event->job->getRawBody(),
                $event->exception,
            );
        }
    },
);
$status = $worker->daemon($options['connection'] ?? 'redis', $queueName, $workerOptions);
echo json_encode(['processed' => $processed, 'failed' => $failed, 'status' => $status]), "\n";
exit($status);
