from sandgym_harness import workspace

algo = workspace.module("graphs.algo")
graph = workspace.module("graphs.graph")


def g(*edges):
    gr = graph.Graph()
    workspace.call_many(gr.add_edge, edges)
    return gr


def test_path_order():
    assert algo.shortest_path(g(("a", "b"), ("b", "c")), "a", "c") == ["a", "b", "c"]


def test_path_fewest_edges():
    gr = g(("a", "b"), ("b", "c"), ("c", "d"), ("a", "d"))
    assert algo.shortest_path(gr, "a", "d") == ["a", "d"]


def test_path_tie_sorted():
    gr = g(("s", "y"), ("s", "x"), ("x", "t"), ("y", "t"))
    assert algo.shortest_path(gr, "s", "t") == ["s", "x", "t"]


def test_path_start_is_goal():
    assert algo.shortest_path(g(("a", "b")), "a", "a") == ["a"]


def test_path_back_to_start_cycle():
    gr = g(("a", "b"), ("b", "a"), ("b", "c"))
    assert algo.shortest_path(gr, "a", "c") == ["a", "b", "c"]


def test_unreachable():
    assert algo.shortest_path(g(("a", "b"), ("c", "d")), "a", "d") is None


def test_diamond_no_cycle():
    assert algo.has_cycle(g(("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"))) is False


def test_cycle():
    assert algo.has_cycle(g(("a", "b"), ("b", "c"), ("c", "a"))) is True


def test_self_loop():
    assert algo.has_cycle(g(("a", "a"))) is True


def test_empty_graph():
    assert algo.has_cycle(graph.Graph()) is False
