// Drives a real terminal program through tmux: a private tmux server (-L, its own socket and empty
// config), keys sent with send-keys, the screen read with capture-pane. What the assertions see is
// what a person at the terminal would see.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function tmuxUnavailable(): string | null {
  const r = spawnSync('tmux', ['-V'], { encoding: 'utf8' });
  return r.status === 0 ? null : 'tmux is not installed (apt-get install tmux)';
}

export class Tmux {
  private readonly socket = `sandgym-test-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  private readonly dir = mkdtempSync(join(tmpdir(), 'sandgym-tmux-'));
  private readonly target = 'play';

  private tmux(...args: string[]): string {
    return execFileSync('tmux', ['-L', this.socket, '-f', join(this.dir, 'tmux.conf'), ...args], { encoding: 'utf8' });
  }

  /** Starts `argv` in a detached session of the given size, with `env` added to its environment. */
  start(argv: string[], env: Record<string, string | null>, size = { cols: 140, rows: 50 }): void {
    // Keep the pane after the program exits (to read its last screen and exit status) and a long scrollback.
    writeFileSync(join(this.dir, 'tmux.conf'), 'set -g remain-on-exit on\nset -g history-limit 50000\nset -g status off\n');
    const quoted = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    // null unsets a variable (e.g. NO_COLOR inherited from the test runner).
    const entries = Object.entries(env);
    const envPrefix = [
      ...entries.filter(([, v]) => v === null).map(([k]) => `-u ${k}`),
      ...entries.filter(([, v]) => v !== null).map(([k, v]) => `${k}=${quoted(v as string)}`),
    ];
    // The shell prints the exit status on screen: that is what a person sees, and it is more dependable
    // than tmux's pane_dead_status, which is sometimes empty for a program that exited normally.
    const program = ['env', ...envPrefix, ...argv.map(quoted)].join(' ');
    this.tmux('new-session', '-d', '-s', this.target, '-x', String(size.cols), '-y', String(size.rows), `${program}; printf '\\n[exited %d]\\n' $?`);
  }

  /** Types text literally (no key-name interpretation), without pressing Enter. */
  type(text: string): void {
    this.tmux('send-keys', '-t', this.target, '-l', text);
  }

  /** Presses named keys: Enter, Up, C-d, C-c ... */
  press(...keys: string[]): void {
    this.tmux('send-keys', '-t', this.target, ...keys);
  }

  line(text: string): void {
    this.type(text);
    this.press('Enter');
  }

  /** The whole scrollback plus screen, wrapped lines joined; `escapes` keeps colour codes. */
  capture(escapes = false): string {
    return this.tmux('capture-pane', '-p', '-J', '-S', '-', '-t', this.target, ...(escapes ? ['-e'] : []));
  }

  /** Polls the screen until `pattern` appears `count` times; returns the capture. */
  async waitFor(pattern: string | RegExp, { timeoutMs = 30_000, count = 1 } = {}): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    const re =
      typeof pattern === 'string'
        ? new RegExp(pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'g')
        : new RegExp(pattern.source, pattern.flags.includes('g') ? pattern.flags : `${pattern.flags}g`);
    let screen = '';
    while (Date.now() < deadline) {
      screen = this.capture();
      if ((screen.match(re) ?? []).length >= count) return screen;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`timed out after ${timeoutMs} ms waiting for ${String(pattern)} (x${count}); screen:\n${screen}`);
  }

  /** Waits for the program to exit and returns its exit status (as the shell reports it). */
  async waitExit(timeoutMs = 15_000): Promise<number> {
    const screen = await this.waitFor(/^\[exited \d+\]$/m, { timeoutMs });
    return Number(/^\[exited (\d+)\]$/m.exec(screen)?.[1]);
  }

  kill(): void {
    try {
      this.tmux('kill-server');
    } catch {
      /* already gone */
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
