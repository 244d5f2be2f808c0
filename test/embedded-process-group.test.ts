/**
 * Where the embedded PostgreSQL runs among the machine's processes: in a process group of its own (a
 * Ctrl-C in herald's terminal reaches herald, not the server) but in herald's session, and so in herald's
 * scheduler autogroup, where the lowered nice levels of its background backends rank them against the
 * service too (src/store/own-process-group.ts). Without perl: a session of its own, as before, and said.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openEmbeddedDatabase } from '../src/store/embedded.ts';
import { findPerl, spawnInOwnProcessGroup } from '../src/store/own-process-group.ts';

const onLinux = process.platform === 'linux';
const toRemove: string[] = [];
afterAll(() => {
  for (const path of toRemove) rmSync(path, { recursive: true, force: true });
});

/** Process group and session of `pid` (fields 5 and 6 of /proc/PID/stat, after the command's name). */
function groupAndSession(pid: number | 'self'): { pgrp: number; session: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const [, , pgrp, session] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { pgrp: Number(pgrp), session: Number(session) };
}

const autogroupOf = (pid: number | 'self') => readFileSync(`/proc/${pid}/autogroup`, 'utf8').split(' ')[0];

async function waitForCommand(pid: number, name: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === name) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`process ${pid} never became ${name}`);
}

describe.runIf(onLinux)('the embedded server among the processes', () => {
  it("runs in a process group of its own within herald's session and scheduler autogroup", async () => {
    expect(findPerl(), 'perl (Essential on Debian) is on this machine').toBeTruthy();
    const dataDir = mkdtempSync(join(tmpdir(), 'herald-embedded-group-'));
    toRemove.push(dataDir);
    const db = await openEmbeddedDatabase(dataDir);
    try {
      expect(db.owned).toBe(true);
      expect(db.ownSession).toBe(false);
      const serverPid = Number(readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
      const server = groupAndSession(serverPid);
      const us = groupAndSession('self');
      expect(server.pgrp).toBe(serverPid);
      expect(server.pgrp).not.toBe(us.pgrp);
      expect(server.session).toBe(us.session);
      expect(autogroupOf(serverPid)).toBe(autogroupOf('self'));
    } finally {
      await db.stop();
    }
  });

  it('runs a command in place of perl (same pid), and without perl in a session of its own', async () => {
    const us = groupAndSession('self');
    const withPerl = spawnInOwnProcessGroup('sleep', ['30'], { stdio: 'ignore' });
    const without = spawnInOwnProcessGroup('sleep', ['30'], { stdio: 'ignore' }, false);
    try {
      expect([withPerl.sameSession, without.sameSession]).toEqual([true, false]);
      const pid = withPerl.child.pid as number;
      await waitForCommand(pid, 'sleep');
      expect(groupAndSession(pid)).toEqual({ pgrp: pid, session: us.session });
      const alone = without.child.pid as number;
      expect(groupAndSession(alone)).toEqual({ pgrp: alone, session: alone });
    } finally {
      withPerl.child.kill('SIGKILL');
      without.child.kill('SIGKILL');
    }
  });
});
