import { Command } from '@oclif/core';

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
 * The version, as `--version` and `-v` print it (oclif's user agent line), or as JSON. It needs no
 * database and reads no config, so it runs anywhere the command is installed.
 */
export default class Version extends Command {
  static override enableJsonFlag = true;
  static override summary =
    'Print the version of taskrecon, of Node.js and the platform (what --version and -v print).';
  static override examples = ['<%= config.bin %> version', '<%= config.bin %> version --json'];

  async run(): Promise<VersionResult> {
    await this.parse(Version);
    const { name, version, userAgent, platform, arch } = this.config;
    this.log(userAgent);
    return { name, version, userAgent, node: process.versions.node, platform, arch };
  }
}
