import { BaseCommand } from '../base-command.js';

export interface VersionResult {
  name: string;
  version: string;
  /** The line `--version` and `-v` print: name/version platform-arch node-version. */
  userAgent: string;
  node: string;
  platform: string;
  arch: string;
}

/**
 * The version, as `--version` and `-v` print it (oclif's user agent line), or as JSON. It takes no
 * connection flags and reads no config, so it runs anywhere the command is installed; its errors
 * are shaped and exit as every command's.
 */
export default class Version extends BaseCommand<typeof Version> {
  // No connection flags: the version needs no database (typed as the base's, which it narrows to none).
  static override baseFlags = {} as typeof BaseCommand.baseFlags;
  static override summary =
    'Print the version of taskrecon, of Node.js and the platform (what --version and -v print).';
  static override examples = ['<%= config.bin %> version', '<%= config.bin %> version --json'];

  async run(): Promise<VersionResult> {
    const { name, version, userAgent, platform, arch } = this.config;
    if (!this.jsonEnabled()) this.log(userAgent);
    return { name, version, userAgent, node: process.versions.node, platform, arch };
  }
}
