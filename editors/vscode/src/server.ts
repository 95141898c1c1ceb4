/**
 * Finding the `rawko` binary, the arguments it is started with, and deciding what to do when
 * `rawko serve` stops. Pure, so the unit tests cover them: the file system, the environment and
 * the settings come in as arguments.
 */
import * as path from 'node:path';

/** What a user without the binary is told. */
export const INSTALL_HINT =
  'Install it with `cargo install --locked --path server` in a clone of the rawko repository ' +
  '(that puts `rawko` in ~/.cargo/bin), or set `rawko.server.path` to the binary.';

export type ServerCommand = { command: string } | { missing: string };

/**
 * The binary to start: `rawko.server.path` when set (`~` expanded, a relative path taken from the
 * workspace folder, a bare name looked up on PATH), else `rawko` on PATH, else
 * `~/.cargo/bin/rawko` (where `cargo install` puts it, often not on a GUI editor's PATH).
 */
export function resolveServerCommand(
  setting: string,
  workspaceDir: string | undefined,
  env: Record<string, string | undefined>,
  isExecutable: (file: string) => boolean,
): ServerCommand {
  const home = env.HOME ?? '';
  const wanted = setting.trim();
  if (wanted !== '') {
    let file = wanted.startsWith('~/') ? path.join(home, wanted.slice(2)) : wanted;
    if (!file.includes('/')) {
      const found = searchPath(file, env.PATH, isExecutable);
      return found ? { command: found } : { missing: `rawko.server.path is \`${wanted}\`, which is not on PATH. ${INSTALL_HINT}` };
    }
    if (!path.isAbsolute(file)) {
      file = path.resolve(workspaceDir ?? process.cwd(), file);
    }
    return isExecutable(file) ? { command: file } : { missing: `rawko.server.path is \`${wanted}\`, but ${file} is not an executable file. ${INSTALL_HINT}` };
  }
  const found = searchPath('rawko', env.PATH, isExecutable);
  if (found) {
    return { command: found };
  }
  const cargo = path.join(env.CARGO_HOME ?? path.join(home, '.cargo'), 'bin', 'rawko');
  if (home !== '' && isExecutable(cargo)) {
    return { command: cargo };
  }
  return { missing: `The rawko binary was not found on PATH. ${INSTALL_HINT}` };
}

/**
 * The arguments of `rawko serve`: with `rawko.web.listen` set (an address such as
 * `127.0.0.1:0`), the server also serves the web page of the tasks and their approvals there;
 * with `rawko.team.nats` set (a NATS URL, or a comma-separated list of them), it also shows the
 * team's tasks and asks their blocked calls here (docs/team.md). Empty: no such flag.
 */
export function serveArgs(webListen: string, teamNats = ''): string[] {
  const args = ['serve'];
  const listen = webListen.trim();
  if (listen !== '') {
    args.push('--web', listen);
  }
  const nats = teamNats.trim();
  if (nats !== '') {
    args.push('--nats', nats);
  }
  return args;
}

function searchPath(name: string, PATH: string | undefined, isExecutable: (file: string) => boolean): string | undefined {
  const dirs = (PATH ?? '').split(path.delimiter).filter((dir) => dir !== '');
  return dirs.map((dir) => path.join(dir, name)).find(isExecutable);
}

/**
 * A server that stops unexpectedly is restarted once; when the restarted one stops too, it is
 * left stopped until the user restarts it (Rawko: Restart Server), which starts the count anew.
 */
export class CrashPolicy {
  private crashes = 0;

  onCrash(): 'restart' | 'stop' {
    this.crashes += 1;
    return this.crashes <= 1 ? 'restart' : 'stop';
  }

  reset(): void {
    this.crashes = 0;
  }
}
