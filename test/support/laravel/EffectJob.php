<?php
// The job the harness dispatches: each run writes one effect row into MariaDB, keyed by the job's
// own payload id, with the attempt number Laravel's worker reports. Counting rows per job id shows
// whether every job ran exactly once.

use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Queue\InteractsWithQueue;

final class EffectJob implements ShouldQueue
{
    use InteractsWithQueue, Queueable;

    /** A label the test chose (e.g. "ready-7", "delayed-2", "reserved-0"). */
    public $label;

    public $tries = 3;

    public function __construct(string $label)
    {
        $this->label = $label;
    }

    public function handle(): void
    {
        static $pdo = null;
        if ($pdo === null) {
            $pdo = new PDO(
                harness_env('LARAVEL_MYSQL_DSN'),
                harness_env('LARAVEL_MYSQL_USER', 'root'),
                getenv('LARAVEL_MYSQL_PASSWORD') ?: '',
                [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION],
            );
        }
        $statement = $pdo->prepare(
            'INSERT INTO effects (job_id, label, queue, attempts) VALUES (?, ?, ?, ?)'
        );
        $statement->execute([
            $this->job->getJobId(),
            $this->label,
            $this->job->getQueue(),
            $this->job->attempts(),
        ]);
    }
}
