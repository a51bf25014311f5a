"""Generates the mutants of Python sources with Cosmic Ray's operators (cosmic-ray on PyPI).

Called by envs/src/code/mutation/python.ts: reads {"files": [{"path", "source"}]} as JSON on stdin and
writes {"cosmic_ray": version, "mutants": [{"path", "operator", "occurrence", "source"}]} on stdout.
Only mutant generation comes from Cosmic Ray: the mutants are then graded by sandgym's own judge path
(a fresh grading sandbox, the task's hidden tests through the harness), never by Cosmic Ray's runner.

Operator set (see docs/TASKS.md, "Mutation gate"): Cosmic Ray's core operators minus the ones that
only produce noise here, and with the binary and comparison replacements cut to the classic
sufficient sets (mutmut's arithmetic map; relational replacement by boundary shift and negation)
instead of Cosmic Ray's full cross product, which is 5-10x the mutants for little extra signal.
"""
import json
import sys

try:
    import cosmic_ray
    from cosmic_ray.mutating import mutate_code
    from cosmic_ray.operators.operator import Example, Operator
    from cosmic_ray.plugins import get_operator, operator_names
    from parso.python.tree import Keyword
except ImportError as err:  # pragma: no cover - reported to the caller as a typed error
    sys.stdout.write(json.dumps({"error": "cosmic-ray is not installed: " + str(err)}))
    sys.exit(3)

ARITHMETIC = {
    "Add": ["Sub"], "Sub": ["Add"], "Mul": ["Div"], "Div": ["Mul"], "FloorDiv": ["Div"],
    "Mod": ["Div"], "Pow": ["Mul"], "LShift": ["RShift"], "RShift": ["LShift"],
    "BitAnd": ["BitOr"], "BitOr": ["BitAnd"], "BitXor": ["BitAnd"],
}
# Boundary shift and negation of each relational operator (is/is not only swap with each other:
# `x == 1` -> `x is 1` is equivalent for small ints in CPython and would only add noise).
RELATIONAL = {
    "Lt": ["LtE", "GtE"], "LtE": ["Lt", "Gt"], "Gt": ["GtE", "LtE"], "GtE": ["Gt", "Lt"],
    "Eq": ["NotEq"], "NotEq": ["Eq"], "Is": ["IsNot"], "IsNot": ["Is"],
}
PLAIN = [
    "core/NumberReplacer", "core/ReplaceTrueWithFalse", "core/ReplaceFalseWithTrue",
    "core/ReplaceAndWithOr", "core/ReplaceOrWithAnd", "core/AddNot",
    "core/ReplaceBreakWithContinue", "core/ReplaceContinueWithBreak", "core/ZeroIterationForLoop",
    "core/ExceptionReplacer", "core/RemoveDecorator",
    "core/ReplaceUnaryOperator_Delete_Not", "core/ReplaceUnaryOperator_Delete_USub",
    "core/ReplaceUnaryOperator_USub_UAdd",
]


class DeleteStatement(Operator):
    """sandgym's one operator on Cosmic Ray's plugin API (it has none that deletes a statement): an
    assignment, a bare call, a `return` or a `raise` becomes `pass` (so `return x` returns None)."""

    KINDS = ("expr_stmt", "return_stmt", "raise_stmt", "atom_expr", "power")

    def mutation_positions(self, node):
        if node.type in self.KINDS and node.parent is not None and node.parent.type == "simple_stmt":
            yield (node.start_pos, node.end_pos)

    def mutate(self, node, index):
        return Keyword("pass", node.start_pos, prefix=node.get_first_leaf().prefix)

    @classmethod
    def examples(cls):
        return (Example("x = 1", "pass"), Example("return x", "pass"), Example("f(x)", "pass"))


EXTRA = {"sandgym/DeleteStatement": DeleteStatement}


def selected_operators():
    names = set(operator_names())
    ops = [n for n in PLAIN if n in names]
    for a, bs in ARITHMETIC.items():
        ops += [f"core/ReplaceBinaryOperator_{a}_{b}" for b in bs if f"core/ReplaceBinaryOperator_{a}_{b}" in names]
    for a, bs in RELATIONAL.items():
        ops += [f"core/ReplaceComparisonOperator_{a}_{b}" for b in bs if f"core/ReplaceComparisonOperator_{a}_{b}" in names]
    return ops + list(EXTRA)


def main():
    req = json.load(sys.stdin)
    out = []
    ops = selected_operators()
    for f in req["files"]:
        source = f["source"]
        seen = set()
        for name in ops:
            op = EXTRA[name]() if name in EXTRA else get_operator(name)()
            occurrence = 0
            while True:
                mutated = mutate_code(source, op, occurrence)
                if mutated is None:
                    break
                # Two operators can yield the same program (e.g. a constant's +1 and a True->False on 1):
                # one mutant per distinct program.
                if mutated != source and mutated not in seen:
                    seen.add(mutated)
                    out.append({"path": f["path"], "operator": name, "occurrence": occurrence, "source": mutated})
                occurrence += 1
    version = getattr(cosmic_ray, "__version__", None)
    if version is None:
        from importlib.metadata import version as dist_version
        version = dist_version("cosmic-ray")
    json.dump({"cosmic_ray": version, "operators": ops, "mutants": out}, sys.stdout)


if __name__ == "__main__":
    main()
