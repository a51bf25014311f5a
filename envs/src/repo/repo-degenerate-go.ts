// The Go side of the repository degenerate battery (docs/TASKS.md, "The degenerate-solution battery"): a stdlib-only
// Go program, run with the host's \`go\` (\`go run\`, the request on stdin), that rewrites every function and method
// body of each changed .go file (init excepted) by byte offsets from go/ast: a panic, or a return of zero values
// (\`var sandgymZeroN T\` per result; named results: a bare return). Imports the rewritten file no longer uses are
// removed (Go refuses unused imports) and go/format prints it, so what comes back parses; whether it COMPILES is then
// checked with \`go build ./...\` on the reference tree with the variant in place (goBodyVariants): a variant that
// does not compile is graded all the same (the judge gives it 0) and says so in its name.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DegenerateGenerationError, type DegenerateVariant, type WorkspaceFileLike } from '../code/degenerate.js';

const BT = '`';
export const GO_REWRITER = String.raw`// The Go side of the repository degenerate battery: every function and method body (init excepted) of each changed
// .go file replaced, by byte offsets from go/ast, with a panic or a return of zero values; imports the rest of the file
// no longer uses are removed (Go refuses unused imports), and the result is gofmt'd (go/format parses it again).
package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"sort"
	"strconv"
	"strings"
)

type inFile struct {
	Path   string ${BT}json:"path"${BT}
	Source string ${BT}json:"source"${BT}
}

type outFile struct {
	Path      string ${BT}json:"path"${BT}
	Source    string ${BT}json:"source"${BT}
	Functions int    ${BT}json:"functions"${BT}
}

type variant struct {
	ID    string    ${BT}json:"id"${BT}
	Label string    ${BT}json:"label"${BT}
	Files []outFile ${BT}json:"files"${BT}
}

type edit struct {
	from, to int
	text     string
}

func apply(src string, edits []edit) string {
	sort.Slice(edits, func(i, j int) bool { return edits[i].from > edits[j].from })
	for _, e := range edits {
		src = src[:e.from] + e.text + src[e.to:]
	}
	return src
}

func body(shape string, fn *ast.FuncDecl, src string, fset *token.FileSet) string {
	if shape == "panic" {
		return "\n\tpanic(\"sandgym: degenerate\")\n"
	}
	res := fn.Type.Results
	if res == nil || len(res.List) == 0 {
		return "\n\treturn\n"
	}
	if len(res.List[0].Names) > 0 {
		// Named results start at their zero values.
		return "\n\treturn\n"
	}
	var decl, names []string
	for i, f := range res.List {
		t := src[fset.Position(f.Type.Pos()).Offset:fset.Position(f.Type.End()).Offset]
		n := "sandgymZero" + strconv.Itoa(i)
		decl = append(decl, fmt.Sprintf("\tvar %s %s\n", n, t))
		names = append(names, n)
	}
	return "\n" + strings.Join(decl, "") + "\treturn " + strings.Join(names, ", ") + "\n"
}

func importName(s *ast.ImportSpec) string {
	if s.Name != nil {
		return s.Name.Name
	}
	p, _ := strconv.Unquote(s.Path.Value)
	parts := strings.Split(p, "/")
	last := parts[len(parts)-1]
	if len(parts) > 1 && len(last) > 1 && last[0] == 'v' && strings.Trim(last[1:], "0123456789") == "" {
		last = parts[len(parts)-2]
	}
	return strings.TrimPrefix(strings.ReplaceAll(last, "-", "_"), "go_")
}

// Removes the imports nothing in the file refers to any more.
func pruneImports(path, src string) (string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		return "", err
	}
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok {
				used[id.Name] = true
			}
		}
		return true
	})
	var edits []edit
	off := func(p token.Pos) int { return fset.Position(p).Offset }
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.IMPORT {
			continue
		}
		var drop []*ast.ImportSpec
		for _, s := range g.Specs {
			is := s.(*ast.ImportSpec)
			n := importName(is)
			if n == "_" || n == "." || used[n] {
				continue
			}
			drop = append(drop, is)
		}
		if len(drop) == 0 {
			continue
		}
		if !g.Lparen.IsValid() {
			edits = append(edits, edit{off(g.Pos()), off(g.End()), ""})
			continue
		}
		for _, is := range drop {
			from := off(is.Pos())
			if is.Doc != nil {
				from = off(is.Doc.Pos())
			}
			to := off(is.End())
			if is.Comment != nil {
				to = off(is.Comment.End())
			}
			edits = append(edits, edit{from, to, ""})
		}
	}
	return apply(src, edits), nil
}

func main() {
	var req struct {
		Files []inFile ${BT}json:"files"${BT}
	}
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	out := struct {
		Variants []variant ${BT}json:"variants"${BT}
		Errors   []string  ${BT}json:"errors"${BT}
	}{Variants: []variant{}, Errors: []string{}}
	shapes := []struct{ id, label string }{
		{"go:panic", "panic in every function"},
		{"go:zero", "return zero values from every function"},
	}
	for _, sh := range shapes {
		v := variant{ID: sh.id, Label: sh.label, Files: []outFile{}}
		for _, f := range req.Files {
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, f.Path, f.Source, parser.ParseComments)
			if err != nil {
				out.Errors = append(out.Errors, fmt.Sprintf("%s does not parse: %v", f.Path, err))
				continue
			}
			var edits []edit
			for _, d := range file.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Body == nil || (fn.Recv == nil && fn.Name.Name == "init") {
					continue
				}
				shape := strings.TrimPrefix(sh.id, "go:")
				edits = append(edits, edit{fset.Position(fn.Body.Lbrace).Offset + 1, fset.Position(fn.Body.Rbrace).Offset, body(shape, fn, f.Source, fset)})
			}
			if len(edits) == 0 {
				continue
			}
			src, err := pruneImports(f.Path, apply(f.Source, edits))
			if err == nil {
				var b []byte
				b, err = format.Source([]byte(src))
				src = string(b)
			}
			if err != nil {
				out.Errors = append(out.Errors, fmt.Sprintf("%s (%s): the rewrite does not parse: %v", f.Path, sh.label, err))
				continue
			}
			v.Files = append(v.Files, outFile{f.Path, src, len(edits)})
		}
		out.Variants = append(out.Variants, v)
	}
	json.NewEncoder(os.Stdout).Encode(out)
}
`;

