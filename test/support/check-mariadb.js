// Runs before the test suite: the integration tests need the local MariaDB and must not skip silently.
import mysql from 'mysql2/promise';

const url = process.env.TASKRECON_TEST_DB ?? 'mysql://root@127.0.0.1:3306/test';
try {
  const connection = await mysql.createConnection({ uri: url, connectTimeout: 3000 });
  await connection.query('SELECT 1');
  await connection.end();
} catch (error) {
  process.stderr.write(
    `The tests need MariaDB at ${url.replace(/:[^:@/]*@/, ':***@')} and cannot reach it: ${error.message}\n` +
      'Start it with:  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd\n' +
      '(as root, append: -- --user=mysql), or point TASKRECON_TEST_DB at a server where the user may create databases.\n',
  );
  process.exit(1);
}
