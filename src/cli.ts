#!/usr/bin/env node
/**
 * tarsier serve | migrate. The process environment is read here and handed to loadConfig; no other
 * module reads process.env.
 */
import { Command } from 'commander';
import { ConfigError, loadConfig, type Config } from './config.js';
import { createLogger } from './logger.js';
import { openDatabase, startServer, stopOnSignals } from './server.js';

function configFrom(options: { config?: string }): Config {
  try {
    return loadConfig({ file: options.config, env: process.env });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`tarsier: invalid configuration: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

const program = new Command()
  .name('tarsier')
  .description('Container-image vulnerability scanner with Clair-compatible APIs')
  .showHelpAfterError();

program
  .command('serve', { isDefault: true })
  .description('run the API server (default command)')
  .option('-c, --config <file>', 'YAML configuration file (Clair v2/v3 config.yaml accepted); also TARSIER_CONFIG')
  .action(async (options: { config?: string }) => {
    const config = configFrom(options);
    const log = createLogger(config.log.level);
    try {
      const server = await startServer(config, log);
      stopOnSignals(server, log);
    } catch (err) {
      log.fatal({ err }, 'start-up failed');
      process.exitCode = 1;
    }
  });

program
  .command('migrate')
  .description('apply pending database migrations and exit')
  .option('-c, --config <file>', 'YAML configuration file; also TARSIER_CONFIG')
  .action(async (options: { config?: string }) => {
    const config = configFrom(options);
    const log = createLogger(config.log.level);
    try {
      const database = await openDatabase(config, log);
      await database.close();
    } catch (err) {
      log.fatal({ err }, 'migration failed');
      process.exitCode = 1;
    }
  });

await program.parseAsync(process.argv);
