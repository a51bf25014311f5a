// The Python side of the degenerate-solution battery (degenerate.ts): a stdlib-only script run by the
// host's python3 (`-I -S`, the program as `-c` text, the request on stdin) that parses each Python file
// the reference changed with `ast` and writes one rewritten copy per shape, every public function and
// method body replaced. ast.unparse writes the result, so what comes back is valid Python by
// construction (comments and formatting are not kept: nothing of them is graded).
export const PYTHON_REWRITER = String.raw`
import ast, builtins, json, sys

req = json.loads(sys.stdin.read())
files = req["files"]            # [{path, source}] the reference's changed .py files
context = req["context"]        # [{path, source}] every .py file of the reference workspace
candidates = req["exceptions"]  # exception class names the instruction and the hidden tests mention
returns = req["returns"]        # constant expressions to return

# Class-creation hooks keep their bodies. Constructors do not: a reference's __init__ may hold real work
# (the validation a bug fix added); under a return shape they do nothing (return None) so objects exist.
KEEP = {"__new__", "__init_subclass__", "__set_name__", "__class_getitem__"}
INIT = {"__init__", "__post_init__"}

def modname(path):
    p = path[:-3]
    if p.endswith("/__init__"):
        p = p[: -len("/__init__")]
    return p.replace("/", ".")

# Where each class is defined at module level (so a module can import a task exception it lacks).
defined_in = {}
for f in context:
    try:
        tree = ast.parse(f["source"])
    except SyntaxError:
        continue
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            defined_in.setdefault(node.name, modname(f["path"]))

def top_names(tree):
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                names.add((a.asname or a.name).split(".")[0])
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    names.add(t.id)
    return names

def is_public(name):
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__") and name not in KEEP)

def first_param(fn, method):
    a = fn.args
    pos = list(a.posonlyargs) + list(a.args)
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
    if method and not static:
        pos = pos[1:]
    return pos[0].arg if pos else None

def body_for(shape, fn, method):
    k = shape["kind"]
    if k == "raise":
        return ast.parse("raise %s('degenerate')" % shape["name"]).body
    if method and fn.name in INIT:
        return ast.parse("return None").body
    if k == "return":
        return ast.parse("return " + shape["expr"]).body
    p = first_param(fn, method)
    return ast.parse("return " + (p if p else "None")).body

def rewrite(tree, shape):
    count = 0
    def visit(body, method):
        nonlocal count
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and is_public(node.name):
                node.body = body_for(shape, node, method)
                count += 1
            elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                visit(node.body, True)
    visit(tree.body, False)
    return count

def is_exception(name):
    v = getattr(builtins, name, None)
    return isinstance(v, type) and issubclass(v, BaseException)

# Builtin exceptions (never the control-flow ones a harness treats apart) and the task's own classes.
CONTROL = {"BaseException", "SystemExit", "KeyboardInterrupt", "GeneratorExit", "StopIteration", "StopAsyncIteration"}
raised = sorted({n for n in candidates if n not in CONTROL and (is_exception(n) or n in defined_in)} | {"Exception"})
shapes = [{"id": "raise:" + n, "kind": "raise", "name": n, "label": "raise %s in every function" % n} for n in raised]
shapes += [{"id": "return:" + e, "kind": "return", "expr": e, "label": "return %s from every function" % e} for e in returns]
shapes.append({"id": "first-arg", "kind": "first_arg", "label": "return its first argument from every function"})

out = {"variants": [], "errors": []}
for shape in shapes:
    rewritten = []
    for f in files:
        try:
            tree = ast.parse(f["source"])
        except SyntaxError as e:
            out["errors"].append("%s does not parse: %s" % (f["path"], e))
            continue
        if shape["kind"] == "raise":
            name = shape["name"]
            if not hasattr(builtins, name) and name not in top_names(tree):
                src = defined_in.get(name)
                if src is None:
                    continue
                imp = ast.parse("from %s import %s" % (src, name)).body[0]
                # After any __future__ import and the module docstring, which must come first.
                at = 0
                while at < len(tree.body) and (
                    (isinstance(tree.body[at], ast.ImportFrom) and tree.body[at].module == "__future__")
                    or (at == 0 and isinstance(tree.body[0], ast.Expr) and isinstance(tree.body[0].value, ast.Constant) and isinstance(tree.body[0].value.value, str))
                ):
                    at += 1
                tree.body.insert(at, imp)
        n = rewrite(tree, shape)
        if n == 0:
            continue
        src = ast.unparse(ast.fix_missing_locations(tree)) + "\n"
        compile(src, f["path"], "exec")
        rewritten.append({"path": f["path"], "source": src, "functions": n})
    out["variants"].append({"id": shape["id"], "label": shape["label"], "files": rewritten})
sys.stdout.write(json.dumps(out))
`;
