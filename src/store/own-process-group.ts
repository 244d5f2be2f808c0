/**
 * Starting a child in a process group of its own but in this process's session.
 *
 * Why a process group of its own: a Ctrl-C in the terminal is sent to the foreground process group;
 * it must reach herald (which finishes its requests, then stops the embedded server), not the server
 * first (which would cut those requests off).
 *
 * Why not a session of its own (`detached: true`, which calls setsid(2)): on Linux a new session is also
 * a new scheduler autogroup (sched(7), `/proc/sys/kernel/sched_autogroup_enabled`, on by default where
 * processes are not placed in cgroups, e.g. started from a shell). The kernel then shares the CPU between
 * the server's group and herald's as equals whatever their nice levels: a busy server took half the
 * machine, and the lower priority given to background work's backends (the pruner's at nice 19, bulk
 * imports' at 10: ./backend-priority.ts) only ranked them against the server's other backends, not
 * against delivery and the API. Measured (npm run bench -- retention, 2026-11-25): with the server in
 * its own autogroup delivery lost 31 % while pruning and the callback log's p99 was 45 ms; with one
 * scheduler group for all, 8.3 % and 14.7 ms.
 *
 * Node cannot call setpgid(2) on its own; perl, present on nearly every Linux system (Essential on
 * Debian), does it and then executes the command in its place (same pid). Without perl the child gets a
 * session of its own as before, and the log says what that costs.
 */
import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** setpgid(0, 0), then exec argv: the command replaces perl, so the child's pid is the command's. */
const SET_PROCESS_GROUP_THEN_EXEC = 'setpgrp(0, 0) or die "setpgrp: $!\\n"; exec { $ARGV[0] } @ARGV or die "cannot run $ARGV[0]: $!\\n"';

/** The perl interpreter on PATH (or in /usr/bin), undefined when there is none. */
export function findPerl(searchPath: string | undefined = process.env.PATH): string | undefined {
  for (const dir of [...(searchPath ?? '').split(delimiter).filter(Boolean), '/usr/bin']) {
    const candidate = join(dir, 'perl');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

export interface OwnProcessGroupChild {
  child: ChildProcess;
  /** True: own process group, this session (and scheduler autogroup). False: own session (no perl). */
  sameSession: boolean;
}

/**
 * Spawns `command` in a new process group of this session (see above); `options.detached` is decided
 * here. Falls back to a new session when there is no perl (`perl` false).
 */
export function spawnInOwnProcessGroup(
  command: string,
  args: string[],
  options: Omit<SpawnOptions, 'detached'>,
  perl: string | false = findPerl() ?? false,
): OwnProcessGroupChild {
  if (!perl) return { child: spawn(command, args, { ...options, detached: true }), sameSession: false };
  return { child: spawn(perl, ['-e', SET_PROCESS_GROUP_THEN_EXEC, '--', command, ...args], { ...options, detached: false }), sameSession: true };
}
