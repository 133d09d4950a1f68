<?php
// The job the harness dispatches: each run writes one effect row into MariaDB, keyed by the job's
// own payload id, with the attempt number Laravel's worker reports. Counting rows per job id shows
// whether every job ran exactly once. When LARAVEL_FAILING is set, a job whose label is listed in
// the `failing` table throws (as a job whose service is down), writing no effect: after its tries
// Laravel's worker fails it into its failed-job table. Once the label is removed it runs.

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
            $mysql = (bool) getenv('LARAVEL_MYSQL_DSN');
            $pdo = new PDO(
                harness_effects_dsn(),
                $mysql ? harness_env('LARAVEL_MYSQL_USER', 'root') : harness_env('LARAVEL_PGSQL_USER', 'postgres'),
                ($mysql ? getenv('LARAVEL_MYSQL_PASSWORD') : getenv('LARAVEL_PGSQL_PASSWORD')) ?: '',
                [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION],
            );
        }
        if (getenv('LARAVEL_FAILING')) {
            $failing = $pdo->prepare('SELECT 1 FROM failing WHERE label = ?');
            $failing->execute([$this->label]);
            if ($failing->fetchColumn() !== false) {
                throw new RuntimeException("the service of {$this->label} is down");
            }
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
