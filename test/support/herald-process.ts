/**
 * herald as a child process (`node bin/herald.js serve ...`), for tests that kill and restart it. The
 * child's stdout and stderr are kept; every child still running is SIGKILLed by killAllHeralds().
 */
import { type ChildProcess, spawn } from 'node:child_process';

export interface HeraldProcess {
  child: ChildProcess;
  /** Exit code, or the signal that ended it. */
  exited: Promise<number | string | null>;
  /** Everything the child wrote (stdout and stderr, interleaved). */
  output(): string;
}

const running = new Set<ChildProcess>();

/** Starts `herald serve` with `args` and `env` over a copy of this process's environment. */
export function spawnHerald(args: string[], env: Record<string, string | undefined>): HeraldProcess {
  const child = spawn(process.execPath, ['bin/herald.js', 'serve', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  let out = '';
  const keep = (chunk: Buffer) => {
    out += chunk;
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<number | string | null>((done) =>
    child.once('exit', (code, signal) => {
      running.delete(child);
      done(code ?? signal);
    }),
  );
  return { child, exited, output: () => out };
}

export function killAllHeralds(): void {
  for (const child of running) child.kill('SIGKILL');
}
