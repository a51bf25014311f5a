// .ci/with-load, the load mode of .ci/run: SANDGYM_CI_LOAD=N starts N CPU-bound burners beside the command,
// passes its exit status through, and leaves no burner behind; unset, it runs the command alone.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SCRIPT = fileURLToPath(new URL('../../.ci/with-load', import.meta.url));

function run(load: string | undefined, command: string): Promise<{ code: number; stdout: string; stderr: string }> {
  // The suite itself may run under load mode (SANDGYM_CI_LOAD=2 bash .ci/run): start from a clean slate.
  const env = { ...process.env };
  delete env.SANDGYM_CI_LOAD;
  delete env.SANDGYM_CI_BURNERS;
  if (load !== undefined) env.SANDGYM_CI_LOAD = load;
  return new Promise((resolve) => {
    execFile('bash', [SCRIPT, 'sh', '-c', command], { env }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** Whether a pid is a live (not zombie) process. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  return true;
}

describe('.ci/with-load', () => {
  it('runs N burners beside the command, keeps its exit status and kills (and reaps) only them on exit', async () => {
    // Inside the command each burner is a live process of its own.
    const r = await run('2', 'for p in $SANDGYM_CI_BURNERS; do kill -0 "$p" && echo "live $p"; done; exit 3');
    expect(r.code).toBe(3);
    const pids = r.stdout
      .trim()
      .split('\n')
      .map((l) => Number(l.replace('live ', '')));
    expect(pids).toHaveLength(2);
    expect(r.stderr).toContain('load mode: 2 CPU burners');
    // The script waited for them after killing them: gone by the time it exited.
    for (const pid of pids) expect(alive(pid), `burner ${pid}`).toBe(false);
  });

  it('is off by default: the command alone, no burners', async () => {
    const r = await run(undefined, 'echo "burners=${SANDGYM_CI_BURNERS:-none}"');
    expect(r).toMatchObject({ code: 0, stdout: 'burners=none\n', stderr: '' });
    expect((await run('0', 'exit 5')).code).toBe(5);
  });

  it('refuses a load that is not a number', async () => {
    const r = await run('two', 'true');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("SANDGYM_CI_LOAD must be a number of burner processes, got 'two'");
  });
});