function run(exe: string, args: string[], stdin: string, cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    // Offline and with the host's toolchain only: the rewriter and the compile check need nothing from a network.
    const env = { ...process.env, GOTOOLCHAIN: 'local', GOPROXY: 'off', GOFLAGS: '-mod=mod', GOWORK: 'off', CGO_ENABLED: '0' };
    const child = spawn(exe, args, { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', (e) =>
      reject(
        new DegenerateGenerationError(
          `cannot run ${exe} (${e.message}): the degenerate battery needs a go on PATH to rewrite Go repository tasks (or --no-degenerate)`,
        ),
      ),
    );
    child.on('close', (c) => resolve({ code: c, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }));
    child.stdin.on('error', () => {});
    child.stdin.end(stdin);
  });
}

async function writeTree(dir: string, files: readonly { path: string; content: Uint8Array }[]): Promise<void> {
  for (const f of files) {
    const p = path.join(dir, f.path);
    await mkdir(path.dirname(p), { recursive: true });
    await writeFile(p, f.content);
  }
}

const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');

/**
 * The Go function-body shapes over the changed non-test .go files, each checked to compile (\`go build ./...\` on the
 * reference tree with the variant's files in place).
 */
export async function goBodyVariants(
  taskId: string,
  refFiles: readonly WorkspaceFileLike[],
  changed: readonly WorkspaceFileLike[],
  go = 'go',
): Promise<DegenerateVariant[]> {
  const files = changed.filter((f) => f.path.endsWith('.go') && !f.path.endsWith('_test.go')).map((f) => ({ path: f.path, source: text(f.content) }));
  if (files.length === 0) return [];
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'sandgym-degenerate-go-'));
  try {
    await writeFile(path.join(tmp, 'main.go'), GO_REWRITER);
    const { code, stdout, stderr } = await run(go, ['run', 'main.go'], JSON.stringify({ files }), tmp);
    let doc: { variants?: { id: string; label: string; files: { path: string; source: string }[] }[]; errors?: string[] } = {};
    try {
      doc = JSON.parse(stdout) as typeof doc;
    } catch {
      // Reported below.
    }
    if (code !== 0 || !doc.variants)
      throw new DegenerateGenerationError(
        `task ${taskId}: the Go rewriter (${go}) failed (exit ${code}): ${stderr.trim().split('\n').slice(-3).join(' | ') || 'no output'}`,
      );
    if (doc.errors?.length) throw new DegenerateGenerationError(`task ${taskId}: ${doc.errors.join('; ')}`);
    const out: DegenerateVariant[] = [];
    for (const [i, v] of doc.variants.entries()) {
      if (v.files.length === 0) continue;
      const by = new Map(v.files.map((f) => [f.path, new Uint8Array(Buffer.from(f.source, 'utf8'))]));
      const dir = path.join(tmp, `build-${i}`);
      await writeTree(
        dir,
        refFiles.map((f) => ({ path: f.path, content: by.get(f.path) ?? f.content })),
      );
      const b = await run(go, ['build', './...'], '', dir);
      out.push({
        id: v.id,
        name: b.code === 0 ? v.label : `${v.label} (does not compile: ${b.stderr.trim().split('\n').slice(0, 2).join(' | ')})`,
        replace: [...by].map(([p, content]) => ({ path: p, content })),
      });
    }
    return out;
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
