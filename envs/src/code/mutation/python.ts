// Python mutants from Cosmic Ray (cosmic-ray on PyPI), through python_mutants.py in a child
// process: the interpreter is $SANDGYM_MUTATION_PYTHON, the caller's choice, or python3.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { MutationToolError, type RawMutant } from './mutants.js';

const SCRIPT = fileURLToPath(new URL('./python_mutants.py', import.meta.url));
const MAX_OUTPUT = 256 * 1024 * 1024;

export function mutationPython(explicit?: string): string {
  return explicit ?? process.env.SANDGYM_MUTATION_PYTHON ?? 'python3';
}

export async function pythonMutants(files: { path: string; source: string }[], python?: string): Promise<{ version: string; mutants: RawMutant[] }> {
  const exe = mutationPython(python);
  const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(exe, [SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let size = 0;
    child.stdout.on('data', (b: Buffer) => {
      size += b.length;
      if (size > MAX_OUTPUT) child.kill('SIGKILL');
      else out.push(b);
    });
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', (e) =>
      reject(
        new MutationToolError(
          `cannot run ${exe} for Python mutants (${e.message}); set SANDGYM_MUTATION_PYTHON or --mutation-python to an interpreter with cosmic-ray installed`,
          'cosmic-ray',
        ),
      ),
    );
    child.on('close', (c) => resolve({ code: c, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }));
    child.stdin.on('error', () => {});
    child.stdin.end(JSON.stringify({ files }));
  });
  let doc: { error?: string; cosmic_ray?: string; mutants?: RawMutant[] } = {};
  try {
    doc = JSON.parse(stdout) as typeof doc;
  } catch {
    // Reported below with stderr.
  }
  if (doc.error)
    throw new MutationToolError(
      `${doc.error} (interpreter ${exe}: pip install 'cosmic-ray==8.7.0', or point SANDGYM_MUTATION_PYTHON / --mutation-python at one that has it)`,
      'cosmic-ray',
    );
  if (code !== 0 || !Array.isArray(doc.mutants))
    throw new MutationToolError(
      `Python mutant generation failed (${exe}, exit ${code}): ${stderr.trim().split('\n').slice(-3).join(' | ') || 'no output'}`,
      'cosmic-ray',
    );
  return { version: doc.cosmic_ray ?? 'unknown', mutants: doc.mutants };
}
