<?php
// A minimal Laravel 8 queue container (no application skeleton): the queue capsule with one Redis
// connection (phpredis), the bus dispatcher that CallQueuedHandler needs, an event dispatcher and
// an exception handler that prints to stderr. Configured by environment variables:
//   LARAVEL_REDIS_HOST, LARAVEL_REDIS_PORT, LARAVEL_REDIS_DB, LARAVEL_REDIS_PREFIX,
//   LARAVEL_RETRY_AFTER (seconds), LARAVEL_MYSQL_DSN (for the effect rows: mysql:host=…;dbname=…),
//   LARAVEL_MYSQL_USER, LARAVEL_MYSQL_PASSWORD.
// With LARAVEL_PGSQL_DATABASE set, a second queue connection named "database" is Laravel's
// DatabaseQueue on a `pgsql` database connection (LARAVEL_PGSQL_HOST, LARAVEL_PGSQL_PORT,
// LARAVEL_PGSQL_USER), its `jobs` table, and its failed jobs go to `failed_jobs` through the
// DatabaseUuidFailedJobProvider, as `queue.failer` is set up by default in Laravel 8. The effect
// rows then go to that database too (pgsql:host=…;dbname=…), unless LARAVEL_MYSQL_DSN is set.

require_once 'Illuminate/autoload.php';
require_once __DIR__ . '/EffectJob.php';

use Illuminate\Container\Container;
use Illuminate\Contracts\Debug\ExceptionHandler;
use Illuminate\Database\Capsule\Manager as Database;
use Illuminate\Queue\Failed\DatabaseUuidFailedJobProvider;
use Illuminate\Events\Dispatcher as Events;
use Illuminate\Queue\Capsule\Manager as Queue;
use Illuminate\Redis\RedisManager;

final class StderrExceptionHandler implements ExceptionHandler
{
    public function report(Throwable $e)
    {
        fwrite(STDERR, 'job exception: ' . get_class($e) . ': ' . $e->getMessage() . "\n");
    }

    public function shouldReport(Throwable $e)
    {
        return true;
    }

    public function render($request, Throwable $e)
    {
        throw $e;
    }

    public function renderForConsole($output, Throwable $e)
    {
        fwrite(STDERR, (string) $e . "\n");
    }
}

function harness_env(string $name, ?string $default = null): string
{
    $value = getenv($name);
    if ($value === false || $value === '') {
        if ($default === null) {
            fwrite(STDERR, "missing environment variable $name\n");
            exit(64);
        }
        return $default;
    }
    return $value;
}

/** @return array{0: Queue, 1: Container, 2: Events} */
function harness_boot(): array
{
    $container = new Container();
    Container::setInstance($container);
    $container->instance(\Illuminate\Contracts\Container\Container::class, $container);
    $events = new Events($container);
    $container->instance('events', $events);
    $container->instance(\Illuminate\Contracts\Events\Dispatcher::class, $events);
    $container->instance(ExceptionHandler::class, new StderrExceptionHandler());
    $bus = new \Illuminate\Bus\Dispatcher($container);
    $container->instance(\Illuminate\Contracts\Bus\Dispatcher::class, $bus);

    $container->instance('redis', new RedisManager($container, 'phpredis', [
        'options' => ['prefix' => harness_env('LARAVEL_REDIS_PREFIX', '')],
        'default' => [
            'host' => harness_env('LARAVEL_REDIS_HOST', '127.0.0.1'),
            'port' => (int) harness_env('LARAVEL_REDIS_PORT', '6379'),
            'database' => (int) harness_env('LARAVEL_REDIS_DB', '0'),
        ],
    ]));

    $queue = new Queue($container);
    $queue->addConnection([
        'driver' => 'redis',
        'connection' => 'default',
        'queue' => 'default',
        'retry_after' => (int) harness_env('LARAVEL_RETRY_AFTER', '90'),
        'block_for' => null,
    ], 'redis');
    if (getenv('LARAVEL_PGSQL_DATABASE')) {
        $database = new Database($container);
        $database->addConnection([
            'driver' => 'pgsql',
            'host' => harness_env('LARAVEL_PGSQL_HOST', '127.0.0.1'),
            'port' => (int) harness_env('LARAVEL_PGSQL_PORT', '5432'),
            'database' => harness_env('LARAVEL_PGSQL_DATABASE'),
            'username' => harness_env('LARAVEL_PGSQL_USER', 'postgres'),
            'password' => getenv('LARAVEL_PGSQL_PASSWORD') ?: '',
            'charset' => 'utf8',
            'prefix' => '',
            'schema' => 'public',
            'sslmode' => 'prefer',
        ], 'pgsql');
        $container->instance('db', $database->getDatabaseManager());
        $queue->addConnection([
            'driver' => 'database',
            'connection' => 'pgsql',
            'table' => 'jobs',
            'queue' => 'default',
            'retry_after' => (int) harness_env('LARAVEL_RETRY_AFTER', '90'),
        ], 'database');
        $container->instance('queue.failer', new DatabaseUuidFailedJobProvider(
            $database->getDatabaseManager(),
            'pgsql',
            'failed_jobs',
        ));
    }
    $queue->getContainer()['config']['queue.default'] = 'redis';
    $queue->setAsGlobal();
    return [$queue, $container, $events];
}

/** PDO DSN of the database holding the `effects` (and `failing`) tables. */
function harness_effects_dsn(): string
{
    if (getenv('LARAVEL_MYSQL_DSN')) {
        return harness_env('LARAVEL_MYSQL_DSN');
    }
    return sprintf(
        'pgsql:host=%s;port=%s;dbname=%s',
        harness_env('LARAVEL_PGSQL_HOST', '127.0.0.1'),
        harness_env('LARAVEL_PGSQL_PORT', '5432'),
        harness_env('LARAVEL_PGSQL_DATABASE'),
    );
}

/** `--name=value` options of argv. */
function harness_options(array $argv): array
{
    $options = [];
    foreach (array_slice($argv, 1) as $arg) {
        if (preg_match('/^--([a-z-]+)(?:=(.*))?$/', $arg, $m)) {
            $options[$m[1]] = $m[2] ?? '1';
        } else {
            fwrite(STDERR, "unknown argument $arg\n");
            exit(64);
        }
    }
    return $options;
}
